"""The README's first screen and the report's figures: the tally, the verdict table and the
forest image generated from the published report and kept equal to it; the forest's key at
its top and its titles inside the figure; the smoke report says what smoke is."""

from __future__ import annotations

import json
import re

import matplotlib

matplotlib.use("Agg")

from memrl import plots, report  # noqa: E402  (after the backend)
from memrl.families import FAMILIES  # noqa: E402
from memrl.runtime import repo_root  # noqa: E402

ROOT = repo_root()


def published() -> list[dict]:
    return json.loads((ROOT / "results" / "default" / "report.json").read_text())


def test_the_readmes_blocks_are_what_the_published_report_gives():
    """The tally and the verdict table (claim, statement, verdict, one-line reason) are the
    generator's output on results/default/report.json: `python -m memrl.report --readme`."""
    text = (ROOT / "README.md").read_text()
    assert report.readme_text(text, published()) == text, "run python -m memrl.report --readme"
    table = text.split(report._marker("verdicts"), 1)[1].split(report._marker("verdicts", True))[0]
    rows = re.findall(r"^\| \[([A-Z]+-\d+)\]\(docs/history\.md#([a-z]+-\d+)\) \|", table, re.M)
    assert [c for c, _ in rows] == [r["claim_id"] for r in published()]
    history = (ROOT / "docs" / "history.md").read_text()
    for claim_id, anchor in rows:  # each claim links how its verdict moved
        assert anchor == claim_id.lower() and f"\n### {claim_id}\n" in history
    assert max(len(line) for line in table.splitlines()) < 500  # RO-11's cell was 527 alone


def test_the_readmes_forest_image_is_drawn_from_the_published_report():
    svg = (ROOT / report.README_IMAGE).read_text()
    assert report.readme_image(published()) == svg, "run python -m memrl.report --readme"
    for r in published():
        assert f"{r['claim_id']}: {r['category']}" in svg  # text kept as text


def test_the_readmes_first_screen_holds_the_summary_tally_image_and_command():
    text = (ROOT / "README.md").read_text()
    first = text.split("\n## ", 1)[0]  # everything before the first section
    assert "make install && make site" in first
    assert first.index("make install && make site") < first.index(report.README_IMAGE)
    assert report.tally(published()) in first and f"]({report.README_IMAGE})" in first
    prose = re.sub(r"<!--.*?-->|```.*?```|!\[.*?\]\(.*?\)", "", first, flags=re.S)
    assert len(prose.split()) < 250, len(prose.split())  # 2,482 words stood before
    # the two set-up commands stay as they are (tests/test_project.py checks their block)
    assert "\n## Two commands\n" in text


def test_a_readme_without_its_markers_is_an_error():
    import pytest

    with pytest.raises(ValueError, match="no tally block"):
        report.readme_text("# memrl\n", published())


def _long_row(claim_id: str, verdict: str, comparisons: int) -> dict:
    comparison = {
        "text": "Memory-R1 (GRPO) > Mem0-style heuristic + 0.1461",
        "outcome": "fails",
        "reason": "",
        "worse": "b",
        "floor": "floor",
        "margin": 0.05,
        "difference": {"iqm": -0.24, "ci_low": -0.33, "ci_high": -0.16},
    }
    est = {
        n: {"iqm": v, "ci_low": v, "ci_high": v, "n": 6} for n, v in (("b", 0.3), ("floor", 0.1))
    }
    return {
        "claim_id": claim_id,
        "verdict": verdict,
        "category": "partially contradicted",
        "higher_is_better": True,
        "estimates": est,
        "comparisons": [comparison] * comparisons,
    }


def test_the_forests_key_is_at_its_top_and_every_title_inside_it():
    """The site's forest was 6,478 px tall with its key as the last axis label, clipped
    ("x: where a floor-level A woul"); LLM-7/8's titles ran past the figure's right edge."""
    llm7 = (
        "partially contradicted (coverage: a narrower setup than the paper's; Memory-R1 (GRPO) "
        "scores as add only on each of the dialogues' test questions on 5 of 6 seeds)"
    )
    rows = [_long_row("RO-1", "partially (budget)", 6), _long_row("LLM-7", llm7, 1)]
    fig = plots.forest(rows)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    assert fig.legends, "the forest has no key"
    key = fig.legends[0].get_window_extent(renderer)
    tops = [ax.get_window_extent(renderer).y1 for ax in fig.axes]
    assert key.y0 >= max(tops)  # above every panel
    assert key.x0 >= 0 and key.x1 <= fig.bbox.x1
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert {"holds", "fails", "undecided", "A at its floor", "−δ of a 'matches' test"} <= set(
        labels
    )
    for ax in fig.axes:
        title = ax._left_title.get_window_extent(renderer)
        assert title.x1 <= fig.bbox.x1 and title.x0 >= 0, ax._left_title.get_text()
    assert fig.axes[1]._left_title.get_text().replace("\n", " ") == f"LLM-7: {llm7}"


def test_the_smoke_report_says_what_smoke_is_and_which_claims_it_lacks(tmp_path):
    """Under its own header: smoke checks the wiring, every verdict is expected to be
    inconclusive, and a claim the default report has and smoke lacks is named with why (the
    lists smoke's resolved parameters shorten)."""
    default, smoke = tmp_path / "results" / "default", tmp_path / "results" / "smoke"
    fam = FAMILIES[0].name
    row = {**published()[0], "family": fam, "higher_is_better": True}  # a claims.json row
    row |= {"coverage_note": None, "coverage_text": "36%", "extra": {}, "trend_note": "x"}
    for path, rows in ((default, [row, {**row, "claim_id": "RO-99"}]), (smoke, [row])):
        (path / fam).mkdir(parents=True)
        (path / fam / "claims.json").write_text(json.dumps(rows))
    (default / "params.yaml").write_text(f"{fam}:\n  methods: [a, b, c]\n  seeds: 5\n")
    (smoke / "params.yaml").write_text(f"{fam}:\n  methods: [a]\n  seeds: 2\n")
    report.write(default, [FAMILIES[0]])
    assert "# memrl — claims report" in (default / "REPORT.md").read_text()
    report.write(smoke, [FAMILIES[0]])
    text = (smoke / "REPORT.md").read_text()
    assert text.startswith("# memrl — smoke report: the wiring, not the papers")
    assert "checks the wiring" in text and "expected to be inconclusive" in text
    assert (
        "RO-99 is missing: not built: this profile's grid lacks the runs it needs (methods " in text
    )
    assert "leaves out b, c" in text


def test_a_claims_strip_plot_draws_every_seed_of_every_arm():
    """The claim page's arms: one dot per seed (6 + 6 + 5 here), a constant as a diamond."""
    row = {
        "metric": "return",
        "comparisons": [{"floor": "floor"}],
        "estimates": {
            "a": {"iqm": 1.0, "ci_low": 0.5, "ci_high": 1.5, "n": 6, "values": [1.0] * 6},
            "b": {"iqm": 0.0, "ci_low": -0.5, "ci_high": 0.5, "n": 6, "values": [0.0] * 6},
            "floor": {"iqm": -1.0, "ci_low": -1.2, "ci_high": -0.8, "n": 5, "values": [-1.0] * 5},
            "paper: 2": {"iqm": 2.0, "ci_low": 2.0, "ci_high": 2.0, "n": 0, "values": []},
        },
    }
    fig = plots.arms_strip(row)
    dots = [ln for ln in fig.axes[0].lines if ln.get_marker() == "o"]
    assert sum(len(ln.get_xdata()) for ln in dots) == 17
    assert [ln.get_xdata()[0] for ln in fig.axes[0].lines if ln.get_marker() == "D"] == [2.0]
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels == ["paper: 2 (constant)", "floor (5)", "b (6)", "a (6)"]


def test_the_one_line_reason_counts_collapses_and_does_not_repeat_a_mixed_count():
    """LLM-6's README cell listed ten "A scores as B on each of ... seeds" sentences and a
    mixed verdict's detail repeated the counts its line ends with: the line counts the
    collapses (REPORT.md names them) and says a mixed verdict's counts once."""
    outcome = {"outcome": "undecided", "reason": "floor"}
    collapses = "; ".join(
        f"a{i} scores as b on each of the tasks on 2 of 8 seeds" for i in range(3)
    )
    row = {
        "category": "inconclusive",
        "detail": f"not model scale: the positive control clears the floor; {collapses}",
        "comparisons": [outcome, outcome],
    }
    assert report.why_line(row) == (
        "not model scale: the positive control clears the floor; 3 pairs of arms score alike "
        "item for item on some seeds (named in REPORT.md); of 2 comparisons, 2 undecided (floor)"
    )
    mixed = {
        "category": "mixed",
        "detail": "1 of 2 comparisons hold, 1 fail; 3.3% of the paper's budget",
        "comparisons": [{"outcome": "holds"}, {"outcome": "fails"}],
    }
    assert report.why_line(mixed) == "3.3% of the paper's budget; of 2 comparisons, 1 hold, 1 fail"


def test_the_one_line_reason_drops_long_asides_and_keeps_short_ones():
    """LLM-7/8's cells ran to 751 characters with the learner control's numbers in
    parentheses: the line keeps ``Memory-R1 (GRPO)`` and drops the numbers REPORT.md gives."""
    row = {
        "category": "inconclusive",
        "detail": "Memory-R1 (GRPO) does not learn (0.6483 [0.6057, 0.6882] against the "
        "heuristic (Mem0-style) 0.6441; difference +0.004 [-0.08, +0.08])",
        "comparisons": [{"outcome": "fails"}],
    }
    assert report.why_line(row) == "Memory-R1 (GRPO) does not learn; its one comparison fails"
