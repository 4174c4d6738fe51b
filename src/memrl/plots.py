"""Shared figure styles: IQM curves and sweeps over seeds with 95% CIs, claim intervals and trends."""

from __future__ import annotations

import textwrap
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


def _forest_legend(fig, matches: bool, floors: bool) -> None:
    """The forest's key, at the top of the figure (a 6,000-pixel page clipped it at the
    bottom): the outcome colours, the −δ of a *matches* test and the floor-level mark."""
    from matplotlib.lines import Line2D

    handles = [
        Line2D([], [], color=c, marker="o", ls="-", ms=5, label=o)
        for o, c in OUTCOME_COLORS.items()
    ]
    if matches:
        handles.append(Line2D([], [], color="tab:blue", ls="--", label="−δ of a 'matches' test"))
    if floors:
        handles.append(
            Line2D(
                [], [], color="dimgray", marker="x", ls="", ms=7, mew=1.5, label="A at its floor"
            )
        )
    fig.legend(
        handles=handles,
        loc="outside upper center",
        ncols=len(handles),
        fontsize=8,
        frameon=False,
        title="each comparison: the difference A − B (> 0: the paper's way) with its 95% CI",
        title_fontsize=8,
    )


def _fit_titles(fig, axes, texts: list[str], width: int, heights, extra: float) -> None:
    """Re-wrap each panel's left title until it ends inside the figure (LLM-7's verdict ran
    past the right edge at a fixed wrap), growing its panel's height by the lines added."""

    widths = [width] * len(texts)
    for _ in range(4):
        fig.canvas.draw()  # lays the figure out: the titles' extents are measured
        renderer = fig.canvas.get_renderer()
        over = False
        for i, ax in enumerate(axes):
            box = ax._left_title.get_window_extent(renderer)
            if box.x1 > fig.bbox.x1 - 2:
                room = (fig.bbox.x1 - box.x0 - 6) / box.width
                widths[i] = max(24, int(widths[i] * room) - 2)
                over = True
        if not over:
            return
        lines = []
        for ax, text, w in zip(axes, texts, widths, strict=True):
            wrapped = textwrap.wrap(text, w)
            ax._left_title.set_text("\n".join(wrapped))
            lines.append(len(wrapped))
        new = heights(lines)
        axes[0].get_subplotspec().get_gridspec().set_height_ratios(new)
        fig.set_figheight(sum(new) + extra)


def forest(results: Sequence[ClaimResult | dict], ncols: int = 1):
    """The verdicts at a glance: one panel per claim, one row per comparison — its
    difference (> 0 the paper's way) with the 95% CI, coloured by outcome (green holds, red
    fails, grey undecided), the zero line, the −δ line of a *matches* comparison, and a grey
    ``x`` where the difference would sit if the better arm scored its floor; the key at the
    top. ``results``: claim results or their rows (``claims.json``, ``report.json``)."""

    rows = [r.to_row() if isinstance(r, ClaimResult) else r for r in results]
    rows = [r for r in rows if r.get("comparisons") and isinstance(r["comparisons"][0], dict)]
    if not rows:
        return None
    texts = [f"{r['claim_id']}: {r['verdict']}" for r in rows]
    titles = [textwrap.wrap(t, 110) for t in texts]

    def heights(lines: list[int]) -> list[float]:
        return [
            0.75 + TITLE_LINE * n + 0.34 * len(r["comparisons"])
            for n, r in zip(lines, rows, strict=True)
        ]

    legend = 0.45  # the key's band at the top, in inches
    fig, axes = plt.subplots(
        len(rows),
        ncols,
        figsize=(9.5, sum(heights([len(t) for t in titles])) + 0.3 + legend),
        squeeze=False,
        gridspec_kw={"height_ratios": heights([len(t) for t in titles])},
        layout="constrained",
    )
    matches = floors = False
    for ax, r, title in zip(axes[:, 0], rows, titles, strict=True):
        comps = r["comparisons"]
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
                matches = True
                ax.plot([-c["margin"]] * 2, [y - 0.4, y + 0.4], color="tab:blue", lw=1.5, ls="--")
            if (at := floor_at(r, c)) is not None:
                floors = True
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
    axes[-1, 0].set_xlabel("difference A − B (> 0: the paper's way), 95% CI", fontsize=8)
    _forest_legend(fig, matches, floors)
    _fit_titles(fig, list(axes[:, 0]), texts, 110, heights, 0.3 + legend)
    return fig


def floor_at(r: dict, c: dict) -> float | None:
    """Where a comparison's difference would sit if its better arm scored its floor (the
    forest's grey x), or None without a floor."""
    est = r["estimates"]
    if not (c.get("floor") and c["floor"] in est and c["worse"] in est):
        return None
    sign = 1 if r["higher_is_better"] else -1
    return sign * (est[c["floor"]]["iqm"] - est[c["worse"]]["iqm"])


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


def arms_strip(row: dict):
    """A claim's arms, each seed a dot (its items' mean where a run has items), the IQM as
    a bar with its 95% CI; an arm of no runs (a paper's constant) as a diamond; colours by
    role: compared (blue), floor or ceiling (grey). None when no arm has per-seed values."""
    est = row["estimates"]
    edges = {c.get("floor") for c in row["comparisons"]} | {(row.get("ceiling") or {}).get("name")}
    names = list(est)
    if not any(e.get("values") for e in est.values()):
        return None
    fig, ax = plt.subplots(figsize=(8.5, 0.9 + 0.28 * len(names)), layout="constrained")
    rng = np.random.default_rng(0)  # the jitter only: the same picture every build
    for i, name in enumerate(names[::-1]):
        e = est[name]
        color = "0.45" if name in edges else "tab:blue"
        vals = np.asarray(e.get("values") or [], float)
        if len(vals):
            ax.plot(
                vals, i + rng.uniform(-0.18, 0.18, len(vals)), "o", ms=3.5, alpha=0.6, color=color
            )
        if e.get("n"):
            ax.errorbar(
                e["iqm"],
                i,
                xerr=[[e["iqm"] - e["ci_low"]], [e["ci_high"] - e["iqm"]]],
                fmt="|",
                ms=14,
                mew=2,
                color="black",
                capsize=0,
                lw=1.2,
            )
        else:
            ax.plot(e["iqm"], i, "D", color="tab:orange", ms=6)
    ax.set_yticks(
        range(len(names)), [f"{n} ({est[n]['n'] or 'constant'})" for n in names[::-1]], fontsize=7.5
    )
    ax.set_ylim(-0.6, len(names) - 0.4)
    ax.grid(alpha=0.3, axis="x")
    ax.tick_params(axis="x", labelsize=8)
    ax.set_xlabel(
        f"{textwrap.shorten(row['metric'], 110, placeholder='…')}\neach seed (dot), the IQM "
        "with its 95% CI (bar), a constant (diamond); (n): seeds",
        fontsize=8,
    )
    return fig


def trend_lines(row: dict):
    """A claim's trends: each comparison's effect (> 0 the paper's way) with its 95% CI at
    each share of our budget. None when the claim has none."""

    if not row.get("trends"):
        return None
    fig, ax = plt.subplots(figsize=(8.5, 3.2 + 0.2 * len(row["trends"])), layout="constrained")
    for t in row["trends"]:
        x = [100 * p["fraction"] for p in t["points"]]
        label = textwrap.shorten(
            f"{t['comparison']}: {t['direction']}, {t['heading']}", 90, placeholder="…"
        )
        (line,) = ax.plot(x, [p["iqm"] for p in t["points"]], marker="o", lw=1.5, label=label)
        ax.fill_between(
            x,
            [p["ci_low"] for p in t["points"]],
            [p["ci_high"] for p in t["points"]],
            color=line.get_color(),
            alpha=0.15,
            lw=0,
        )
    ax.axhline(0, color="black", lw=0.8)
    ax.set(xlabel="% of our budget", ylabel="effect (> 0: the paper's way)", xlim=(0, 105))
    ax.grid(alpha=0.3)
    fig.legend(fontsize=7, loc="outside lower center", frameon=False)
    return fig


def forest_compact(rows: Sequence[dict]):
    """Every claim's comparisons on one axis, each claim's differences divided by its own
    largest |CI end| (so every claim spans [−1, 1]; its units differ): a picture of where
    the intervals sit against zero, for the README's first screen. The site's forest has
    each claim's own scale."""
    rows = [r for r in rows if r.get("comparisons")]
    if not rows:
        return None
    n = sum(len(r["comparisons"]) for r in rows)
    fig, ax = plt.subplots(figsize=(8, 1.0 + 0.075 * n + 0.1 * len(rows)), layout="constrained")
    y, ticks, labels, colors = 0.0, [], [], []
    for r in rows:
        comps = r["comparisons"]
        scale = (
            max(
                max(
                    abs(c["difference"]["ci_low"]),
                    abs(c["difference"]["ci_high"]),
                    abs(c.get("margin") or 0.0),
                )
                for c in comps
            )
            or 1.0
        )
        top = y
        for c in comps:
            d = c["difference"]
            ax.plot(
                [d["ci_low"] / scale, d["ci_high"] / scale],
                [y, y],
                color=OUTCOME_COLORS[c["outcome"]],
                lw=1.6,
                solid_capstyle="butt",
            )
            ax.plot(d["iqm"] / scale, y, "o", ms=2.5, color=OUTCOME_COLORS[c["outcome"]])
            if c.get("margin") is not None:
                ax.plot([-c["margin"] / scale] * 2, [y - 0.4, y + 0.4], color="tab:blue", lw=1)
            y += 1
        ticks.append((top + y - 1) / 2)
        labels.append(f"{r['claim_id']}: {r['category']}")
        colors.append(verdict_color(r["category"]))
        ax.axhline(y + 0.5, color="0.85", lw=0.6)
        y += 1.5
    ax.set_yticks(ticks, labels, fontsize=7.5)
    for tick, color in zip(ax.get_yticklabels(), colors, strict=True):
        tick.set_color(color)
    ax.set_ylim(y - 1, -1)
    ax.axvline(0, color="black", lw=0.8)
    ax.set_xlim(-1.05, 1.05)
    ax.tick_params(axis="x", labelsize=7.5)
    ax.set_xlabel(
        "difference A − B / the claim's largest |CI end| (> 0: the paper's way)", fontsize=8
    )
    _forest_legend(
        fig, any(c.get("margin") is not None for r in rows for c in r["comparisons"]), False
    )
    return fig
