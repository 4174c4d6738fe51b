"""Gather every family's claims into ``<results>/REPORT.md`` and ``<results>/report.json``.

    python -m memrl report [results/<profile>]      # default: results/default

It only renders what the families' ``claims.json`` files say: numbers and
verdicts were computed by the runs (see :mod:`memrl.stats.claims`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Protocol

from memrl import moves
from memrl.runtime import atomic_write_json, atomic_write_text
from memrl.stats.claims import (
    INCONCLUSIVE,
    VERDICT_RULE,
    VERDICTS,
    comparison_text,
    seeds_text,
    share,
)
from memrl.stats.compare import MEASURED_RATES
from memrl.stats.copies import COPIED
from memrl.stats.learners import PASSED
from memrl.stats.verdict import MIXED


class Listed(Protocol):
    """What the report needs of a family (:class:`memrl.families.Family` is one): its name,
    its title and the files its notebook publishes beside the report."""

    name: str
    title: str
    artefacts: tuple[str, ...]


CONTENTS = "contents.json"  # the report's families (order, titles) and sections, for the site


def contents(results: Path) -> dict[str, Any]:
    """What :func:`write` published: ``{"families": [{name, title}], "sections": [file]}``
    (empty lists before the report stage ran)."""
    path = Path(results) / CONTENTS
    return json.loads(path.read_text()) if path.is_file() else {"families": [], "sections": []}


def load_rows(results: Path, order: list[str] | None = None) -> list[dict[str, Any]]:
    """Every family's ``claims.json`` under ``results``, in ``order`` (default: the order
    the report stage published, else the folders' names)."""
    results = Path(results)
    if order is None:
        order = [f["name"] for f in contents(results)["families"]]
        order = order or sorted(p.parent.name for p in results.glob("*/claims.json"))
    files = [results / f / "claims.json" for f in order]
    files = [f for f in files if f.is_file()]
    if not files:
        raise FileNotFoundError(
            f"no */claims.json under {results}: run the family stages first "
            f"(`make repro PROFILE={Path(results).name}`)"
        )
    rows: list[dict[str, Any]] = []
    for f in files:
        rows.extend(json.loads(f.read_text()))

    def key(r: dict[str, Any]) -> tuple[int, str, int]:
        fam = r["family"]
        prefix, _, number = r["claim_id"].rpartition("-")  # RO-10 after RO-9, not RO-1
        rank = order.index(fam) if fam in order else 99
        return (rank, prefix, int(number) if number.isdigit() else 0)

    return sorted(rows, key=key)


def _fmt(x: float) -> str:
    return f"{x:.4g}"


def _md_escape(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def tally(rows: list[dict[str, Any]]) -> str:
    """``31 claims: 3 reproduced, ... 14 inconclusive (4 power, ...).``: the verdicts
    counted (the README's, the site's and the report's one line)."""
    counts = {v: n for v in VERDICTS if (n := sum(r["category"] == v for r in rows))}
    why: dict[str, int] = {}
    for r in rows:
        if r["category"] == INCONCLUSIVE and r.get("reason"):
            why[r["reason"]] = why.get(r["reason"], 0) + 1
    parts = [f"{n} {v}" for v, n in counts.items()]
    if why and INCONCLUSIVE in counts:
        i = list(counts).index(INCONCLUSIVE)
        parts[i] += " (" + ", ".join(f"{n} {k}" for k, n in why.items()) + ")"
    return f"{len(rows)} claims: " + ", ".join(parts) + "."


SMOKE = "smoke"
REFERENCE = "default"  # the profile whose published report lists every claim


def missing_claims(results: Path, rows: list[dict[str, Any]]) -> dict[str, str]:
    """Claims the published default report has and ``rows`` lack, each with why: the lists
    of the claim's family that this profile's resolved parameters shorten (its grid runs
    fewer conditions or methods, so the claim's function finds none of the runs it needs)."""
    import yaml

    results = Path(results)
    ref = results.parent / REFERENCE
    if not (ref / "report.json").is_file() or results.resolve() == ref.resolve():
        return {}
    have = {r["claim_id"] for r in rows}
    gone = [r for r in json.loads((ref / "report.json").read_text()) if r["claim_id"] not in have]
    mine, theirs = ({}, {})
    if (results / "params.yaml").is_file() and (ref / "params.yaml").is_file():
        mine = yaml.safe_load((results / "params.yaml").read_text()) or {}
        theirs = yaml.safe_load((ref / "params.yaml").read_text()) or {}

    def shortened(a: Any, b: Any, key: str = "") -> list[str]:
        if isinstance(a, dict) and isinstance(b, dict):
            return [x for k in a if k in b for x in shortened(a[k], b[k], f"{key}.{k}".strip("."))]
        if isinstance(a, list) and isinstance(b, list) and set(map(str, a)) < set(map(str, b)):
            left = [str(x) for x in b if str(x) not in set(map(str, a))]
            return [f"{key} leaves out {', '.join(left)}"]
        return []

    out = {}
    for r in gone:
        cuts = shortened(mine.get(r["family"], {}), theirs.get(r["family"], {}))
        out[r["claim_id"]] = (
            f"not built: this profile's grid lacks the runs it needs ({'; '.join(cuts)})"
            if cuts
            else "not built: this profile's grid lacks the runs it needs"
        )
    return out


def smoke_note(
    rows: list[dict[str, Any]], profile: str, missing: dict[str, str] | None = None
) -> str:
    """What the smoke profile is, for its report and site (empty for any other profile)."""
    if profile != SMOKE:
        return ""
    text = (
        "This is the smoke profile: it checks the wiring (every stage, job function, claim "
        "and page runs end to end on tiny budgets and 2 seeds, in minutes), not the papers. "
        "Every verdict is expected to be inconclusive; `make site` shows the published "
        "default profile's."
    )
    for claim_id, why in (missing or {}).items():
        text += f" {claim_id} is missing: {why}."
    return text


def trend_text(r: dict[str, Any]) -> str:
    """The directions of a claim's trends, e.g. ``widening (the paper's way)``."""
    if not r.get("trends"):
        return r.get("trend_note") or "none"
    return "; ".join(f"{t['direction']} ({t['heading']})" for t in r["trends"])


def floor_text(r: dict[str, Any]) -> str:
    """The claim's floor(s) with IQM and CI, or why it has none; its ceiling if any."""
    if not r.get("floors"):
        text = f"none: {r.get('floor_reason') or 'not given'}"
    else:
        text = "; ".join(
            f"{f['name']}: {_fmt(f['iqm'])} [{_fmt(f['ci_low'])}, {_fmt(f['ci_high'])}]"
            for f in r["floors"]
        )
    if r.get("ceiling"):
        c = r["ceiling"]
        text += f"; ceiling {c['name']}: {_fmt(c['iqm'])}"
    return text


def verdict_text(r: dict[str, Any]) -> str:
    """The verdict, with the share of the paper's budget an early claim looks at."""
    scope = ""
    if r["regime"] == "early" and r.get("coverage") is not None:
        scope = f" (early regime: {share(r['coverage'])} of the paper's budget)"
    return f"**{r['verdict']}**{scope}"


def sections(results: Path, names: list[str] | None = None) -> list[dict[str, Any]]:
    """The sections the families published beside the report (an artefact JSON with a
    ``section``: title, text, table head and body, figure), as they wrote them."""
    names = contents(results)["sections"] if names is None else names
    out = []
    for name in names:
        path = Path(results) / name
        data = json.loads(path.read_text()) if path.is_file() else {}
        if data.get("section"):
            out.append(data["section"])
    return out


def section_markdown(results: Path, sec: dict[str, Any]) -> str:
    """One published section as Markdown: heading, paragraph, table and its figure."""
    head = sec["head"]
    lines = ["", f"## {sec['title']}", "", sec["text"], "", "| " + " | ".join(head) + " |"]
    lines += ["|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row) + " |" for row in sec["body"]]
    if sec.get("figure") and (Path(results) / sec["figure"]).is_file():
        lines += ["", f"![{sec.get('figure_alt', '')}]({sec['figure']})"]
    return "\n".join(lines)


def render(
    rows: list[dict[str, Any]], profile: str = "", missing: dict[str, str] | None = None
) -> str:
    note = smoke_note(rows, profile, missing)
    out = [
        "# memrl — smoke report: the wiring, not the papers" if note else "# memrl — claims report",
        "",
        *([f"**{note}**", ""] if note else []),
        "Every row: a paper's claim beside our reproduction. *Ours* is the interquartile mean (IQM) "
        "over seeds with a 95% bootstrap confidence interval; each comparison is judged on the "
        "difference of two IQMs with its own 95% CI, beside the claim's floor.",
        "",
        f"**Verdict rule.** {VERDICT_RULE}",
        "",
        "**Methods.** IQMs are 25%-trimmed means over seeds. Every CI is a bootstrap over "
        "seeds (each arm resampled on its own, as rliable's stratified bootstrap) whose "
        "percentile interval is *expanded* for small samples (Hesterberg 2015): the plain "
        "percentile interval of an IQM over 5 seeds covers ~90%, not 95%. " + MEASURED_RATES,
        "",
        f"**Summary:** {tally(rows)}",
        "",
        "*Regime*: early (the first part of training) or final (after the paper's budget). "
        "*Coverage*: our budget / the paper's. *Trend*: how each comparison's effect "
        "(IQM difference, > 0 the paper's way) moves from 25% to 100% of our budget — "
        "widening, closing, flipping or steady (details under each claim).",
        "",
        "| family | claim | paper | source | paper's value | metric | ours: IQM [95% CI] | comparisons: A − B [95% CI], outcome | floor | seeds | budget | regime | coverage | trend | verdict |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        o = r["ours"]
        cells = [
            r["family"],
            r["claim_id"],
            r["paper"],
            r["source"],
            r["paper_value"],
            r["metric"],
            f"{r['ours_name']}: {_fmt(o['iqm'])} [{_fmt(o['ci_low'])}, {_fmt(o['ci_high'])}]",
            "; ".join(comparison_text(c) for c in r["comparisons"]),
            floor_text(r),
            str(r["n_seeds"]),
            r["budget"],
            r["regime"],
            r["coverage_text"],
            trend_text(r),
            verdict_text(r),
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
        legend = ['"A > B": A beats B (the CI of A − B above 0)']
        if any(c["relation"] != "beats" for c in r["comparisons"]):
            legend.append('"A >= B": A matches or beats B (the CI of A − B above −δ)')
        out.append(f"*Tested on* {r['metric']} ({'; '.join(legend)}; {better} is better):  ")
        for c in r["comparisons"]:
            src = f" — δ: {c['margin_source']}" if c.get("margin_source") else ""
            out.append(f"- {comparison_text(c)}{src}")
        out.append("")
        if pe := r.get("paper_effect"):
            tested = sum(bool(c.get("paper_effect")) for c in r["comparisons"])
            out.append(
                f"*The paper's number, tested:* {pe['text']} ({pe['kind']} {pe['value']:g}; "
                f"{pe['source']}), in {tested} of {len(r['comparisons'])} comparisons, the bare "
                "direction beside each  "
            )
        out.append(f"*Floor:* {floor_text(r)}  ")
        if r.get("conditions"):
            out.append(
                "*Conditions the statement needs:* " + conditions_text(r["conditions"]) + "  "
            )
        if r.get("positive_control"):
            out.append(f"*Positive control:* {control_text(r['positive_control'])}  ")
        if r.get("learners"):
            out.append(f"*Learnability controls* ({LEARNERS_NOTE}):  ")
            out += [f"- {line}" for line in learner_lines(r)]
            out.append("")
        if hw := hardware_text(r):
            out.append(f"*Hardware:* {hw}  ")
        elif r.get("device"):
            out.append(f"*Device:* {device_text(r)}  ")
        out.append(
            f"*Verdict:* {verdict_text(r)}"
            + (f" (coverage: {r['coverage_note']})" if r.get("coverage_note") else "")
            + f"; {seeds_text(r['n_seeds'], r.get('one_run') or ())}  "
        )
        if moved := moves.text(r.get("since_published")):
            out.append(f"*Since the last publication:* {moved}  ")
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


def conditions_text(conditions: list[dict]) -> str:
    """``GPU parallel scans: not met (one CPU thread); ...``."""
    return "; ".join(
        f"{c['condition']}: {'met' if c['met'] else 'not met'}"
        + (f" ({c['note']})" if c.get("note") else "")
        for c in conditions
    )


LEARNERS_NOTE = "an arm that fails its control makes the verdict inconclusive (learner)"


def learner_lines(r: dict[str, Any]) -> list[str]:
    """Each learnability control of a claim (:class:`memrl.stats.learners.LearnerCheck`):
    ``S5 · RepeatFirstEasy, in its own full run: failed (0.12 [...] against ...)``."""
    return [
        f"{lc['arm']}, in {lc['setting']}: {PASSED[lc['passed']]}"
        + (f" ({lc['detail']})" if lc.get("detail") else "")
        for lc in r.get("learners") or []
    ]


HARDWARE_COVERS = {  # whether our device covers the paper's hardware
    True: "covers it",
    False: "does not cover it: the setup is narrower than the paper's (coverage)",
    None: "may or may not cover it (not judged)",
}


def device_text(r: dict[str, Any]) -> str:
    """The device the claim's runs used (``cpu``, ``cuda``), or that none was recorded."""
    return r.get("device") or "not recorded"


def hardware_text(r: dict[str, Any]) -> str:
    """The hardware the paper's statement rests on against ours, and whether ours covers it
    (where it does not, the setup is narrower than the paper's: *coverage*); "" where the
    claim declares none."""
    hw = r.get("hardware")
    if not hw:
        return ""
    return (
        f'the paper\'s statement rests on {hw["needs"]} ("{hw["quote"]}", {hw["source"]}; '
        f"covered by {', '.join(hw['covered_by'])}); ours ran on {device_text(r)}, which "
        + HARDWARE_COVERS[hw.get("covers")]
    )


def control_text(pc: dict, detail: bool = True) -> str:
    """A positive control: its value, whether it clears the floor, what it is, and where it
    left the expert's path (the log-likelihoods of the expert's and the chosen action)."""
    clears = {True: "clears the floor", False: "does not clear the floor", None: "no floor"}
    out = (
        f"{pc['name']}: {_fmt(pc['iqm'])} [{_fmt(pc['ci_low'])}, {_fmt(pc['ci_high'])}], "
        f"{clears[pc.get('clears_floor')]}; {pc.get('note') or ''}"
    )
    for d in (pc.get("detail") or [])[: 3 if detail else 0]:
        ll = d.get("expert_loglik")
        out += (
            f"; task {d['task']} step {d['step']} ({d['page']}): chose '{d['chosen']}' "
            f"({d['chosen_loglik']:.3f}) over the expert's '{d['expert']}' "
            + (f"({ll:.3f})" if ll is not None else "(not offered)")
        )
    return out


def write(results: Path, families: list[Listed]) -> Path:
    """``REPORT.md``, ``report.json`` and ``contents.json`` for a profile's results folder
    (the report stage), the claims in the order of ``families``."""
    results = Path(results)
    rows = load_rows(results, [f.name for f in families])
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
                "higher_is_better",
                "ours",
                "n_seeds",
                "one_run",
                "budget",
                "regime",
                "paper_budget",
                "used_budget",
                "coverage",
                "coverage_complete",
                "coverage_note",
                "coverage_text",
                "trends",
                "verdict",
                "deviations",
                "floor",
                "floors",
                "floor_reason",
                "ceiling",
                "machine_dependent",
                "category",
                "reason",
                "detail",
                "conditions",
                "multiplicity",
                "paper_effect",
            )
        }
        | {
            "positive_control": r.get("positive_control"),
            "learners": r.get("learners") or [],
            "device": r.get("device"),
            "hardware": r.get("hardware"),
            "ours_name": r["ours_name"],
            "estimates": r["estimates"],
            "comparisons": r["comparisons"],
        }
        for r in rows
    ]
    moved = moves.since(report, moves.load_previous(results))
    for r in report + rows:  # how each verdict moved since the last publication, and why
        r["since_published"] = moved.get(r["claim_id"])
    atomic_write_json(results / "report.json", report)
    published = []
    for fam in families:  # e.g. the memory card, published beside the report
        for name in fam.artefacts:
            if (results / fam.name / name).is_file():
                atomic_write_text(results / name, (results / fam.name / name).read_text())
                published.append(name)
    listed = [{"name": f.name, "title": f.title} for f in families]
    atomic_write_json(results / CONTENTS, {"families": listed, "sections": published})
    extra = "".join(section_markdown(results, sec) for sec in sections(results, published))
    profile, missing = results.resolve().name, missing_claims(results, rows)
    atomic_write_text(results / "REPORT.md", render(rows, profile, missing) + extra + "\n")
    return results / "REPORT.md"


# =========================================================================== the README's front
README_IMAGE = "docs/verdicts.svg"  # the compact forest, committed (a test keeps it equal)
BLOCKS = ("tally", "verdicts")  # README.md's generated blocks, between their markers


def _marker(name: str, end: bool = False) -> str:
    if end:
        return f"<!-- {name}: end -->"
    return (
        f"<!-- {name}: generated from results/default/report.json by "
        "`python -m memrl.report --readme`; a test keeps it equal, do not edit -->"
    )


def why_line(r: dict[str, Any]) -> str:
    """A verdict's reason in one line: its detail, then its comparisons counted by outcome
    (the undecided ones by their reason): ``4 of 6 comparisons hold, 2 undecided (power)``."""
    counts: dict[str, int] = {}
    for c in r["comparisons"]:
        undecided = c["outcome"] == "undecided"
        key = c["outcome"] + (f" ({c['reason']})" if undecided and c.get("reason") else "")
        counts[key] = counts.get(key, 0) + 1
    n = len(r["comparisons"])
    if n == 1:
        (key,) = counts
        text = "its one comparison " + ("is " + key if key.startswith("undecided") else key)
    else:
        plural = {"holds": "hold", "fails": "fail"}
        parts = [f"{k} {plural.get(o, o)}" for o, k in counts.items()]
        text = f"of {n} comparisons, " + ", ".join(parts)
    detail = _drop_asides(_short_detail(r.get("detail") or ""))
    if r["category"] == MIXED:  # its detail opens with the counts the line ends with
        detail = "; ".join(detail.split("; ")[1:])
    return f"{detail}; {text}" if detail else text


def _drop_asides(text: str, longest: int = 30) -> str:
    """``text`` without its long parenthetical asides (the numbers and definitions REPORT.md
    gives in full): a group whose content passes ``longest`` characters goes, with the space
    before it; short ones (``Memory-R1 (GRPO)``) stay."""
    out, stack = [], []  # out: kept characters; stack: where each open group began in out
    for ch in text:
        if ch == "(":
            stack.append(len(out))
        out.append(ch)
        if ch == ")" and stack:
            start = stack.pop()
            if len(out) - start - 2 > longest:
                del out[start:]
                if out and out[-1] == " ":
                    out.pop()
    return "".join(out)


def _short_detail(detail: str) -> str:
    """A verdict's detail with its collapses (``A scores as B on each of ... on k of n
    seeds``, one per pair of arms) counted, not listed: REPORT.md and the claim's page name
    them."""
    parts = detail.split("; ") if detail else []
    kept = [p for p in parts if COPIED not in p]
    n = len(parts) - len(kept)
    if n:
        kept.append(
            f"{n} pair{'s' if n > 1 else ''} of arms score alike item for item on some seeds "
            "(named in REPORT.md)"
        )
    return "; ".join(kept)


def was(s: dict[str, Any] | None) -> str:
    """`` (was partially contradicted (coverage))`` beside a verdict that moved."""
    return f" (was {s['from']})" if s and s["moved"] and s["from"] else ""


def readme_blocks(rows: list[dict[str, Any]]) -> dict[str, str]:
    """The README's generated blocks from the published report's rows: the tally with the
    forest image, and the verdict table (claim, paper, verdict, one-line reason)."""
    short = {
        r["claim_id"]: r["category"] + (f" ({r['reason']})" if r.get("reason") else "")
        for r in rows
    }
    table = [
        "| claim | what the paper says | verdict | why, in one line |",
        "|---|---|---|---|",
    ]
    for r in rows:
        cells = [
            f"[{r['claim_id']}](docs/history.md#{r['claim_id'].lower()})",
            r["statement"],
            f"**{short[r['claim_id']]}**" + was(r.get("since_published")),
            why_line(r),
        ]
        table.append("| " + " | ".join(_md_escape(c) for c in cells) + " |")
    return {
        "tally": f"**{tally(rows)}**\n\n"
        f"![Every comparison of every claim: its difference with the 95% CI, green holds, red "
        f"fails, grey undecided]({README_IMAGE})",
        "verdicts": "\n".join(table),
    }


def readme_text(readme: str, rows: list[dict[str, Any]]) -> str:
    """``readme`` with its generated blocks replaced by what ``rows`` give (a block's markers
    must be there: the README decides where each goes)."""
    from memrl.readme import replace_block

    for name, text in readme_blocks(rows).items():
        readme = replace_block(readme, name, _marker(name), _marker(name, end=True), text)
    return readme


def readme_image(rows: list[dict[str, Any]]) -> str:
    """The compact forest as SVG text, the same bytes on every machine (text as text, no
    date, a fixed id salt)."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from memrl.plots import forest_compact

    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "memrl"}):
        fig = forest_compact(rows)
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None})
        plt.close(fig)
    return buf.getvalue()


def write_readme(root: Path, results: Path | None = None) -> list[Path]:
    """README.md's blocks and its image from ``results`` (default: results/default)."""
    root = Path(root)
    rows = json.loads(((results or root / "results" / "default") / "report.json").read_text())
    readme = root / "README.md"
    atomic_write_text(readme, readme_text(readme.read_text(), rows))
    atomic_write_text(root / README_IMAGE, readme_image(rows))
    return [readme, root / README_IMAGE]


if __name__ == "__main__":
    import sys

    from memrl.runtime import repo_root

    if sys.argv[1:] != ["--readme"]:
        sys.exit("usage: python -m memrl.report --readme  (README.md's blocks and image)")
    for path in write_readme(repo_root()):
        print(f"wrote {path}")
