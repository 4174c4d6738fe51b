"""Gather every family's claims into ``<results>/REPORT.md`` and ``<results>/report.json``.

    python -m memrl.report [results/<profile>]      # default: results/default

It only renders what the families' ``claims.json`` files say: numbers and
verdicts were computed by the runs (see :mod:`memrl.stats.claims`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from memrl.families import NAMES as FAMILY_ORDER  # the registry's order
from memrl.runtime import atomic_write_json, atomic_write_text, repo_root
from memrl.stats.claims import VERDICT_RULE, VERDICTS


def load_rows(results: Path) -> list[dict[str, Any]]:
    files = [results / f / "claims.json" for f in FAMILY_ORDER]
    files = [f for f in files if f.is_file()]
    if not files:
        raise FileNotFoundError(f"no */claims.json under {results}: run the family stages first")
    rows: list[dict[str, Any]] = []
    for f in files:
        rows.extend(json.loads(f.read_text()))

    def key(r: dict[str, Any]) -> tuple[int, str]:
        fam = r["family"]
        return (FAMILY_ORDER.index(fam) if fam in FAMILY_ORDER else 99, r["claim_id"])

    return sorted(rows, key=key)


def _fmt(x: float) -> str:
    return f"{x:.4g}"


def _md_escape(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def trend_text(r: dict[str, Any]) -> str:
    """The directions of a claim's trends, e.g. ``widening (the paper's way)``."""
    if not r.get("trends"):
        return r.get("trend_note") or "none"
    return "; ".join(f"{t['direction']} ({t['heading']})" for t in r["trends"])


def render(rows: list[dict[str, Any]]) -> str:
    counts = {v: sum(r["verdict"] == v for r in rows) for v in VERDICTS}
    out = [
        "# memrl — claims report",
        "",
        "Every row: a paper's claim beside our reproduction. *Ours* is the interquartile mean (IQM) "
        "over seeds with a 95% stratified-bootstrap confidence interval (rliable).",
        "",
        f"**Verdict rule.** {VERDICT_RULE}",
        "",
        f"**Summary:** {len(rows)} claims — "
        + ", ".join(f"{counts[v]} {v}" for v in VERDICTS)
        + ".",
        "",
        "*Regime*: early (the first part of training) or final (after the paper's budget). "
        "*Coverage*: our budget / the paper's. *Trend*: how each comparison's effect "
        "(IQM difference, > 0 the paper's way) moves from 25% to 100% of our budget — "
        "widening, closing, flipping or steady (details under each claim).",
        "",
        "| family | claim | paper | source | paper's value | metric | ours: IQM [95% CI] | compared with | seeds | budget | regime | coverage | trend | verdict |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        o = r["ours"]
        others = "; ".join(
            f"{k}: {_fmt(v['iqm'])} [{_fmt(v['ci_low'])}, {_fmt(v['ci_high'])}]"
            for k, v in r["estimates"].items()
            if k != r["ours_name"]
        )
        cells = [
            r["family"],
            r["claim_id"],
            r["paper"],
            r["source"],
            r["paper_value"],
            r["metric"],
            f"{r['ours_name']}: {_fmt(o['iqm'])} [{_fmt(o['ci_low'])}, {_fmt(o['ci_high'])}]",
            others,
            str(r["n_seeds"]),
            r["budget"],
            r["regime"],
            r["coverage_text"],
            trend_text(r),
            f"**{r['verdict']}**",
        ]
        out.append("| " + " | ".join(_md_escape(c) for c in cells) + " |")
    out += ["", "## Claims, comparisons and deviations from the papers", ""]
    for r in rows:
        out.append(f"### {r['claim_id']} — {r['paper']} ({r['source']})")
        out.append("")
        out.append(f"*Claim:* {r['statement']}  ")
        if r.get("machine_dependent"):
            out.append("*Machine-dependent:* wall-clock on the machine that ran it.  ")
        better = "higher" if r["higher_is_better"] else "lower"
        legend = ['"A > B": A beats B']
        if any(" >= " in c for c in r["comparisons"]):
            legend.append("\"A >= B\": A matches or beats B (A's CI reaches B's IQM)")
        out.append(
            f"*Tested as:* {', '.join(r['comparisons'])} on {r['metric']} "
            f"({'; '.join(legend)}; {better} is better).  "
        )
        out.append(
            f"*Verdict:* **{r['verdict']}**"
            + (f" (coverage: {r['coverage_note']})" if r.get("coverage_note") else "")
        )
        out.append(
            f"*Regime:* {r['regime']}; *budget:* ours {r.get('used_budget') or 'n/a'}, the "
            f"paper's {r.get('paper_budget') or 'not retrieved'}; *coverage:* {r['coverage_text']}  "
        )
        if r.get("trends"):
            out.append(
                f"*Trend* ({r['trend_note']}; effect IQM [95% CI] at each share of our budget):  "
            )
            for t in r["trends"]:
                pts = ", ".join(
                    f"{p['fraction']:.0%}: {p['iqm']:+.3g} [{p['ci_low']:+.3g}, {p['ci_high']:+.3g}]"
                    for p in t["points"]
                )
                out.append(f"- {t['summary']} — {pts}")
        else:
            out.append(f"*Trend:* {r.get('trend_note') or 'none'}  ")
        out.append("")
        for k, v in (r.get("extra") or {}).items():
            shown = f"{v:.4g}" if isinstance(v, float) else v
            out.append(f"*{k.replace('_', ' ')}:* {shown}  ")
        out.append("")
        out.append("Deviations from the paper's setup:")
        out.append("")
        for d in r["deviations"]:
            out.append(f"- {d}")
        out.append("")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m memrl.report", description=__doc__)
    ap.add_argument("results", nargs="?", default=None,
                    help="a profile's results folder (default: results/default)")  # fmt: skip
    args = ap.parse_args(argv)
    results = Path(args.results) if args.results else repo_root() / "results" / "default"
    rows = load_rows(results)
    report = [
        {
            k: r[k]
            for k in (
                "family",
                "claim_id",
                "paper",
                "source",
                "statement",
                "paper_value",
                "metric",
                "ours",
                "n_seeds",
                "budget",
                "regime",
                "paper_budget",
                "used_budget",
                "coverage",
                "trends",
                "verdict",
                "deviations",
            )
        }
        | {
            "ours_name": r["ours_name"],
            "estimates": r["estimates"],
            "comparisons": r["comparisons"],
        }
        for r in rows
    ]
    atomic_write_json(results / "report.json", report)
    atomic_write_text(results / "REPORT.md", render(rows) + "\n")
    print(f"wrote {results / 'REPORT.md'} ({len(rows)} claims)")


if __name__ == "__main__":
    main()
