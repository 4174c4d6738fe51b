"""Shared figure styles: IQM curves and sweeps over seeds with 95% CIs, claim intervals and trends."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import matplotlib.pyplot as plt
import numpy as np

from memrl.stats.claims import ClaimResult, share

VERDICT_COLORS = {
    "reproduced": "tab:green",
    "partially": "tab:olive",
    "mixed": "tab:orange",
    "inconclusive": "tab:purple",
    "partially contradicted": "tab:pink",
    "not reproduced": "tab:red",
}
OUTCOME_COLORS = {"holds": "tab:green", "fails": "tab:red", "undecided": "tab:gray"}


# a verdict's reason can run to ~400 characters: as one title line, wider than its figure, it
# left constrained layout no room for the axes (they collapsed, with a warning); the claim
# panels wrap their titles, each line taking this many inches of the figure's height
TITLE_LINE = 0.15


def verdict_color(category: str) -> str:
    return VERDICT_COLORS[category]


def forest(results: Sequence[ClaimResult | dict], ncols: int = 1):
    """The verdicts at a glance: one panel per claim, one row per comparison — its
    difference (> 0 the paper's way) with the 95% CI, coloured by outcome (green holds, red
    fails, grey undecided), the zero line, the −δ line of a *matches* comparison, and a grey
    ``x`` where the difference would sit if the better arm scored its floor. ``results``:
    claim results or their rows (``claims.json``, ``report.json``)."""
    import textwrap

    rows = [r.to_row() if isinstance(r, ClaimResult) else r for r in results]
    rows = [r for r in rows if r.get("comparisons") and isinstance(r["comparisons"][0], dict)]
    if not rows:
        return None
    titles = [textwrap.wrap(f"{r['claim_id']}: {r['verdict']}", 110) for r in rows]
    heights = [
        0.75 + TITLE_LINE * len(t) + 0.34 * len(r["comparisons"])
        for t, r in zip(titles, rows, strict=True)
    ]
    fig, axes = plt.subplots(
        len(rows),
        ncols,
        figsize=(9.5, sum(heights) + 0.3),
        squeeze=False,
        gridspec_kw={"height_ratios": heights},
        layout="constrained",
    )
    for ax, r, title in zip(axes[:, 0], rows, titles, strict=True):
        comps = r["comparisons"]
        est = r["estimates"]
        for i, c in enumerate(comps):
            d = c["difference"]
            y = len(comps) - 1 - i
            color = OUTCOME_COLORS[c["outcome"]]
            ax.errorbar(
                d["iqm"],
                y,
                xerr=[[d["iqm"] - d["ci_low"]], [d["ci_high"] - d["iqm"]]],
                fmt="o",
                color=color,
                capsize=3,
                ms=5,
            )
            if c.get("margin") is not None:
                ax.plot([-c["margin"]] * 2, [y - 0.4, y + 0.4], color="tab:blue", lw=1.5, ls="--")
            if c.get("floor") and c["floor"] in est and c["worse"] in est:
                sign = 1 if r["higher_is_better"] else -1
                at = sign * (est[c["floor"]]["iqm"] - est[c["worse"]]["iqm"])
                ax.plot(at, y, "x", color="dimgray", ms=7, mew=1.5)
        labels = []
        for c in comps:
            why = f" ({c['reason']})" if c.get("reason") else ""
            labels.append(
                textwrap.shorten(f"{c['text']}: {c['outcome']}{why}", 70, placeholder="…")
            )
        ax.set_yticks(range(len(comps)), labels[::-1], fontsize=7.5)
        ax.axvline(0, color="black", lw=0.8)
        ax.set_ylim(-0.6, len(comps) - 0.4)
        ax.grid(alpha=0.3, axis="x")
        ax.tick_params(axis="x", labelsize=7.5)
        ax.set_title(
            "\n".join(title),
            fontsize=9,
            loc="left",
            color=verdict_color(r["category"]),
        )
    axes[-1, 0].set_xlabel(
        "difference A − B (> 0: the paper's way), 95% CI;  -- −δ of a 'matches' test;  "
        "x: where a floor-level A would sit",
        fontsize=8,
    )
    return fig


def floor_band(ax, floor, label: str = "random policy (floor)", color: str = "0.35") -> None:
    """A floor (or ceiling) as a dotted line at its IQM over a grey band of its 95% CI."""
    if floor is None:
        return
    ax.axhspan(floor.ci_low, floor.ci_high, color=color, alpha=0.12, lw=0)
    ax.axhline(floor.iqm, color=color, ls=":", lw=1.4, label=label)
    ax.legend(fontsize=8)


def ci_curves(
    ax, df, xlabel: str, ylabel: str, title: str = "", x: str = "step", by: str = "method"
) -> None:
    """Curves over seeds: per ``by`` (a method), the IQM against ``x`` with its 95% CI as a band.

    ``df`` has columns ``by``, ``x``, iqm, ci_low, ci_high (see
    :func:`memrl.stats.points.iqm_curves`, :func:`memrl.stats.points.iqm_points`).
    """
    for method, g in df.groupby(by, sort=False):
        (line,) = ax.plot(g[x], g.iqm, label=method, lw=2)
        ax.fill_between(g[x], g.ci_low, g.ci_high, color=line.get_color(), alpha=0.2, lw=0)
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)


def ci_points(
    ax,
    df,
    x: str,
    xlabel: str,
    ylabel: str,
    title: str = "",
    by: str = "method",
    label: Callable[[object], str] = str,
) -> None:
    """A sweep over seeds: per ``by``, the IQM at each ``x`` with its 95% CI as error bars
    (none where a point has one run). ``df`` as :func:`memrl.stats.points.iqm_points` makes it."""
    for key, g in df.groupby(by, sort=False):
        err = np.array([g.iqm - g.ci_low, g.ci_high - g.iqm])
        ax.errorbar(g[x], g.iqm, yerr=np.nan_to_num(err), fmt="o-", capsize=3, label=label(key))
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)


def _coverage(res: ClaimResult) -> str:
    return "" if res.coverage is None else f", coverage {share(res.coverage)}"


def trend_panels(results: Sequence[ClaimResult], ncols: int = 2):
    """One small panel per claim with trends: each comparison's effect (IQM difference,
    > 0 the paper's way) against the share of our budget, with its 95% CI band; the
    legend under the panel names each comparison and where it heads."""
    import textwrap

    shown = [r for r in results if r.trends]
    if not shown:
        return None
    nrows = -(-len(shown) // ncols)
    tallest = max(len(r.trends) for r in shown)
    titles = [
        textwrap.wrap(f"{r.claim.claim_id} ({r.claim.regime}{_coverage(r)}): {r.verdict}", 70)
        for r in shown
    ]
    lines = max(len(t) for t in titles)
    fig, axes = plt.subplots(
        nrows,
        ncols,
        figsize=(6.4 * ncols, (2.45 + TITLE_LINE * lines + 0.32 * tallest) * nrows),
        squeeze=False,
        layout="constrained",
    )
    for ax, res, title in zip(axes.flat, shown, titles, strict=False):
        for t in res.trends:
            x = [100 * p.fraction for p in t.points]
            label = textwrap.shorten(t.comparison, 58, placeholder="…")
            (line,) = ax.plot(
                x,
                [p.effect.iqm for p in t.points],
                marker="o",
                lw=1.5,
                label=f"{label}: {t.direction}, {t.heading}",
            )
            ax.fill_between(
                x,
                [p.effect.ci_low for p in t.points],
                [p.effect.ci_high for p in t.points],
                color=line.get_color(),
                alpha=0.15,
                lw=0,
            )
        ax.axhline(0, color="black", lw=0.8)
        ax.set_title(
            "\n".join(title),
            fontsize=9,
            loc="left",
            color=verdict_color(res.decision.category),
        )
        ax.set(xlabel="% of our budget", ylabel="effect (> 0: the paper's way)", xlim=(0, 105))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.22), frameon=False)
    for ax in axes.flat[len(shown) :]:
        ax.set_visible(False)
    return fig
