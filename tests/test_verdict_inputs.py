"""Verdict inputs that describe the experiment (issue 71): edges read on the arms as run,
a constant never clears a floor for an arm at it, pairing and copies wherever arms share
items, per-seed universal statements, bootstrap tails stable to 2 significant digits."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from test_stats import _claim as claim_of_stats

from memrl.stats.bootstrap import arm
from memrl.stats.claims import (
    INCONCLUSIVE,
    Claim,
    ClaimResult,
    Comparison,
    PaperEffect,
)


def _claim(cid: str = "VI", effect: PaperEffect | None = None) -> Claim:
    return replace(claim_of_stats(regime="early", cid=cid), paper_effect=effect)


def _result(est: dict, comps: list, cid: str = "VI", **kw) -> ClaimResult:
    return ClaimResult(
        claim=_claim(cid, kw.pop("effect", None)),
        estimates=est,
        ours=comps[0].better,
        comparisons=comps,
        budget="-",
        deviations=[],
        power_experiments=0,
        **kw,
    )


def test_the_floor_is_checked_on_the_real_arms_not_the_one_the_papers_number_moved() -> None:
    """LLM-6's case: iteration 5 and iteration 1 both sit inside the floor's spread (neither
    clears it), but iteration 1 + 0.0498 (the paper's +4.98 points) would: the comparison
    against the paper's number is undecided (floor), as its bare direction is."""
    rng = np.random.default_rng(6)
    base = np.linspace(0.55, 0.59, 8)
    floor, it1, it5 = base, rng.permutation(base) + 0.005, rng.permutation(base) + 0.005
    est = {
        "floor": arm(floor, "VI", "floor"),
        "iteration 1": arm(it1, "VI", "iteration 1"),
        "iteration 5": arm(it5, "VI", "iteration 5"),
    }
    effect = PaperEffect("difference", 0.0498, "+4.98 points from iteration 1 to 5", "Fig. 4")
    comp = Comparison("iteration 5", "iteration 1", floor="floor", effect=True)
    result = _result(est, [comp], effect=effect)
    moved = result.against(comp)
    from memrl.stats.compare import clears

    # the premise: the moved arm clears the floor, neither real arm does
    assert clears(moved, est["floor"], True, 1)
    assert not clears(est["iteration 1"], est["floor"], True, 1)
    assert not clears(est["iteration 5"], est["floor"], True, 2)
    (o,) = result.outcomes
    assert o.judgement.reason == "floor" and o.direction.reason == "floor"
    assert result.decision.category == INCONCLUSIVE and result.decision.reason == "floor"


def test_a_constant_never_clears_a_floor_for_an_arm_at_it() -> None:
    """ER-4 at 30-50 bits: DQN+HER, DQN and the random policy score 0 on every seed; the
    paper's level 0.9 against either arm is undecided (floor), as DQN+HER against DQN is;
    an arm that clears the floor is still judged against the level."""
    from memrl.stats.aggregate import reference

    zeros = [0.0] * 5
    est = {
        "DQN+HER": arm(zeros, "ER4", "DQN+HER", statistic="mean"),
        "DQN": arm(zeros, "ER4", "DQN", statistic="mean"),
        "random": arm(zeros, "ER4", "random", statistic="mean"),
        "solved: 0.9": reference(0.9),
    }
    effect = PaperEffect("level", 0.9, "solves 50 bits", "Fig. 1")
    comps = [
        Comparison("DQN+HER", "DQN", floor="random"),
        Comparison("DQN+HER", "solved: 0.9", floor="random", effect=True),
        Comparison("solved: 0.9", "DQN", floor="random", effect=True),
    ]
    result = _result(est, comps, "ER4", effect=effect)
    assert [o.judgement.reason for o in result.outcomes] == ["floor"] * 3
    assert result.decision.category == INCONCLUSIVE and result.decision.reason == "floor"
    learned = dict(est, **{"DQN": arm([0.2, 0.4, 0.2, 0.4, 0.2], "ER4", "x", statistic="mean")})
    low = _result(learned, [comps[2]], "ER4", effect=effect)
    assert low.outcomes[0].judgement.reason != "floor"  # DQN clears it: judged on the level


def test_the_threshold_edge_is_symmetric():
    """A hold needs the CI above the threshold, a fail below it: mirror images, so a CI that
    touches the threshold from either side decides nothing (a fail used to take hi <= thr
    while a hold needed lo > thr), for *beats* (0) and *matches* (−δ) alike; the design's
    sign test agrees."""
    from memrl.stats.aggregate import Estimate
    from memrl.stats.compare import FAILS, HOLDS, UNDECIDED, decided
    from memrl.stats.design import all_beyond

    for thr in (0.0, -0.3):
        touch_below, touch_above = (
            Estimate(thr - 0.5, thr - 1, thr, 5),
            Estimate(thr + 0.5, thr, thr + 1, 5),
        )
        assert decided(touch_below, thr) == decided(touch_above, thr) == UNDECIDED
        assert decided(Estimate(thr - 0.5, thr - 1, thr - 1e-9, 5), thr) == FAILS
        assert decided(Estimate(thr + 0.5, thr + 1e-9, thr + 1, 5), thr) == HOLDS
    at = np.zeros(5)
    assert all_beyond(at, 0.0, True, 0.0) is None  # every seed at the constant: a tie


def test_arms_sharing_items_by_seed_are_resampled_paired_by_seed_and_item():
    """Evaluation episodes seeded by the run's seed (the T-Maze mazes of RO-10/RO-11): at one
    seed every arm faces the same episodes, so a shared per-episode difficulty cancels in the
    difference when seeds and episodes are drawn once for both arms; unpaired, it swamps a
    real +0.3."""
    from memrl.stats.bootstrap import difference, paired, paired_by_seed

    rng = np.random.default_rng(7)
    hard = rng.normal(0.0, 1.0, (6, 40)) + rng.normal(0.0, 1.0, (6, 1))  # by seed and episode
    a_items = hard + 0.3 + rng.normal(0.0, 0.05, hard.shape)
    b_items = hard + rng.normal(0.0, 0.05, hard.shape)
    kw = {"shared": "the mazes of each seed", "per_seed": True}
    a, b = (arm(None, "PS", k, items=list(v), **kw) for k, v in (("a", a_items), ("b", b_items)))
    assert paired_by_seed(a, b) and not paired(a, b)
    d = difference(a, b, True, 1)
    assert 0.2 < d.ci_low < 0.3 < d.ci_high < 0.4
    ua, ub = (arm(None, "PS", k, items=list(v)) for k, v in (("a", a_items), ("b", b_items)))
    assert not paired_by_seed(ua, ub)
    u = difference(ua, ub, True, 1)
    assert u.ci_low < 0 < u.ci_high  # the shared difficulty left in: undecided


def test_a_deterministic_method_entered_per_seed_is_one_run():
    """8 item-for-item copies of one run on a shared item set (AgentFly's deterministic arms)
    are one run, its 8 entries said (``repeats``); a copy of another arm on each entry is
    counted on all 8; runs that differ stay seeds."""
    from memrl.stats.bootstrap import copied_runs

    one = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 1.0]
    tasks = "the test tasks"
    det = arm(None, "DET", "det", items=[one] * 8, shared=tasks)
    assert (det.n, det.repeats, det.entered, det.as_dict()["repeats"]) == (1, 8, 8, 8)
    base = arm(None, "DET", "base", items=[one], shared=tasks)
    assert copied_runs(det, base) == 8
    other = [0.0, 1.0, 1.0, 1.0, 0.0, 1.0, 0.0, 1.0]
    varied = arm(None, "DET", "varied", items=[one, other] * 4, shared=tasks)
    assert (varied.n, varied.repeats) == (8, 1)


def test_claims_judge_on_enough_resamples_for_their_tails():
    """A claim's comparisons are judged on CLAIM_REPS resamples (50,000: the 0.1% tails set by
    ~50 draws, benchmarks/bootstrap_reps.py), arms with items at ITEM_REPS (their price), never
    fewer than REPS; repeated with other bootstrap seeds, a 5-seed difference's ends agree far
    more closely than at 4,000."""
    from memrl.stats.bootstrap import CLAIM_REPS, ITEM_REPS, REPS, difference, reps_for

    rng = np.random.default_rng(0)
    a, b = rng.normal(1.0, 1.0, 5), rng.normal(0.0, 1.0, 5)
    est = {"a": arm(a, "RP", "a"), "b": arm(b, "RP", "b")}
    assert _result(est, [Comparison("a", "b")], floor_reason="none").reps == CLAIM_REPS == 50_000
    items = arm(None, "RP", "i", items=[[1.0, 0.0, 1.0]] * 2 + [[0.0, 1.0, 1.0]])
    assert reps_for(items, est["b"], CLAIM_REPS) == ITEM_REPS and reps_for(a, b, 10) == REPS

    def spread(reps: int) -> float:
        ends = [difference(a, b, True, s, reps).ci_low for s in range(6)]
        return float(np.ptp(ends))

    assert spread(CLAIM_REPS) < spread(REPS) / 3
