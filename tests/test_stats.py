import json

import numpy as np
import pandas as pd
import pytest

from memrl.stats.aggregate import Estimate, iqm, iqm_ci
from memrl.stats.bootstrap import arm, difference
from memrl.stats.claims import (
    CONTRADICTED,
    MIXED,
    NOT_REPRODUCED,
    PARTIALLY,
    REPRODUCED,
    Claim,
    ClaimResult,
    Comparison,
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


def _arms(**values) -> dict:
    from memrl.stats.bootstrap import arm

    return {k: arm(v, "T", k) for k, v in values.items()}


# a clearly above b; c between them with wide spread; f: the floor, far below
E = _arms(
    a=[9.8, 10.0, 10.1, 10.2, 9.9],
    b=[4.9, 5.0, 5.1, 5.2, 4.8],
    c=[5.0, 8.0, 9.0, 12.0, 6.0],
    f=[0.0, 0.1, 0.2, -0.1, 0.05],
    f_hi=[9.0, 10.0, 11.0, 10.5, 9.5],  # a floor as high as a and b
    f_top=[20.0, 21.0, 19.0, 20.5, 20.0],  # the floor where lower is better
)


def _claim(higher=True, regime="final", budget=None, cid="T"):
    from memrl.stats.claims import Budget

    return Claim(
        family="f",
        claim_id=cid,
        paper="P",
        source="S",
        statement="s",
        paper_value="v",
        metric="m",
        higher_is_better=higher,
        regime=regime,
        paper_budget=Budget(budget, "env steps") if budget else None,
    )


def _verdict(comps, higher=True, complete=True, floor=None, **kw):
    floor = floor or ("f" if higher else "f_top")
    comps = [c if isinstance(c, Comparison) else Comparison(*c, floor=floor) for c in comps]
    return ClaimResult(
        claim=_claim(higher, **kw),
        estimates=dict(E),
        ours=comps[0].better,
        comparisons=comps,
        budget="b",
        deviations=[],
        coverage_complete=complete,
    ).verdict


def _category(comps, higher=True, complete=True):
    return _verdict(comps, higher, complete).split(" (")[0]


@pytest.mark.parametrize(
    "comps, higher, complete, expected",
    [
        ([("a", "b")], True, True, REPRODUCED),
        ([("a", "b")], True, False, PARTIALLY),
        ([("b", "a")], True, True, NOT_REPRODUCED),
        ([("b", "a")], False, True, REPRODUCED),  # lower is better
        ([("a", "b"), ("b", "a")], True, True, MIXED),  # one holds, one fails
        ([("a", "b"), ("a", "c")], True, True, PARTIALLY),  # one holds, one undecided
        ([("b", "a"), ("c", "a")], True, True, CONTRADICTED),  # its mirror
        ([("b", "a")], True, False, CONTRADICTED),  # a fail on a narrower setup
    ],
)
def test_verdict_rule_on_differences(comps, higher, complete, expected):
    assert _category(comps, higher, complete) == expected


def test_undecided_names_its_reason_and_the_seeds_a_decision_needs():
    got = _verdict([("c", "b")])  # c − b > 0 but its CI reaches below 0
    assert got.startswith("inconclusive (power: ~") and got.endswith("seeds per arm would decide)")
    assert _verdict([("a", "b")], floor="f_hi") == "inconclusive (floor)"  # both at the floor
    # seeds decide only the comparisons not at the floor: the verdict says how many are
    one_side = Comparison("b", "a", floor="f_hi", sides=("b",))
    mixed = _verdict([("c", "b"), one_side])
    assert mixed.startswith("inconclusive (power: ~")
    assert mixed.endswith("seeds per arm would decide; 1 of 2 comparisons sits at the floor)")
    from memrl.stats.claims import comparison_text

    texts = [
        comparison_text(o.as_dict())
        for o in ClaimResult(
            claim=_claim(),
            estimates=dict(E),
            ours="a",
            comparisons=[Comparison("a", "b", floor="f_hi"), one_side],
            budget="b",
            deviations=[],
        ).outcomes
    ]
    assert texts[0].endswith("undecided (both at the floor)")
    assert texts[1].endswith("undecided (b at the floor)")  # the side that must clear it
    below = Claim(
        family="f",
        claim_id="T",
        paper="P",
        source="S",
        statement="s",
        paper_value="v",
        metric="m",
        higher_is_better=True,
        regime="final",
        paper_budget=None,
        below_floor="model scale",
    )

    def result(control=None) -> ClaimResult:
        return ClaimResult(
            claim=below,
            estimates=dict(E),
            ours="a",
            comparisons=[Comparison("a", "b", floor="f_hi")],
            budget="b",
            deviations=[],
            positive_control=control,
        )

    # "model scale" is a reason only where a positive control sits at the floor too
    assert result().verdict == "inconclusive (floor; no positive control shows model scale)"
    at_floor = ("expert memory", E["a"])  # inside the floor's CI, like the methods
    assert result(at_floor).verdict == "inconclusive (model scale)"
    row = result(at_floor).to_row()
    assert row["comparisons"][0]["reason"] == "floor"
    assert row["positive_control"]["clears_floor"] is False
    high = ("expert memory", arm([50.0, 51.0, 52.0, 53.0], "T", "control"))
    assert result(high).verdict == (
        "inconclusive (floor; not model scale: the positive control clears the floor)"
    )
    assert result(high).to_row()["positive_control"]["clears_floor"] is True


def test_matches_is_an_equivalence_test_with_a_declared_margin():
    from memrl.stats.claims import MATCHES, Margin

    wide, narrow = Margin("test", delta=6.0), Margin("test", delta=0.5)
    assert _verdict([Comparison("b", "a", MATCHES, margin=wide, floor="f")]) == REPRODUCED
    assert _verdict([Comparison("b", "a", MATCHES, margin=narrow, floor="f")]) == NOT_REPRODUCED
    assert _verdict([Comparison("a", "b", MATCHES, margin=narrow, floor="f")]) == REPRODUCED
    gap = Margin("10% of the gap", gap_share=0.1)
    assert gap.resolve(10.0, 0.0) == pytest.approx(1.0)
    assert str(Comparison("a", "b", MATCHES, margin=wide)) == "a >= b"
    with pytest.raises(ValueError):
        Comparison("a", "b", MATCHES)  # a matches test without a margin
    with pytest.raises(ValueError):
        Comparison("a", "b", "roughly")


def test_a_claim_names_known_arms_and_a_floor_or_why_not():
    with pytest.raises(KeyError):
        ClaimResult(
            claim=_claim(),
            estimates=dict(E),
            ours="a",
            comparisons=[Comparison("a", "zzz", floor="f")],
            budget="b",
            deviations=[],
        )
    with pytest.raises(ValueError, match="floor"):
        ClaimResult(
            claim=_claim(),
            estimates=dict(E),
            ours="a",
            comparisons=[Comparison("a", "b")],
            budget="b",
            deviations=[],
        )
    ok = ClaimResult(
        claim=_claim(),
        estimates=dict(E),
        ours="a",
        comparisons=[Comparison("a", "b")],
        budget="b",
        deviations=[],
        floor_reason="timing",
    )
    assert ok.to_row()["floor"] is None and ok.to_row()["floor_reason"] == "timing"
    with pytest.raises(ValueError):
        ClaimResult(
            claim=_claim(),
            estimates=dict(E),
            ours="a",
            comparisons=[],
            budget="b",
            deviations=[],
            floor_reason="x",
        )


def test_claim_row_and_report(tmp_path):
    from memrl.families import FAMILIES
    from memrl.report import write as write_report

    claim = Claim(
        family="experience_replay",
        claim_id="X-1",
        paper="Paper 2020",
        source="Fig. 1",
        statement="a beats b",
        paper_value="qualitative",
        metric="score",
        higher_is_better=True,
        regime="final",
        paper_budget=None,
    )
    res = ClaimResult(
        claim=claim,
        estimates=dict(E),
        ours="a",
        comparisons=[Comparison("a", "b", floor="f")],
        budget="10 steps",
        deviations=["smaller"],
    )
    row = res.to_row()
    assert row["verdict"] == REPRODUCED and row["n_seeds"] == 5
    assert row["floor"]["name"] == "f" and row["comparisons"][0]["outcome"] == "holds"
    assert set(row["comparisons"][0]["difference"]) == {"iqm", "ci_low", "ci_high"}
    (tmp_path / "experience_replay").mkdir()
    (tmp_path / "experience_replay" / "claims.json").write_text(json.dumps([row]))
    write_report(tmp_path, list(FAMILIES))
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
        "floor",
        "ceiling",
        "comparisons",
    } <= set(rep[0])
    assert rep[0]["ours"]["iqm"] == pytest.approx(10.0)


def test_report_without_claims_fails(tmp_path):
    from memrl.families import FAMILIES
    from memrl.report import write as write_report

    with pytest.raises(FileNotFoundError):
        write_report(tmp_path, list(FAMILIES))


def test_per_axis_iqm_agrees_with_rliable():
    from rliable import metrics

    from memrl.stats.aggregate import iqm

    x = np.random.default_rng(0).normal(size=(7, 4))
    for j in range(4):
        assert iqm(x)[j] == pytest.approx(metrics.aggregate_iqm(x[:, j]))


# =========================================================================== budget and trend
def test_iqm_is_scipys_trimmed_mean_byte_for_byte():
    """Our IQM skips scipy's argument wrapper, not its arithmetic: the same bytes as
    ``scipy.stats.trim_mean(x, 0.25, axis)`` on bootstrap-shaped draws, odd and even counts,
    integers, one value, and NaN (propagated per slice)."""
    from scipy import stats

    rng = np.random.default_rng(7)
    cases = [(rng.normal(size=(4000, n)), 1) for n in (1, 2, 3, 4, 5, 7, 10)]
    cases += [(rng.normal(size=(5, 3, 8)), a) for a in (0, 1, 2)]
    cases += [(rng.integers(0, 9, 11), 0), (np.array([3.5]), 0)]
    with_nan = rng.normal(size=(6, 4))
    with_nan[2, 1] = np.nan
    cases += [(with_nan, 0), (with_nan, 1), (with_nan.ravel(), 0)]
    for x, axis in cases:
        ours, theirs = np.asarray(iqm(x, axis)), np.asarray(stats.trim_mean(x, 0.25, axis=axis))
        assert ours.tobytes() == theirs.tobytes() and ours.shape == theirs.shape, (x.shape, axis)


def test_a_final_claim_short_of_budget_is_inconclusive_not_refuted():
    from memrl.stats.claims import EARLY, FINAL

    def v(comps, regime, used):
        res = ClaimResult(
            claim=_claim(regime=regime, budget=100),
            estimates=dict(E),
            ours="a",
            comparisons=[Comparison(*c, floor="f") for c in comps],
            budget="b",
            deviations=[],
            used=Budget(used, "env steps") if used else None,
        )
        return res.verdict

    from memrl.stats.claims import Budget

    fails, holds = [("b", "a")], [("a", "b")]
    # a short budget narrows a fail as it narrows a hold: mirrored verdicts
    assert v(fails, FINAL, 10) == "partially contradicted (budget: 10% of the paper's budget)"
    assert v(holds, FINAL, 10) == "partially (budget: 10% of the paper's budget)"
    assert v(fails, FINAL, 50) == NOT_REPRODUCED  # half is enough to say no
    assert v(fails, FINAL, None) == NOT_REPRODUCED  # unknown coverage
    assert v(fails, EARLY, 1) == NOT_REPRODUCED  # early claims look at the first part
    assert v(holds, FINAL, 100) == REPRODUCED
    assert v(holds, EARLY, 1) == REPRODUCED


def test_coverage_needs_one_unit_and_a_declared_regime():
    from memrl.stats.claims import Budget

    claim = Claim(
        family="f",
        claim_id="X-2",
        paper="P",
        source="S",
        statement="s",
        paper_value="v",
        metric="m",
        higher_is_better=True,
        regime="final",
        paper_budget=Budget(50_000, "env steps"),
    )
    res = ClaimResult(
        claim=claim,
        estimates=dict(E),
        ours="a",
        comparisons=[Comparison("b", "a", floor="f")],
        budget="b",
        deviations=[],
        used=Budget(5_000, "env steps"),
    )
    assert res.coverage == pytest.approx(0.1)
    assert res.verdict == "partially contradicted (budget: 10% of the paper's budget)"
    assert res.to_row()["paper_budget"] == "50,000 env steps"
    with pytest.raises(ValueError, match="one unit"):
        ClaimResult(
            claim=claim,
            estimates=dict(E),
            ours="a",
            comparisons=[Comparison("a", "b", floor="f")],
            budget="b",
            deviations=[],
            used=Budget(5, "episodes"),
        )
    with pytest.raises(ValueError, match="regime"):
        Claim(
            family="f",
            claim_id="X-3",
            paper="P",
            source="S",
            statement="s",
            paper_value="v",
            metric="m",
            higher_is_better=True,
            regime="late",
            paper_budget=None,
        )
    with pytest.raises(ValueError):
        Budget(0, "env steps")


def test_effect_matches_rliables_bootstrap_and_is_signed_the_papers_way():
    import warnings

    from rliable import library as rly
    from rliable import metrics

    from memrl.stats.trend import effect

    a, b = np.array([5, 6, 7, 8, 9, 3.0]), np.array([1, 2, 3, 4, 5.0])

    ours = difference(a, b, True, seed=0, reps=20_000, expand=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        point, ci = rly.get_interval_estimates(
            {"d": (a[:, None], b[:, None])},
            lambda x, y: np.array([metrics.aggregate_iqm(x) - metrics.aggregate_iqm(y)]),
            reps=20_000,
            random_state=np.random.RandomState(0),
        )
    assert ours.iqm == pytest.approx(point["d"][0])
    assert ours.ci_low == pytest.approx(ci["d"][0, 0], abs=0.25)
    assert ours.ci_high == pytest.approx(ci["d"][1, 0], abs=0.25)
    wide = effect(a, b, True, seed=0, reps=20_000)  # the verdicts' CI: expanded for few seeds
    assert wide.ci_low < ours.ci_low and wide.ci_high > ours.ci_high
    assert effect(a, b, False, 0).iqm == -ours.iqm  # lower is better: the sign flips
    assert effect(a, 2.0, True, 0).n == 6 and effect(a, 2.0, True, 0).iqm == pytest.approx(4.5)
    with pytest.raises(ValueError):
        effect([1.0], b, True, 0)


@pytest.mark.parametrize(
    "effects, direction, heading",
    [
        ([1, 2, 3, 4], "widening", "the paper's way"),
        ([4, 3, 2, 1], "closing", "the paper's way"),
        ([-2, -1, 1, 2], "flipping", "the paper's way"),
        ([2, 1, -1, -3], "flipping", "against the paper"),
        ([-1, -2, -3, -4], "widening", "against the paper"),
        ([2.0, 2.1, 1.9, 2.05], "steady", "the paper's way"),
    ],
)
def test_trend_direction(effects, direction, heading):
    from memrl.stats.trend import Trend, TrendPoint

    t = Trend(
        "a > b",
        tuple(
            TrendPoint(f, Estimate(v, v - 1, v + 1, 5))
            for f, v in zip((0.25, 0.5, 0.75, 1.0), effects, strict=True)
        ),
    )
    assert (t.direction, t.heading) == (direction, heading)
    assert direction in t.summary() and t.as_dict()["points"][0]["fraction"] == 0.25


def test_trends_skip_checkpoints_without_data():
    from memrl.stats.trend import trends

    a = np.array([[np.nan, 2, 3], [np.nan, 2, 4], [np.nan, 3, 3]])
    b = np.zeros((3, 3))
    claim = Claim(
        family="f",
        claim_id="X",
        paper="P",
        source="S",
        statement="s",
        paper_value="v",
        metric="m",
        higher_is_better=True,
        regime="final",
        paper_budget=None,
    )
    (t,) = trends(
        claim,
        [Comparison("a", "b"), Comparison("a", "zzz")],
        {"a": a, "b": b},
        [0.3, 0.6, 1.0],
        200,
    )
    assert [p.fraction for p in t.points] == [0.6, 1.0]


def test_iqm_points_per_line_and_point_with_cis():
    from memrl.stats.points import iqm_points

    rows = [
        {"method": m, "bits": b, "seed": s, "success": v + 0.01 * s}
        for m, v in (("HER", 0.9), ("DQN", 0.1))
        for b in (20, 5)
        for s in range(5)
    ]
    rows.append({"method": "lone", "bits": 5, "seed": 0, "success": 0.5})
    df = pd.DataFrame(rows)
    got = iqm_points(df, "method", "bits", "success")
    assert list(got.columns) == ["method", "bits", "iqm", "ci_low", "ci_high", "n"]
    assert list(got.method) == ["HER", "HER", "DQN", "DQN", "lone"]  # lines as first seen
    assert list(got.bits) == [5, 20, 5, 20, 5]  # points sorted
    her = got.iloc[0]
    assert her.ci_low <= her.iqm <= her.ci_high and her.n == 5
    assert her.iqm == pytest.approx(iqm(np.array([0.9 + 0.01 * s for s in range(5)])))
    assert got.iloc[-1].n == 1 and np.isnan(got.iloc[-1].ci_low)  # one run: no interval
    assert got.equals(iqm_points(df, "method", "bits", "success"))  # seeded bootstrap


def test_iqm_points_rejects_missing_columns_and_non_finite_values():
    from memrl.stats.points import iqm_points

    df = pd.DataFrame({"method": ["a", "a"], "bits": [5, 5], "success": [1.0, np.nan]})
    with pytest.raises(KeyError, match="n_bits"):
        iqm_points(df, "method", "n_bits", "success")
    with pytest.raises(ValueError, match="non-finite success"):
        iqm_points(df, "method", "bits", "success")


def test_a_mean_arm_counts_the_failed_seed_the_iqm_trims():
    """RO-2's reliability: the share of seeds that succeed is a mean over seeds; the IQM of
    the same 0/1 values trims the failed seed away."""
    from memrl.stats.bootstrap import arm

    hits = [0.0, 1.0, 1.0, 1.0, 1.0]
    assert arm(hits, "X", "a").iqm == 1.0
    share = arm(hits, "X", "a", statistic="mean")
    assert share.iqm == pytest.approx(0.8) and share.as_dict()["statistic"] == "mean"
    all_hit = arm([1.0] * 5, "X", "b", statistic="mean")
    d = difference(share, all_hit, True, seed=0)
    assert d.iqm == pytest.approx(-0.2) and d.ci_low < 0
    with pytest.raises(ValueError, match="statistics differ"):
        difference(share, arm([1.0] * 5, "X", "c"), True, seed=0)


# =========================================================================== margins, seeds
def test_a_matches_outcome_is_shown_at_half_and_twice_its_margin():
    from memrl.stats.bootstrap import arm
    from memrl.stats.compare import Margin

    est = {
        "a": arm([1.0, 1.002, 0.998, 1.001, 0.999], "X-9", "a"),
        "b": arm([1.1, 1.102, 1.098, 1.101, 1.099], "X-9", "b"),
    }
    claim = _claim(regime="early", cid="X-9")
    comp = Comparison("a", "b", "matches or beats", margin=Margin("test", delta=0.15))
    r = ClaimResult(
        claim=claim,
        estimates=est,
        ours="a",
        comparisons=[comp],
        budget="",
        deviations=[],
        floor_reason="test",
    )
    row = r.to_row()["comparisons"][0]
    # a - b = -0.1: above -0.15 (holds), below -0.075 at δ/2 (fails), above -0.3 at 2δ
    assert (row["outcome"], row["at_margin"]) == ("holds", {"0.5δ": "fails", "2δ": "holds"})


def test_a_deterministic_arm_is_named_as_one_run_not_counted_as_the_claims_seeds():
    """LLM-7 read "1 seeds" with GRPO on 6 runs: the Mem0-style heuristic is deterministic,
    one run by design. The claim's seeds are its several-seed arms'; the one-run arms are
    named beside them."""
    import dataclasses

    from memrl.stats.claims import seeds_text

    res = ClaimResult(
        claim=_claim(cid="X-2"),
        estimates={
            "A": arm([1.0, 1.2, 1.1, 0.9, 1.0, 1.3], "X-2", "A"),
            "B": arm(None, "X-2", "B", items=[[0.4, 0.5, 0.6, 0.5]]),
        },
        ours="A",
        comparisons=[Comparison("A", "B")],
        budget="b",
        deviations=[],
        floor_reason="none in this test",
    )
    assert res.n_seeds == 6 and res.one_run == ["B"]
    assert seeds_text(res.n_seeds, res.one_run) == "6 seeds per arm (B: one run)"
    row = res.to_row()
    assert (row["n_seeds"], row["one_run"]) == (6, ["B"])
    single = dataclasses.replace(
        res,
        estimates={
            "A": arm(None, "X-2", "A", items=[[0.9, 1.0, 1.1]]),
            "B": arm(None, "X-2", "B", items=[[0.4, 0.5, 0.6, 0.5]]),
        },
    )
    assert (single.n_seeds, single.one_run) == (1, [])
    assert seeds_text(1) == "1 seed per arm"
