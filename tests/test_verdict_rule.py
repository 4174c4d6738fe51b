"""The verdict rule tried as a statistician would: its error rates by simulation.

Arms of 5 and 10 seeds with normal per-seed scores (sd 1). Under no effect a *beats*
comparison must hold in <= 5% of experiments; under a true loss of 2δ a *matches*
comparison must hold in <= 5%; under an effect of 2 seed-sd a *beats* comparison must hold
in >= 80% at 10 seeds. ``python tests/test_verdict_rule.py`` measures the rates the report
states (:data:`memrl.stats.compare.MEASURED_RATES`) with more experiments.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from memrl.stats.compare import BEATS, HOLDS, MATCHES, judge

DELTA = 0.5  # the matches margin, in seed-sd


def holds_rate(n: int, shift: float, relation: str, experiments: int, seed: int = 0) -> float:
    """Share of simulated experiments (``n`` seeds per arm, true difference ``shift`` sd) in
    which the comparison holds."""
    rng = np.random.default_rng([seed, n, 1000 + int(100 * shift)])
    held = 0
    for i in range(experiments):
        a, b = rng.normal(shift, 1.0, n), rng.normal(0.0, 1.0, n)
        margin = DELTA if relation == MATCHES else None
        held += judge(a, b, relation, True, seed=i, margin=margin).outcome == HOLDS
    return held / experiments


SCENARIOS = {  # name: (true difference in sd, relation, bound, "max" or "min")
    "no effect, beats": (0.0, BEATS, 0.05, "max"),
    "loss of 2δ, matches": (-2 * DELTA, MATCHES, 0.05, "max"),
    "effect of 2 sd, beats": (2.0, BEATS, 0.80, "min"),
}


@pytest.mark.parametrize("n", [5, 10])
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_error_rates(scenario: str, n: int) -> None:
    shift, relation, bound, kind = SCENARIOS[scenario]
    if kind == "min" and n < 10:
        pytest.skip("the power requirement is stated at 10 seeds")
    rate = holds_rate(n, shift, relation, experiments=300)
    if kind == "max":
        assert rate <= bound, f"{scenario} at {n} seeds holds in {rate:.1%} (> {bound:.0%})"
    else:
        assert rate >= bound, f"{scenario} at {n} seeds holds in {rate:.1%} (< {bound:.0%})"


def test_the_rule_can_fail() -> None:
    """The same test flags a rule that lets a true loss pass: the old "A's CI reaches B's
    IQM" rule holds a *matches* comparison under a loss of one seed-sd about half the time."""
    rng = np.random.default_rng(1)
    old = 0
    for _ in range(300):
        a, b = rng.normal(-1.0, 1.0, 5), rng.normal(0.0, 1.0, 5)
        hi = np.quantile([np.mean(rng.choice(a, 5)) for _ in range(200)], 0.975)
        old += hi >= np.mean(b)
    assert old / 300 > 0.05  # the old rule would fail the bound above


if __name__ == "__main__":
    experiments = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    for name, (shift, relation, _, _) in SCENARIOS.items():
        for n in (5, 10):
            print(
                f"{name:<24} {n:>2} seeds: holds in {holds_rate(n, shift, relation, experiments, seed=1):.1%}"
            )
