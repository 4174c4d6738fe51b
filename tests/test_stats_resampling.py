"""The interval's statistics: a difference with no spread, p and Holm's step-down, and
resampling items within seeds (a deterministic method is one run; items of one group go
together)."""

import numpy as np
import pandas as pd
import pytest

from memrl.stats.bootstrap import arm, difference
from memrl.stats.compare import judge


def test_a_difference_with_no_spread_decides_nothing():
    """Copies of one run (or a grid's one value) on both sides: a CI of width zero."""
    from memrl.stats.compare import NO_SPREAD, UNDECIDED, judge

    j = judge([1.0] * 4, [0.0] * 4, "beats", True, seed=0)
    assert (j.outcome, j.reason) == (UNDECIDED, NO_SPREAD)
    # 3 against 3 could not decide at all: the design is named first
    assert judge([1.0] * 3, [0.0] * 3, "beats", True, seed=0).reason == "design"
    assert j.difference.ci_low == j.difference.ci_high == 1.0
    varied = judge([1.0, 0.9, 1.0, 0.95], [0.0, 0.1, 0.0, 0.05], "beats", True, seed=0)
    assert varied.outcome == "holds" and 0 <= varied.p <= 0.05


def test_p_is_the_level_at_which_the_interval_just_reaches_the_threshold():
    from memrl.stats.bootstrap import _alpha, _tail

    for n in (3, 5, 10, 30):  # (at n = 2 the expanded tail of 99% underflows to 0)
        for level in (0.8, 0.95, 0.99):
            assert _alpha(_tail(n, level), n) == pytest.approx(1 - level, rel=1e-6)
    rng = np.random.default_rng(3)
    outcomes = set()
    for _ in range(40):  # decided at 95% when its p is at most 5% (up to the bootstrap's grain)
        a, b = rng.normal(1, 1, 5), rng.normal(0, 1, 5)
        j = judge(a, b, "beats", True, seed=1)
        _, above, below = difference(a, b, True, 1, p_at=0.0)
        outcomes.add(j.outcome)
        if j.outcome == "holds":
            assert j.p == above <= 0.05 + 1e-3
        else:
            assert min(above, below) > 0.05 - 1e-3
    assert outcomes == {"holds", "undecided"}


def test_holm_keeps_the_decisions_that_survive_its_step_down():
    from memrl.stats.aggregate import Estimate
    from memrl.stats.compare import FAILS, HOLDS, MULTIPLICITY, Judgement, holm

    d = Estimate(1.0, 0.5, 1.5, 5)

    def j(outcome, p=None, reason=""):
        return Judgement(d, None, outcome, reason, p=p)

    # k = 3: thresholds 0.05/3, 0.05/2, 0.05 in order of p
    out = holm([j(HOLDS, 0.03), j(FAILS, 0.001), j("undecided", reason="power")])
    assert [o.outcome for o in out] == ["undecided", FAILS, "undecided"]
    assert out[0].reason == MULTIPLICITY and out[0].p == 0.03
    kept = holm([j(HOLDS, 0.01), j(HOLDS, 0.02), j(FAILS, 0.04)])
    assert [o.outcome for o in kept] == [HOLDS, HOLDS, FAILS]  # 0.01 <= .0167, .02 <= .025
    assert holm([j(HOLDS, 0.049)])[0].outcome == HOLDS  # one comparison: no correction


def test_a_deterministic_method_is_one_run_with_its_items_never_copies():
    """One deterministic run over 5 test tasks: its interval is the exact (Clopper–Pearson)
    one over its tasks; copied to 6 "seeds" it would claim a CI of width zero."""
    from scipy import stats

    items = [1.0, 0.0, 1.0, 1.0, 0.0]
    one = arm(None, "T", "det", items=[items])
    ci = stats.binomtest(3, 5).proportion_ci(method="exact")
    assert one.n == 1 and one.iqm == pytest.approx(0.6)
    assert (one.ci_low, one.ci_high) == pytest.approx((ci.low, ci.high))
    copies = arm([0.6] * 6, "T", "copies")
    assert copies.ci_low == copies.ci_high  # what copies pretend
    seeds = arm([0.2, 0.3, 0.25, 0.22, 0.28, 0.26], "T", "seeds")
    # copies decide a comparison that the run's 5 tasks cannot
    assert judge(copies, seeds, "beats", True, 0).outcome == "holds"
    assert judge(one, seeds, "beats", True, 0).outcome == "undecided"


def test_items_within_seeds_widen_what_seeds_alone_show():
    """Three seeds with equal means over noisy test questions: over seeds alone the CI has
    no width; resampling the questions within each seed gives the spread they carry."""
    rng = np.random.default_rng(0)
    base = rng.integers(0, 2, 40).astype(float)
    runs = [list(rng.permutation(base)) for _ in range(3)]  # same mean, other questions
    plain = arm([np.mean(r) for r in runs], "T", "plain")
    nested = arm(None, "T", "nested", items=runs)
    assert plain.ci_low == plain.ci_high
    assert nested.ci_high - nested.ci_low > 0.1
    with pytest.raises(ValueError, match="mean of its items"):
        arm([0.1, 0.2, 0.3], "T", "bad", items=runs)


def test_items_of_one_group_are_resampled_together():
    """Questions of one conversation share its memory bank: resampled by conversation, the
    interval of correlated questions is wider than if each question were independent."""
    convs = np.repeat(np.arange(6), 10)
    values = (convs % 2).astype(float)  # a conversation's questions all right or all wrong
    by_question = arm(None, "T", "q", items=[list(values)])
    by_conversation = arm(None, "T", "c", items=[list(values)], clusters=[list(convs)])
    assert by_conversation.dof == 6
    width = lambda a: a.ci_high - a.ci_low  # noqa: E731
    assert width(by_conversation) > 1.5 * width(by_question)


def test_the_two_stage_bootstrap_covers_the_true_mean():
    """Seeds (sd 0.1) and 20 items per seed (sd 0.3) around a true mean of 0: the 95% CI
    over 5 seeds with items resampled covers 0 in >= 90% of 200 experiments."""
    rng = np.random.default_rng(3)
    hit = 0
    for i in range(200):
        runs = [list(rng.normal(rng.normal(0, 0.1), 0.3, 20)) for _ in range(5)]
        a = arm(None, "cover", str(i), items=runs, statistic="mean")
        hit += a.ci_low <= 0 <= a.ci_high
    assert hit / 200 >= 0.90


def test_a_floor_run_once_needs_its_items():
    from memrl.stats.floors import floor_arm

    one = pd.DataFrame([{"floor": "oracle", "env": "shop", "score": 1.0, "items": [1.0, 1.0]}])
    with pytest.raises(ValueError, match="needs its items"):
        floor_arm(one, "T", "shop", "score", "oracle")
    got = floor_arm(one, "T", "shop", "score", "oracle", items=lambda r: r["items"])
    assert got["oracle · shop"].n == 1 and got["oracle · shop"].ci_low < 1.0


def test_a_share_of_seeds_against_a_constant_is_judged_exactly():
    # every seed succeeding has no bootstrap spread: the share's Clopper-Pearson interval
    # and exact binomial tails judge it (RO-4: a majority of seeds at CartPole's 500)
    from memrl.stats.aggregate import reference
    from memrl.stats.compare import BEATS

    five = judge(arm([1.0] * 5, "T", "five", 500, "mean"), reference(0.5), BEATS, True, 0)
    assert five.outcome == "undecided" and five.reason == "design"  # no outcome decides
    assert five.difference.ci_low < 0 < five.difference.ci_high and five.seeds_needed == 6
    six = judge(arm([1.0] * 6, "T", "six", 500, "mean"), reference(0.5), BEATS, True, 0)
    assert six.outcome == "holds" and six.p == pytest.approx(2 / 64)
    none = judge(arm([0.0] * 6, "T", "none", 500, "mean"), reference(0.5), BEATS, True, 0)
    assert none.outcome == "fails" and none.difference.ci_high < 0
    # the constant on the better side, lower is better: the same test
    flip = judge(reference(0.5), arm([1.0] * 6, "T", "six", 500, "mean"), BEATS, False, 0)
    assert flip.outcome == "holds" and flip.difference == six.difference
