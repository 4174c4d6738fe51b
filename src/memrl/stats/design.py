"""What a design can decide: the seeds behind a comparison, before and after it runs.

:func:`design_p` is the smallest one-sided p-value any exact test of a design could reach
(3 seeds against 3: 1/20; 5 against a constant: 1/32); :func:`decidable` says whether some
outcome could decide at 95%, :func:`seeds_for_design` the fewest seeds that could, and
:func:`seeds_for_power` the seeds at which the rule decides in 80% of experiments
simulated from the observed seeds. Comparisons take their threshold: 0 for *beats*, −δ for
*matches or beats*.
"""

from __future__ import annotations

import math

import numpy as np

from memrl.stats.bootstrap import (
    LEVEL,
    REPS,
    STATISTICS,
    Arm,
    Estimate,
    _exact,
    _sample,
    _share_against_constant,
    _tail,
)


def units(side) -> int | None:
    """How many exchangeable units an arm has for the design bound: its seeds; None for a
    constant or one run (a deterministic method: its items vary, not its seeds)."""
    if isinstance(side, Arm):
        return side.n if side.n >= 2 else None
    if isinstance(side, Estimate) or np.ndim(side) == 0:
        return None
    return len(np.asarray(side).reshape(-1))


def design_p(better, worse) -> float:
    """The smallest one-sided p-value any exact test of this design could reach: with two
    arms of n_a and n_b seeds, 1 / C(n_a + n_b, n_a) (every seed of one arm above every seed
    of the other, under exchangeable seeds); against a constant or one run, 2^-n (every seed
    above it, under a symmetric null); two one-run arms: over their item groups. Where it
    exceeds α/2, no interval from these seeds can decide at 95%, whatever the bootstrap
    says: 3 seeds against 3 reach 1/20, against a constant 1/8."""
    na, nb = units(better), units(worse)
    if na is None and nb is None:  # two deterministic runs: their item groups are the units
        na, nb = (s.dof if isinstance(s, Arm) else None for s in (better, worse))
        if na is None or nb is None:
            return 0.0 if (na or nb) else 1.0
    if na is None or nb is None:
        return smallest_p(na or nb)
    return smallest_p(na, nb)


def smallest_p(n: int, m: int | None = None) -> float:
    """:func:`design_p` of ``n`` seeds against ``m`` (None: against a constant)."""
    return 2.0**-n if m is None else 1.0 / math.comb(n + m, n)


def two_arms(better, worse) -> bool:
    """Both sides have seeds (else one is a constant or one deterministic run)."""
    return units(better) is not None and units(worse) is not None


def seeds_for_design(better, worse, level: float = LEVEL, threshold: float = 0.0) -> int:
    """The fewest seeds per seeded arm at which some outcome could decide: :func:`design_p`
    reaching (1 − level) / 2, or for a share of seeds against a constant, its exact interval
    at all or no successes clearing ``threshold``."""
    two = two_arms(better, worse)
    share = _share_against_constant(better, worse, 1.0)
    n = 2
    while True:
        if share is not None:
            c, s = share[2], share[3]
            ends = [sorted(s * (v - c) for v in _exact(k, n)) for k in (0, n)]
            if any(lo > threshold or hi < threshold for lo, hi in ends):
                return n
        elif smallest_p(n, n if two else None) <= (1 - level) / 2:
            return n
        n += 1


def seeds_for_power(
    better,
    worse,
    threshold: float,
    higher_is_better: bool,
    seed: int,
    *,
    power: float = 0.8,
    experiments: int = 100,
    cap: int = 100,
) -> int | None:
    """The seeds per arm at which the rule decides (holds or fails) in ``power`` of simulated
    experiments, each seed drawn from an arm's observed seeds (the observed effect and spread
    taken as true; a constant stays constant). None: not within ``cap`` seeds."""
    pools = [
        None if units(s) is None else np.asarray(_sample(s)[0], dtype=np.float64)
        for s in (better, worse)
    ]
    consts = [_sample(s)[1] for s in (better, worse)]
    statistic = next((s.statistic for s in (better, worse) if isinstance(s, Arm)), "iqm")
    sign = 1.0 if higher_is_better else -1.0
    rng = np.random.default_rng(seed)
    two = two_arms(better, worse)

    share = _share_against_constant(better, worse, sign)

    def exact_rate(n: int) -> float:
        """A share against a constant: the probability over k ~ Binomial(n, observed share)
        that the exact interval decides."""
        from scipy import stats

        k, seeds, c, s = share
        q = k / seeds
        ks = np.arange(n + 1)
        lo_hi = np.array([_exact(int(k), n) for k in ks])
        d = np.sort(s * (lo_hi - c), axis=1)
        hit = (d[:, 0] > threshold) | (d[:, 1] < threshold)
        return float(np.sum(stats.binom.pmf(ks, n, q)[hit]))

    def rate(n: int) -> float:
        """Share of ``experiments`` at ``n`` seeds per arm the rule decides (vectorised:
        the same expanded-percentile interval as :func:`difference`)."""
        if share is not None:
            return exact_rate(n)
        if smallest_p(n, n if two else None) > (1 - LEVEL) / 2:
            return 0.0
        reps = REPS if n <= 10 else 1000  # the expanded tails are ~0.1% only at few seeds
        t, hits = _tail(n), 0
        for start in range(0, experiments, 10):  # 10 experiments at a time bounds memory
            e = min(10, experiments - start)
            boot = []
            for pool, c in zip(pools, consts, strict=True):
                if pool is None:
                    boot.append(c)
                    continue
                x = pool[rng.integers(0, len(pool), (e, 1, n))]
                idx = rng.integers(0, n, (e, reps, n))
                boot.append(STATISTICS[statistic](np.take_along_axis(x, idx, axis=2), axis=2))
            dist = sign * (np.asarray(boot[0]) - np.asarray(boot[1]))
            lo, hi = np.quantile(dist, [t, 1 - t], axis=-1)
            hits += int(np.sum(((lo > threshold) | (hi < threshold)) & (hi > lo)))
        return hits / experiments

    now = max((n for n in (units(better), units(worse)) if n), default=1)
    lo, hi = now, now + 1  # undecided at ``now`` seeds
    while rate(hi) < power:  # double until it decides often enough
        lo, hi = hi, hi * 2
        if hi > cap:
            return None
    while hi - lo > 1:  # then bisect
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if rate(mid) >= power else (mid, hi)
    return hi


def all_beyond(better, worse, higher_is_better: bool, threshold: float) -> bool | None:
    """One side seeds and the other a constant: True when every seed's difference lies
    beyond ``threshold``, False when every one lies below it, else (or for two arms)
    None: the sign test's view of seeds that all land on one value."""
    a, b = _sample(better)[0], _sample(worse)[0]
    if (a is None) == (b is None) or units(better if a is not None else worse) is None:
        return None
    sign = 1.0 if higher_is_better else -1.0
    d = sign * (a - _sample(worse)[1]) if a is not None else sign * (_sample(better)[1] - b)
    if np.all(d > threshold):
        return True
    return False if np.all(d < threshold) else None


def decidable(better, worse, threshold: float, higher_is_better: bool) -> bool:
    """Whether some outcome of this design (its seeds, its items) could decide at 95%: a
    share of seeds against a constant by its exact interval at all and at no successes;
    anything else by :func:`design_p` (3 seeds against 3, or 5 against a constant, cannot)."""
    share = _share_against_constant(better, worse, 1.0 if higher_is_better else -1.0)
    if share is not None:
        _, n, c, s = share
        for k in (0, n):
            lo, hi = sorted(s * (v - c) for v in _exact(k, n))
            if lo > threshold or hi < threshold:
                return True
        return False
    return design_p(better, worse) <= (1 - LEVEL) / 2
