"""Verdict inputs that describe the experiment (issue 71): edges read on the arms as run,
a constant never clears a floor for an arm at it, pairing and copies wherever arms share
items, per-seed universal statements, bootstrap tails stable to 2 significant digits."""

from __future__ import annotations

import numpy as np

from memrl.stats.bootstrap import arm
from memrl.stats.claims import (
    INCONCLUSIVE,
    Claim,
    ClaimResult,
    Comparison,
    PaperEffect,
)


def _claim(cid: str = "VI", effect: PaperEffect | None = None) -> Claim:
    return Claim(
        family="f",
        claim_id=cid,
        paper="P",
        source="S",
        statement="s",
        paper_value="v",
        metric="m",
        higher_is_better=True,
        regime="early",
        paper_budget=None,
        paper_effect=effect,
    )


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
