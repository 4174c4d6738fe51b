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

from memrl.report import (
    conditions_text,
    contents,
    control_text,
    floor_text,
    load_rows,
    sections,
    trend_text,
)
from memrl.runtime import publish
from memrl.stats.claims import VERDICTS, comparison_text

CLAIMS_ANCHOR = "Claims"  # the notebooks' "## Claims" heading, as nbconvert ids it
CLAIM_FIGURES = ("claims", "trends")  # the figures a claim's row links (its family page has all)
STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 1500px; color: #222;
       padding: 0 1rem; line-height: 1.4; }
table { border-collapse: collapse; width: 100%; font-size: 0.85rem; }
th, td { border: 1px solid #ccc; padding: 0.3rem 0.5rem; vertical-align: top; text-align: left; }
th { background: #f3f3f3; position: sticky; top: 0; }
td.num { white-space: nowrap; font-variant-numeric: tabular-nums; }
.verdict { font-weight: 600; white-space: nowrap; }
.v-reproduced { color: #1a7f37; } .v-partially { color: #9a6700; }
.v-not { color: #cf222e; } .v-inconclusive { color: #6639ba; }
.o-holds { color: #1a7f37; } .o-fails { color: #cf222e; } .o-undecided { color: #57606a; }
figure.forest img { max-width: 900px; }
nav a { margin-right: 1rem; }
img { max-width: 100%; }
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
    return "v-" + r["category"].split()[0]


def _comparisons(r: dict[str, Any]) -> str:
    """One line per comparison: its difference with the CI, coloured by its outcome."""
    return "<br>".join(
        f"<span class='o-{c['outcome']}'>{html.escape(comparison_text(c))}</span>"
        for c in r["comparisons"]
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


def index(
    rows: list[dict[str, Any]],
    pages: dict[str, str],
    figures: dict[str, list[str]],
    extra: list[dict[str, Any]] | None = None,
) -> str:
    """The claims table: one row per claim, links to its family's page and figures."""
    counts = {v: n for v in VERDICTS if (n := sum(r["category"] == v for r in rows))}
    head = [
        "claim",
        "paper",
        "statement",
        "paper's value",
        "comparisons: A − B [95% CI], outcome",
        "floor",
        "ours: IQM [95% CI]",
        "seeds",
        "regime",
        "coverage",
        "trend",
        "verdict",
        "notebook and figures",
    ]
    lines = [
        "<h1>memrl — does memory in RL do what the papers say?</h1>",
        f"<p>{len(rows)} claims: "
        + ", ".join(f"{n} {html.escape(v)}" for v, n in counts.items())
        + ". Each comparison is judged on the difference of two IQMs over seeds with its "
        "95% bootstrap CI: <em>beats</em> holds when the CI is above 0, <em>matches</em> when "
        "it is above −δ; a comparison whose arms both sit at the floor (a policy with no "
        "learning or no knowledge), or whose baseline does where the claim needs it to have "
        "learned, is undecided. <em>Coverage</em>: our budget / the "
        "paper's.</p>",
        "<figure class='forest'><img src='forest.png' alt='every comparison: its difference "
        "with the 95% CI, coloured by outcome'><figcaption>Every comparison: difference with "
        "its 95% CI (green holds, red fails, grey undecided), the zero line, −δ of a "
        "<em>matches</em> test (dashed), where a floor-level method would sit (x).</figcaption>"
        "</figure>",
        "<table><thead><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr></thead><tbody>",
    ]
    for r in rows:
        fam = r["family"]
        where = []
        if fam in pages:
            where.append(f'<a href="{fam}.html#{CLAIMS_ANCHOR}">notebook</a>')
        figs = figures.get(fam, [])
        figs = [f for f in figs if Path(f).stem in CLAIM_FIGURES] or figs
        where += [f'<a href="{p}">{Path(p).stem} figure</a>' for p in figs]
        cells = [
            f"<strong id='{r['claim_id']}'>{r['claim_id']}</strong>",
            html.escape(f"{r['paper']} ({r['source']})"),
            html.escape(r["statement"]),
            html.escape(r["paper_value"]),
            _comparisons(r),
            "<br>".join(
                html.escape(t)
                for t in [
                    floor_text(r),
                    *(
                        ["conditions: " + conditions_text(r["conditions"])]
                        if r.get("conditions")
                        else []
                    ),
                    *(
                        ["positive control: " + control_text(r["positive_control"], detail=False)]
                        if r.get("positive_control")
                        else []
                    ),
                ]
            ),
            f"{html.escape(r['ours_name'])}: <span class='num'>{_estimate(r['ours'])}</span>",
            str(r["n_seeds"]),
            r["regime"],
            html.escape(r["coverage_text"]),
            html.escape(trend_text(r)),
            f"<span class='verdict {_verdict_class(r)}'>{html.escape(r['verdict'])}</span>",
            " · ".join(where) or "—",
        ]
        lines.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    lines.append("</tbody></table>")
    for sec in extra or []:  # e.g. the memory card; its figure as copied beside the pages
        fam, _, name = sec.get("figure", "").partition("/figures/")
        figure = f"figures/{fam}/{name}"
        lines.append(section_html(sec, figure if figure in figures.get(fam, []) else ""))
    return page("memrl — claims", "\n".join(lines), pages)


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
        (tmp / "index.html").write_text(index(rows, pages, figures, sections(results)))
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
