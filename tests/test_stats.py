import json

import numpy as np
import pytest

from memrl.stats.aggregate import Estimate, iqm_ci
from memrl.stats.claims import (
    NOT_REPRODUCED,
    PARTIALLY,
    REPRODUCED,
    Claim,
    ClaimResult,
    Comparison,
    verdict,
)


def test_iqm_ci_is_seeded_and_brackets_the_iqm():
    x = np.array([1.0, 2.0, 3.0, 4.0, 100.0])
    a, b = iqm_ci(x, reps=500, seed=1), iqm_ci(x, reps=500, seed=1)
    assert a == b
    assert a.iqm == pytest.approx(3.0)  # IQM drops the outlier
    assert a.ci_low <= a.iqm <= a.ci_high
    with pytest.raises(ValueError):
        iqm_ci([1.0])
    with pytest.raises(ValueError):
        iqm_ci([1.0, np.nan])


E = {
    "a": Estimate(10, 9, 11, 5),
    "b": Estimate(5, 4, 6, 5),
    "c": Estimate(8, 5, 10.5, 5),
}


@pytest.mark.parametrize(
    "comps, higher, coverage, expected",
    [
        ([("a", "b")], True, True, REPRODUCED),
        ([("a", "b")], True, False, PARTIALLY),
        ([("a", "c")], True, True, PARTIALLY),  # right direction, CIs overlap
        ([("b", "a")], True, True, NOT_REPRODUCED),
        ([("b", "a")], False, True, REPRODUCED),  # lower is better
        ([("a", "b"), ("b", "c")], True, True, NOT_REPRODUCED),
    ],
)
def test_verdict_rule(comps, higher, coverage, expected):
    assert verdict(E, [Comparison(*c) for c in comps], higher, coverage) == expected


@pytest.mark.parametrize(
    "better, worse, higher, holds",
    [
        ("c", "a", True, True),  # c's CI (5..10.5) reaches a's IQM 10: no significant loss
        ("b", "a", True, False),  # b's CI tops out at 6 < 10
        ("a", "b", True, True),  # beating is matching too
        ("a", "b", False, False),  # lower is better: a (10) is a loss against b (5)
    ],
)
def test_matches_or_beats_relation(better, worse, higher, holds):
    from memrl.stats.claims import MATCHES

    got = verdict(E, [Comparison(better, worse, MATCHES)], higher, True)
    assert got == (REPRODUCED if holds else NOT_REPRODUCED)
    assert str(Comparison(better, worse, MATCHES)) == f"{better} >= {worse}"
    with pytest.raises(ValueError):
        Comparison("a", "b", "roughly")


def test_verdict_needs_known_names():
    with pytest.raises(KeyError):
        verdict(E, [Comparison("a", "zzz")], True)
    with pytest.raises(ValueError):
        verdict(E, [], True)


def test_claim_row_and_report(tmp_path):
    from memrl.report import main as report_main

    claim = Claim(
        "experience_replay",
        "X-1",
        "Paper 2020",
        "Fig. 1",
        "a beats b",
        "qualitative",
        "score",
        True,
    )
    res = ClaimResult(claim, dict(E), "a", [Comparison("a", "b")], "10 steps", ["smaller"])
    row = res.to_row()
    assert row["verdict"] == REPRODUCED and row["n_seeds"] == 5
    (tmp_path / "experience_replay").mkdir()
    (tmp_path / "experience_replay" / "claims.json").write_text(json.dumps([row]))
    report_main([str(tmp_path)])
    md = (tmp_path / "REPORT.md").read_text()
    assert "| experience_replay | X-1 |" in md and "**reproduced**" in md
    rep = json.loads((tmp_path / "report.json").read_text())
    assert {
        "family",
        "claim_id",
        "paper",
        "source",
        "paper_value",
        "metric",
        "ours",
        "n_seeds",
        "budget",
        "verdict",
        "deviations",
    } <= set(rep[0])
    assert rep[0]["ours"] == {"iqm": 10, "ci_low": 9, "ci_high": 11}


def test_report_without_claims_fails(tmp_path):
    from memrl.report import main as report_main

    with pytest.raises(FileNotFoundError):
        report_main([str(tmp_path)])


def test_per_axis_iqm_agrees_with_rliable():
    from rliable import metrics

    from memrl.stats.aggregate import iqm

    x = np.random.default_rng(0).normal(size=(7, 4))
    for j in range(4):
        assert iqm(x)[j] == pytest.approx(metrics.aggregate_iqm(x[:, j]))
