"""An offline results site: every claim in one table, each family's executed notebook as a
page, figures inline — nothing loaded from the network.

    python -m memrl site [results/<profile>] [--out DIR]      # make site

It reads what a profile's pipeline wrote (``<results>/<family>/claims.json``, the executed
``<family>.ipynb`` and ``figures/``), never trains, and writes ``<results>/site/``:
``index.html`` (verdict, coverage, our value and CI, the paper's value, links to the
claim's figures and its notebook section) and ``<family>.html``. Notebook pages use
nbconvert's ``basic`` template (cells only, no scripts) inside a page of our own, so no
CDN is referenced; figures are copied beside the pages; :func:`check` verifies that every
local link and image resolves and that nothing is loaded from elsewhere.
"""

from __future__ import annotations

import html
import re
import shutil
from pathlib import Path
from typing import Any

from memrl import moves
from memrl.report import (
    HARDWARE_COVERS,
    LEARNERS_NOTE,
    PASSED,
    conditions_text,
    contents,
    control_text,
    device_text,
    floor_text,
    load_rows,
    missing_claims,
    sections,
    smoke_note,
    tally,
    trend_text,
)
from memrl.runtime import publish
from memrl.stats.claims import comparison_text, seeds_text

CLAIMS_ANCHOR = "Claims"  # the notebooks' "## Claims" heading, as nbconvert ids it
STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5rem auto; max-width: 1500px; color: #222;
       padding: 0 1rem; line-height: 1.4; }
table { border-collapse: collapse; width: 100%; font-size: 0.85rem; }
th, td { border: 1px solid #ccc; padding: 0.3rem 0.5rem; vertical-align: top; text-align: left; }
th { background: #f3f3f3; position: sticky; top: 0; }
td.num { white-space: nowrap; font-variant-numeric: tabular-nums; }
table.claims td.verdict { min-width: 9rem; } table.claims td.statement { min-width: 12rem; }
.paper { color: #57606a; font-size: 0.78rem; }
.verdict { font-weight: 600; }
.v-reproduced { color: #1a7f37; } .v-partially { color: #9a6700; } .v-mixed { color: #bc4c00; }
.v-not { color: #cf222e; } .v-contradicted { color: #bf3989; } .v-inconclusive { color: #6639ba; }
.o-holds { color: #1a7f37; } .o-fails { color: #cf222e; } .o-undecided { color: #57606a; }
details summary { cursor: pointer; } details ul { margin: 0.2rem 0; padding-left: 1rem; }
p.note { background: #fff8c5; border: 1px solid #d4a72c; padding: 0.5rem 0.8rem; }
figure.forest img { max-width: 900px; }
nav a { margin-right: 1rem; }
img { max-width: 100%; }
dl.facts dt { font-weight: 600; margin-top: 0.4rem; } dl.facts dd { margin-left: 1rem; }
pre { background: #f6f8fa; padding: 0.5rem; overflow-x: auto; font-size: 0.8rem; }
.jp-InputPrompt, .jp-OutputPrompt { display: none; }
"""


def page(title: str, body: str, pages: dict[str, str]) -> str:
    """A page of the site; the navigation links every family page in ``pages`` (name ->
    title)."""
    links = " ".join(
        f'<a href="{name}.html">{html.escape(title)}</a>' for name, title in pages.items()
    )
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>"
        f"<nav><a href='index.html'>All claims</a> {links}</nav>\n{body}\n</body></html>\n"
    )


def _verdict_class(r: dict[str, Any]) -> str:
    """``v-reproduced`` ... ``v-contradicted``, ``v-not``: a category's colour (``partially
    contradicted`` is not ``partially``)."""
    return "v-" + (
        "contradicted" if r["category"].endswith("contradicted") else r["category"].split()[0]
    )


def _estimate(e: dict[str, Any]) -> str:
    return f"{e['iqm']:.4g} [{e['ci_low']:.4g}, {e['ci_high']:.4g}]"


def section_html(sec: dict[str, Any], figure: str = "") -> str:
    """A section a family published beside the report (its table and figure; see
    :func:`memrl.report.sections`)."""
    return (
        f"<h2 id='{html.escape(sec['id'])}'>{html.escape(sec['title'])}</h2>"
        f"<p>{html.escape(sec['text'])}</p>"
        "<table><thead><tr>"
        + "".join(f"<th>{html.escape(h)}</th>" for h in sec["head"])
        + "</tr></thead><tbody>"
        + "".join(
            "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
            for row in sec["body"]
        )
        + "</tbody></table>"
        + (
            f"<figure><img src='{figure}' alt='{html.escape(sec.get('figure_alt', ''))}'>"
            f"<figcaption>{html.escape(sec.get('caption', ''))}</figcaption></figure>"
            if figure
            else ""
        )
    )


def _outcomes(r: dict[str, Any]) -> str:
    """``3 hold, 1 fails, 2 undecided``: a claim's comparisons counted by outcome."""
    counts = {o: sum(c["outcome"] == o for c in r["comparisons"]) for o in OUTCOMES}
    return ", ".join(f"{n} {OUTCOMES[o] if n != 1 else o}" for o, n in counts.items() if n)


OUTCOMES = {"holds": "hold", "fails": "fail", "undecided": "undecided"}  # plurals


def claim_href(r: dict[str, Any]) -> str:
    return f"{r['claim_id']}.html"


def index(
    rows: list[dict[str, Any]],
    pages: dict[str, str],
    figures: dict[str, list[str]],
    extra: list[dict[str, Any]] | None = None,
    profile: str = "",
    missing: dict[str, str] | None = None,
) -> str:
    """The claims table: one row per claim, its verdict second (readable at 1366 px: the
    comparisons fold into one line), linking the claim's own page; the forest plot below."""
    head = [
        "claim",
        "verdict",
        "the paper's statement",
        "paper's value",
        "ours: IQM [95% CI]",
        "comparisons: A − B [95% CI]",
        "seeds",
        "coverage",
    ]
    note = smoke_note(rows, profile, missing)
    lines = [
        "<h1>memrl — does memory in RL do what the papers say?</h1>",
        *([f"<p class='note'>{html.escape(note)}</p>"] if note else []),
        f"<p><strong>{html.escape(tally(rows))}</strong> Each comparison is judged on the "
        "difference of two IQMs over seeds with its 95% bootstrap CI: <em>beats</em> holds "
        "when the CI is above 0, <em>matches</em> when it is above −δ; a comparison whose arms "
        "both sit at the floor (a policy with no learning or no knowledge), or whose baseline "
        "does where the claim needs it to have learned, is undecided. <em>Coverage</em>: our "
        "budget / the paper's. Each claim's page shows its arms seed by seed, its comparisons, "
        "its curves and its deviations; <a href='#forest'>the forest plot</a> shows every "
        "comparison.</p>",
        "<table class='claims'><thead><tr>"
        + "".join(f"<th>{h}</th>" for h in head)
        + "</tr></thead><tbody>",
    ]
    for r in rows:
        cells = [
            f"<strong id='{r['claim_id']}'><a href='{claim_href(r)}'>{r['claim_id']}</a></strong>",
            f"<span class='verdict {_verdict_class(r)}'>{html.escape(r['verdict'])}</span>",
            html.escape(r["statement"])
            + f"<br><span class='paper'>{html.escape(r['paper'])} ({html.escape(r['source'])})"
            "</span>",
            html.escape(r["paper_value"]),
            f"{html.escape(r['ours_name'])}: {_estimate(r['ours'])}",
            f"<details><summary>{_outcomes(r)}</summary><ul>"
            + "".join(
                f"<li class='o-{c['outcome']}'>{html.escape(comparison_text(c))}</li>"
                for c in r["comparisons"]
            )
            + "</ul></details>",
            str(r["n_seeds"]),
            html.escape(r["coverage_text"]),
        ]
        css = ["", "verdict", "statement", "", "", "comparisons", "num", ""]
        lines.append(
            "<tr>"
            + "".join(
                f"<td class='{k}'>{c}</td>" if k else f"<td>{c}</td>"
                for k, c in zip(css, cells, strict=True)
            )
            + "</tr>"
        )
    lines.append("</tbody></table>")
    lines.append(
        "<figure class='forest' id='forest'><img src='forest.png' alt='every comparison: its "
        "difference with the 95% CI, coloured by outcome'><figcaption>Every comparison: "
        "difference with its 95% CI (green holds, red fails, grey undecided), the zero line, "
        "−δ of a <em>matches</em> test (dashed), where A would sit at its floor (x); the key "
        "at the top.</figcaption></figure>"
    )
    for sec in extra or []:  # e.g. the memory card; its figure as copied beside the pages
        fam, _, name = sec.get("figure", "").partition("/figures/")
        figure = f"figures/{fam}/{name}"
        lines.append(section_html(sec, figure if figure in figures.get(fam, []) else ""))
    return page("memrl — claims", "\n".join(lines), pages)


def _threshold(c: dict[str, Any]) -> str:
    if c.get("margin") is not None:
        src = f" ({c['margin_source']})" if c.get("margin_source") else ""
        return f"−δ = {-c['margin']:.4g}{src}"
    return "0"


def _facts(items: list[tuple[str, str]]) -> str:
    return (
        "<dl class='facts'>"
        + "".join(f"<dt>{html.escape(k)}</dt><dd>{html.escape(v)}</dd>" for k, v in items if v)
        + "</dl>"
    )


def _paper_hardware(r: dict[str, Any]) -> str:
    """The hardware the paper's statement rests on, in its words ("" where none declared)."""
    hw = r.get("hardware")
    return f'{hw["needs"]}: "{hw["quote"]}" ({hw["source"]})' if hw else ""


def _hardware(r: dict[str, Any]) -> str:
    """The paper's hardware against our device, and whether ours covers it."""
    hw = r.get("hardware")
    if not hw:
        return ""
    return (
        f"{hw['needs']} (covered by {', '.join(hw['covered_by'])}) / {device_text(r)}: "
        f"ours {HARDWARE_COVERS[hw.get('covers')]}"
    )


def _learners(r: dict[str, Any]) -> str:
    """Each trained arm's learnability control as a table row: arm, setting, passed or
    failed, the numbers behind it ("" where the claim has none)."""
    if not r.get("learners"):
        return ""
    css = {True: "o-holds", False: "o-fails", None: "o-undecided"}
    rows = "".join(
        f"<tr><td>{html.escape(lc['arm'])}</td><td>{html.escape(lc['setting'])}</td>"
        f"<td class='{css[lc['passed']]}'>{PASSED[lc['passed']]}</td>"
        f"<td>{html.escape(lc.get('detail') or '')}</td></tr>"
        for lc in r["learners"]
    )
    return (
        f"<h3 id='learners'>Learnability controls</h3><p>{html.escape(LEARNERS_NOTE)}.</p>"
        "<table class='learners'><thead><tr><th>arm</th><th>setting</th><th>control</th>"
        f"<th>detail</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def claim_page(
    r: dict[str, Any], pages: dict[str, str], figures: dict[str, list[str]], images: dict[str, str]
) -> str:
    """One claim's evidence on its own: the paper's statement and number, each arm per seed,
    each comparison's difference against its threshold and floor, the curves, the budget and
    coverage, the deviations. ``images``: kind (arms, comparisons, trends) -> file."""
    from memrl.plots import floor_at

    fam = r["family"]
    pe = r.get("paper_effect")
    paper = [
        ("the paper's value", r["paper_value"]),
        ("the paper's number, tested", f"{pe['text']} ({pe['source']})" if pe else ""),
        ("metric", f"{r['metric']} ({'higher' if r['higher_is_better'] else 'lower'} is better)"),
        ("regime", r["regime"]),
        ("the hardware its statement rests on", _paper_hardware(r)),
    ]
    ours = [
        (r["ours_name"], _estimate(r["ours"])),
        ("seeds", seeds_text(r["n_seeds"], r.get("one_run") or ())),
        ("floor", floor_text(r)),
        (
            "positive control",
            control_text(r["positive_control"]) if r.get("positive_control") else "",
        ),
    ]
    budget = [
        ("budget", r["budget"]),
        (
            "ours / the paper's",
            f"{r.get('used_budget') or 'n/a'} / {r.get('paper_budget') or 'not retrieved'}",
        ),
        ("coverage", r["coverage_text"]),
        ("setup", r.get("coverage_note") or ""),
        (
            "conditions the statement needs",
            conditions_text(r["conditions"]) if r.get("conditions") else "",
        ),
        ("hardware: the paper's / ours", _hardware(r)),
        ("device", device_text(r) if r.get("device") and not r.get("hardware") else ""),
        ("multiplicity", str(r["multiplicity"]) if r.get("multiplicity") else ""),
    ]
    head = ["comparison", "difference [95% CI]", "threshold", "floor: A at its floor", "outcome"]
    comps = []
    for c in r["comparisons"]:
        d = c["difference"]
        at = floor_at(r, c)
        why = f" ({c['reason']})" if c.get("reason") else ""
        need = f"; ~{c['seeds_needed']} seeds per arm would decide" if c.get("seeds_needed") else ""
        cells = [
            html.escape(c["text"]),
            f"<span class='num'>{d['iqm']:+.4g} [{d['ci_low']:+.4g}, {d['ci_high']:+.4g}]</span>",
            html.escape(_threshold(c)),
            html.escape(f"{c['floor']}: {at:+.4g}" if at is not None else "none"),
            f"<span class='o-{c['outcome']}'>{html.escape(c['outcome'] + why + need)}</span>",
        ]
        comps.append("<tr>" + "".join(f"<td>{x}</td>" for x in cells) + "</tr>")
    links = []
    if fam in pages:
        links.append(f'<a href="{fam}.html#{CLAIMS_ANCHOR}">the family notebook</a>')
    links += [f'<a href="{f}">{Path(f).stem} figure</a>' for f in figures.get(fam, [])]

    def img(kind: str, alt: str) -> str:
        return f"<figure><img src='{images[kind]}' alt='{alt}'></figure>" if kind in images else ""

    body = [
        f"<h1>{r['claim_id']}: {html.escape(r['statement'])}</h1>",
        f"<p class='paper'>{html.escape(r['paper'])} ({html.escape(r['source'])})</p>",
        f"<p>Verdict: <span class='verdict {_verdict_class(r)}'>{html.escape(r['verdict'])}</span>"
        + (
            f" — {html.escape(r['detail'])}"
            if r.get("detail") and r["detail"] not in r["verdict"]
            else ""
        )
        + "</p>",
        *(
            [f"<p>Since the last publication: {html.escape(m)}</p>"]
            if (m := moves.text(r.get("since_published")))
            else []
        ),
        "<h2 id='paper'>The paper</h2>",
        _facts(paper),
        "<h2 id='arms'>Our runs, arm by arm</h2>",
        _facts(ours),
        _learners(r),
        img("arms", "each arm: its seeds, its IQM and 95% CI"),
        "<h2 id='comparisons'>Comparisons</h2>",
        "<table><thead><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr></thead><tbody>",
        *comps,
        "</tbody></table>",
        img("comparisons", "each comparison's difference with its 95% CI"),
        "<h2 id='trends'>Along training</h2>",
        f"<p>{html.escape(trend_text(r))}</p>",
        img("trends", "each comparison's effect at each share of our budget"),
        "<h2 id='budget'>Budget and coverage</h2>",
        _facts(budget),
        *(
            [
                "<h2 id='extra'>Also measured</h2>",
                _facts([(k, str(v)) for k, v in r["extra"].items()]),
            ]
            if r.get("extra")
            else []
        ),
        "<h2 id='deviations'>Deviations from the paper</h2>",
        "<ul>" + "".join(f"<li>{html.escape(d)}</li>" for d in r["deviations"]) + "</ul>",
        f"<p>{' · '.join(links) or 'no notebook here'}</p>",
    ]
    return page(f"memrl — {r['claim_id']}", "\n".join(body), pages)


def _claim_figures(r: dict[str, Any], folder: Path) -> dict[str, str]:
    """The claim page's figures, written into ``folder``; kind -> path relative to the site."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from memrl.plots import arms_strip, forest, trend_lines

    out = {}
    for kind, draw in (
        ("arms", arms_strip),
        ("comparisons", lambda r: forest([r])),
        ("trends", trend_lines),
    ):
        fig = draw(r)
        if fig is None:
            continue
        name = f"{r['claim_id']}-{kind}.png"
        fig.savefig(folder / name, dpi=100)
        plt.close(fig)
        out[kind] = f"{folder.name}/{name}"
    return out


def _forest(rows: list[dict[str, Any]], path: Path) -> None:
    """The forest plot of every claim's comparisons (the site's first screen)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from memrl.plots import forest

    fig = forest(rows)
    if fig is None:  # no judged comparisons: an empty picture keeps the page's link whole
        fig = plt.figure(figsize=(4, 1))
    fig.savefig(path, dpi=90)
    plt.close(fig)


def notebook_page(ipynb: Path, title: str, pages: dict[str, str]) -> str:
    """An executed notebook as a page: nbconvert's ``basic`` template (no scripts, images
    as data URIs) in our own shell."""
    import nbformat
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(template_name="basic")
    body, _ = exporter.from_notebook_node(nbformat.read(ipynb, as_version=4))
    body = re.sub(r"<script\b.*?</script>", "", body, flags=re.S)  # widget state, if any
    return page(title, body, pages)


def build(results: Path, out: Path) -> Path:
    """Write the site for ``results`` into ``out`` (replaced whole, only once complete)."""

    rows = load_rows(results)
    listed = contents(results)["families"] or [
        {"name": r["family"], "title": r["family"]} for r in rows
    ]
    titles = {f["name"]: f["title"] for f in listed}
    staging = out.parent / f".{out.name}.staging"
    shutil.rmtree(staging, ignore_errors=True)
    tmp = staging / out.name
    tmp.mkdir(parents=True)
    try:
        notebooks = {name: results / name / f"{name}.ipynb" for name in titles}
        pages = {name: titles[name] for name, nb in notebooks.items() if nb.is_file()}
        figures: dict[str, list[str]] = {}
        for name in titles:
            if name in pages:
                html_page = notebook_page(notebooks[name], titles[name], pages)
                (tmp / f"{name}.html").write_text(html_page)
            src = results / name / "figures"
            if src.is_dir():
                dst = tmp / "figures" / name
                shutil.copytree(src, dst)
                figures[name] = sorted(f"figures/{name}/{p.name}" for p in dst.glob("*.png"))
        _forest(rows, tmp / "forest.png")
        (tmp / "claims").mkdir()
        for r in rows:
            images = _claim_figures(r, tmp / "claims")
            (tmp / claim_href(r)).write_text(claim_page(r, pages, figures, images))
        profile = Path(results).resolve().name
        (tmp / "index.html").write_text(
            index(rows, pages, figures, sections(results), profile, missing_claims(results, rows))
        )
        publish(staging, out.parent)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    problems = check(out)
    if problems:
        raise RuntimeError("the site has broken links:\n  " + "\n  ".join(problems))
    return out / "index.html"


_REF = re.compile(r"""\b(src|href)\s*=\s*["']([^"']*)["']""", re.I)


def check(site: Path) -> list[str]:
    """Problems with the site's pages: a local link or image that does not resolve (anchors
    included), or anything loaded (``src``) from the network. Links out (``href`` to
    http) are allowed: they are not loaded."""
    problems = []
    texts = {p.name: p.read_text() for p in sorted(site.glob("*.html"))}
    ids = {
        name: set(re.findall(r"""\bid\s*=\s*["']([^"']+)["']""", text))
        for name, text in texts.items()
    }
    for name, text in texts.items():
        p = site / name
        for attr, ref in _REF.findall(text):
            if ref.startswith("data:") or (
                attr.lower() == "href" and ref.startswith(("http://", "https://", "mailto:"))
            ):
                continue
            if re.match(r"^[a-z]+:|^//", ref, re.I):
                problems.append(f"{p.name}: {attr}={ref} is loaded from elsewhere")
                continue
            path, _, anchor = ref.partition("#")
            target = (p.parent / path) if path else p
            if not target.is_file():
                problems.append(f"{p.name}: {attr}={ref} does not exist")
            elif anchor and target.suffix == ".html" and anchor not in ids.get(target.name, ()):
                problems.append(f"{p.name}: {attr}={ref}: no element with id '{anchor}'")
    return problems
