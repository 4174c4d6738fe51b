"""Arms and the bootstrap of their difference: the estimator every comparison is judged on.

An :class:`Arm` is one method's per-seed values (with, where a run's value is a mean over
items, each run's items and their groups) and its IQM with a 95% CI. :func:`difference` is
IQM(A) − IQM(B) with a CI from a bootstrap over what varies: each arm's seeds, and items
within seeds (two-stage); arms scored on the same items (``Arm.shared``) are resampled
*paired*, one draw of the item groups per replicate for every run of both. A share of seeds
(0 or 1 per seed) against a constant gets the exact Clopper–Pearson interval instead (a
bootstrap of seeds that all succeed has no width).

The CI is a percentile bootstrap *expanded* for small samples (Hesterberg 2015, "What
teachers should know about the bootstrap", Sec. 5.1): the plain percentile interval of an
IQM over 5 seeds covers ~90%, not 95%, so the tail probability α/2 is replaced by
Φ(−√(n/(n−1))·t_{α/2, n−1}), n the smaller arm's seed count.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from memrl.stats.aggregate import Estimate, iqm, stable_seed

LEVEL = 0.95
REPS = 4000  # bootstrap resamples at the least (an arm's CI, a floor check, a trend)
# bootstrap resamples per judged comparison (benchmarks/bootstrap_reps.py, issue 71): the
# expanded tails sit at ~0.1% for 5 seeds, set by ~4 draws at 4,000 resamples (a repeated
# difference's ends moved by a Monte-Carlo sd of 0.05-0.07 at 5 seeds); at 50,000 (~50
# draws) the sd is 0.004-0.007 and the ends agree to 2 significant digits but at a rounding
# boundary, at ~0.13-0.27 s per difference (4,000: 13-29 ms). Arms with items resample every
# run's items per (replicate, seed slot): 8 runs x 40 items cost ~2.5 s per difference at
# 4,000, so they stop at ITEM_REPS (not yet 2-digit stable there: a deviation, priced)
CLAIM_REPS = 50_000
ITEM_REPS = 10_000


def reps_for(better, worse, reps: int) -> int:
    """Resamples for a difference of ``better`` and ``worse``: ``reps``, at least
    :data:`REPS`, at most :data:`ITEM_REPS` where an arm resamples items (their price)."""
    if any(isinstance(s, Arm) and s.items for s in (better, worse)):
        reps = min(reps, ITEM_REPS)
    return max(reps, REPS)


def _mean(x: np.ndarray, axis: int = 0) -> np.ndarray:
    return np.mean(x, axis=axis)


# over seeds: the IQM (rliable's default), or the mean where no seed may be trimmed (a share
# of seeds that succeed: a failed seed must count)
STATISTICS = {"iqm": iqm, "mean": _mean}


@dataclass(frozen=True)
class Arm:
    """One method's per-seed values with their IQM (or ``statistic``) and 95% CI (an
    :class:`Estimate`, whose ``iqm`` field then holds that statistic).

    ``items``: where a run's value is the mean over items (test questions, test tasks,
    evaluation episodes), each run's per-item values, and ``clusters`` the group each item
    belongs to (items of one group are resampled together: questions of one conversation).
    The bootstrap then resamples what varies: seeds, and items within each seed. A
    deterministic method is one run with its items, never copied per seed."""

    values: tuple[float, ...]
    estimate: Estimate
    statistic: str = "iqm"
    items: tuple[tuple[float, ...], ...] = ()
    clusters: tuple[tuple[int, ...], ...] = ()
    shared: str = ""  # the item set it is scored on: arms naming the same one are paired
    # the item set differs by seed but is the same for every arm at one seed (evaluation
    # episodes seeded by the run's seed): arms naming it are paired by seed and by item
    per_seed: bool = False
    repeats: int = 1  # runs of a deterministic method, item for item alike, entered as one

    @property
    def iqm(self) -> float:
        return self.estimate.iqm

    @property
    def ci_low(self) -> float:
        return self.estimate.ci_low

    @property
    def ci_high(self) -> float:
        return self.estimate.ci_high

    @property
    def n(self) -> int:
        return self.estimate.n

    @property
    def entered(self) -> int:
        """The runs the grid entered: its seeds, or a deterministic run's repeats."""
        return self.n * self.repeats

    @property
    def dof(self) -> int:
        """The count the small-sample expansion uses: seeds, or one run's item groups."""
        return self.n if self.n >= 2 or not self.items else len(set(self.clusters[0]))

    def as_dict(self) -> dict:
        out = {**self.estimate.as_dict(), "values": list(self.values)}
        if self.items:
            out["items_per_run"] = [len(i) for i in self.items]
            out["clusters_per_run"] = [len(set(c)) for c in self.clusters]
        if self.repeats > 1:
            out["repeats"] = self.repeats  # one run, entered that many times by the grid
        return out if self.statistic == "iqm" else {**out, "statistic": self.statistic}

    def __str__(self) -> str:
        return str(self.estimate)


def _tail(n: int, level: float = LEVEL) -> float:
    """The expanded percentile's tail probability for ``n`` values (α/2 for large n)."""
    from scipy import stats

    a = (1 - level) / 2
    if n < 2:
        return a
    return float(stats.norm.cdf(-math.sqrt(n / (n - 1)) * stats.t.ppf(1 - a, n - 1)))


def _boot(x: np.ndarray, rng: np.random.Generator, reps: int, statistic: str = "iqm") -> np.ndarray:
    return STATISTICS[statistic](x[rng.integers(0, len(x), (reps, len(x)))], axis=1)


def _item_means(values: np.ndarray, clusters: np.ndarray, draw: np.ndarray) -> np.ndarray:
    """Means of one run's items over resamples of its item groups: ``draw`` holds group
    indices (last axis: one draw per group, with replacement, each bringing all its items)."""
    _, group = np.unique(clusters, return_inverse=True)
    sums, counts = np.bincount(group, weights=values), np.bincount(group)
    return sums[draw].sum(-1) / counts[draw].sum(-1)


def _draws(
    side: Arm, rng: np.random.Generator, reps: int, shared: np.ndarray | None = None
) -> tuple[list, np.ndarray | None]:
    """One two-stage resample plan for an arm's runs: per run, its item groups drawn for
    every (replicate, seed slot), or ``shared`` (one draw of groups per replicate, the same
    for every run: a test set all runs answer); and the seeds drawn per replicate (None for
    one run)."""
    n = side.n
    if shared is not None:
        items = [np.broadcast_to(shared[:, None, :], (reps, n, shared.shape[1]))] * n
    else:
        items = [rng.integers(0, k, (reps, n, k)) for k in (len(set(c)) for c in side.clusters)]
    return items, (rng.integers(0, n, (reps, n)) if n > 1 else None)


def _boot_arm(
    side: Arm, rng: np.random.Generator, reps: int, statistic: str, plan=None
) -> np.ndarray:
    """Bootstrap replicates of an arm's statistic: its seeds resampled, and with ``items``
    each drawn seed's items resampled too (a two-stage bootstrap; one run: its items only).
    ``plan``: the draws (:func:`_draws`) to use, shared by paired arms."""
    x = np.asarray(side.values, dtype=np.float64)
    if not side.items:
        return _boot(x, rng, reps, statistic)
    items, pick = plan or _draws(side, rng, reps)
    means = np.stack(
        [
            _item_means(np.asarray(v, float), np.asarray(c), d)
            for v, c, d in zip(side.items, side.clusters, items, strict=True)
        ]
    )  # runs x reps x n: every (replicate, slot) its own item resample of every run
    if pick is None:
        return means[0, :, 0]
    reps = pick.shape[0]
    drawn = means[pick, np.arange(reps)[:, None], np.arange(pick.shape[1])[None, :]]
    return STATISTICS[statistic](drawn, axis=1)


def paired_by_seed(a, b) -> bool:
    """Two arms whose runs at one seed face the same items (``per_seed``: evaluation
    episodes seeded by the run's seed), the same ``shared`` set, the same seeds and every
    run pair with the same item groups: their bootstrap draws the seeds and, within each, the
    item groups once per replicate for both arms."""
    if not (isinstance(a, Arm) and isinstance(b, Arm) and a.shared and a.shared == b.shared):
        return False
    if not (a.per_seed and b.per_seed and a.items and b.items and a.n == b.n >= 2):
        return False
    return all(
        len(x) == len(y) and cx == cy
        for x, y, cx, cy in zip(a.items, b.items, a.clusters, b.clusters, strict=True)
    )


def paired(a, b) -> bool:
    """Two arms scored on the same items: the same ``shared`` set, and every run of both
    with the same item groups in the same order. Their bootstrap then draws one set of item
    groups per replicate for every run of both arms (the test set is what both answer), each
    arm's seeds drawn on their own. Arms whose items are shared by seed instead are
    :func:`paired_by_seed`."""
    if not (isinstance(a, Arm) and isinstance(b, Arm) and a.shared and a.shared == b.shared):
        return False
    if a.per_seed or b.per_seed:
        return False
    runs = [*a.clusters, *b.clusters]
    sizes = {len(r) for r in (*a.items, *b.items)}
    return bool(a.items and b.items) and len(sizes) == 1 and all(c == runs[0] for c in runs)


def identical(a, b) -> bool:
    """Two arms that are copies, whatever their names: equal per-seed values (and per-item
    values) seed by seed, or every run of both the same run (a policy whose every seed
    collapsed onto a deterministic baseline's answers). More seeds of them decide nothing."""
    if not (isinstance(a, Arm) and isinstance(b, Arm)) or not (a.n >= 2 or a.items):
        return False

    def runs(x: Arm) -> list[tuple]:
        return list(zip(x.values, x.items or [()] * x.n, strict=True))

    ra, rb = runs(a), runs(b)
    return ra == rb or (bool(a.items) and len(set(ra + rb)) == 1)


def copied_runs(a, b) -> int:
    """How many of ``a``'s entered runs equal ``b``'s item by item (``b``'s run at the same seed, or
    its one run where ``b`` is deterministic), both scored on the same items: a policy that
    collapsed onto another on those seeds. A run whose items all score alike (every question
    right, every task at the maximum) is a tie at an edge, not a copy, and never counts."""
    if not (isinstance(a, Arm) and isinstance(b, Arm) and a.items and b.items):
        return 0
    if not a.shared or a.shared != b.shared or b.n not in (1, a.n):
        return 0
    theirs = b.items * a.n if b.n == 1 else b.items
    same = sum(
        mine == other and len(set(mine)) > 1 for mine, other in zip(a.items, theirs, strict=True)
    )
    return same * a.repeats  # a run entered several times copies on each of them


def _exact(k: int, n: int, level: float = LEVEL) -> tuple[float, float]:
    """Clopper–Pearson interval of a success share ``k / n``."""
    from scipy import stats

    a = (1 - level) / 2
    lo = stats.beta.ppf(a, k, n - k + 1) if k > 0 else 0.0
    hi = stats.beta.ppf(1 - a, k + 1, n - k) if k < n else 1.0
    return float(lo), float(hi)


def _share(side) -> tuple[int, int] | None:
    """(successes, seeds) of an arm that is a share of seeds (0/1 per seed, a mean over
    seeds), else None: against a constant it is judged by exact binomial tests."""
    if not isinstance(side, Arm) or side.statistic != "mean" or side.items or side.n < 2:
        return None
    x = np.asarray(side.values)
    return (int(x.sum()), len(x)) if set(x.tolist()) <= {0.0, 1.0} else None


def _share_against_constant(better, worse, sign: float) -> tuple[int, int, float, float] | None:
    """(successes, seeds, the constant, the sign of share − constant in the difference) when
    one side is a share of seeds and the other a constant, else None."""
    for side, other, s in ((better, worse, sign), (worse, better, -sign)):
        kn, (x, c) = _share(side), _sample(other)
        if kn is not None and x is None:
            return (*kn, c, s)
    return None


def _share_tails(k: int, n: int, p0: float) -> tuple[float, float]:
    """P(X >= k) and P(X <= k) for X ~ Binomial(n, p0), p0 clipped to [0, 1]."""
    from scipy import stats

    p0 = min(max(p0, 0.0), 1.0)
    return float(stats.binom.sf(k - 1, n, p0)), float(stats.binom.cdf(k, n, p0))


def _exact_difference(
    k: int, n: int, c: float, s: float, level: float, p_at: float | None
) -> Estimate | tuple[Estimate, float, float]:
    """``s`` · (share − ``c``) for a share ``k / n`` of seeds against the constant ``c``
    (``s`` = ±1), with the Clopper–Pearson interval of the share, and for ``p_at`` the
    two-sided α at which the interval would just clear it above, and just reach it below
    (exact binomial tails; the bootstrap of a 0/1 share has no width at 0 or n successes)."""
    lo, hi = _exact(k, n, level)
    d = Estimate(
        *(round(v, 12) for v in (s * (k / n - c), *sorted((s * (lo - c), s * (hi - c))))), n
    )
    if p_at is None:
        return d
    ge, le = _share_tails(k, n, c + s * p_at)
    above, below = (ge, le) if s > 0 else (le, ge)
    return d, min(1.0, 2 * above), min(1.0, 2 * below)


def _runs_items(
    items: Sequence[Sequence[float]] | None,
    clusters: Sequence[Sequence] | None,
    label: str,
) -> tuple[tuple[tuple[float, ...], ...], tuple[tuple[int, ...], ...]]:
    if items is None:
        return (), ()
    runs = tuple(tuple(float(v) for v in it) for it in items)
    if any(not r for r in runs) or not all(np.isfinite(r).all() for r in runs):
        raise ValueError(f"{label}: every run needs >= 1 finite item value")
    if clusters is None:
        groups = tuple(tuple(range(len(r))) for r in runs)
    else:
        if [len(c) for c in clusters] != [len(r) for r in runs]:
            raise ValueError(f"{label}: one cluster label per item")
        groups = tuple(
            tuple(int(i) for i in np.unique(np.asarray(c), return_inverse=True)[1])
            for c in clusters
        )
    return runs, groups


def arm(
    values: Sequence[float] | None,
    claim_id: str,
    name: str,
    reps: int = REPS,
    statistic: str = "iqm",
    *,
    items: Sequence[Sequence[float]] | None = None,
    clusters: Sequence[Sequence] | None = None,
    shared: str = "",
    per_seed: bool = False,
) -> Arm:
    """The IQM (or ``statistic``: ``"mean"``) of ``values`` (one per seed) with its
    expanded-percentile bootstrap 95% CI, seeded by ``(claim_id, name)``: the same values
    always give the same interval.

    ``items``: each run's per-item values (its value is their mean; ``values`` may then be
    None), ``clusters`` their groups: the bootstrap resamples items within seeds too. One run
    needs its items (a deterministic method: its interval is over its items alone; binary
    items without groups get the exact Clopper–Pearson interval). ``shared``: the item set
    (arms naming the same one are resampled paired, :func:`paired`); ``per_seed``: that set
    differs by seed, the same for every arm at one seed (paired by seed,
    :func:`paired_by_seed`). Runs on one shared item set that are all alike item for item
    are one deterministic run entered several times: the arm is that one run (``repeats``
    says how many were entered), never copies counted as seeds."""
    label = f"{claim_id} · {name}"
    runs, groups = _runs_items(items, clusters, label)
    if values is None:
        if not runs:
            raise ValueError(f"{label}: give values or items")
        values = [float(np.mean(r)) for r in runs]
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    if runs and (len(runs) != len(x) or not np.allclose([np.mean(r) for r in runs], x, atol=1e-9)):
        raise ValueError(f"{label}: each run's value must be the mean of its items")
    if len(x) < 2 and not runs:
        raise ValueError(f"{label}: a confidence interval needs >= 2 seeds (or one run's items)")
    if not np.isfinite(x).all():
        raise ValueError(f"{label}: values must be finite")
    repeats = 1
    if shared and not per_seed and len(runs) >= 2 and len(set(zip(runs, groups, strict=True))) == 1:
        repeats, runs, groups, x = len(runs), runs[:1], groups[:1], x[:1]
    # the arm without its interval yet: what the bootstrap resamples
    side = Arm(
        tuple(float(v) for v in x),
        Estimate(0.0, 0.0, 0.0, len(x)),
        statistic,
        runs,
        groups,
        shared if runs else "",
        per_seed and bool(runs),
        repeats,
    )
    point = float(STATISTICS[statistic](x))
    binary = (
        set(np.concatenate([np.asarray(r) for r in runs]).tolist()) <= {0.0, 1.0} if runs else False
    )
    if len(x) == 1 and binary and len(set(groups[0])) == len(runs[0]):
        lo, hi = _exact(int(sum(runs[0])), len(runs[0]))
    else:
        rng = np.random.default_rng(stable_seed(claim_id, name))
        dist = _boot_arm(side, rng, max(reps, REPS), statistic)
        t = _tail(side.dof)
        lo, hi = np.quantile(dist, [t, 1 - t])
    return replace(side, estimate=Estimate(point, float(lo), float(hi), len(x)))


def _sample(side, statistic: str = "iqm") -> tuple[np.ndarray | None, float]:
    """(values, point) of an arm, or (None, value) of a constant (a paper's number, n = 0)."""
    if isinstance(side, Arm):
        return np.asarray(side.values, dtype=np.float64), side.iqm
    if isinstance(side, Estimate):
        if side.n:
            raise TypeError("an Estimate without its values: build it with memrl.stats.compare.arm")
        return None, side.iqm
    if np.ndim(side) == 0:
        return None, float(side)
    x = np.asarray(side, dtype=np.float64).reshape(-1)
    return x, float(STATISTICS[statistic](x))


def _replicates(side, x: np.ndarray | None, point: float, rng, reps: int, statistic: str):
    if x is None:
        return point
    if isinstance(side, Arm) and side.items:
        return _boot_arm(side, rng, reps, statistic)
    return _boot(x, rng, reps, statistic)


def _dof(side, x: np.ndarray | None) -> int | None:
    if x is None:
        return None
    return side.dof if isinstance(side, Arm) else len(x)


def difference(
    better,
    worse,
    higher_is_better: bool,
    seed: int,
    reps: int = REPS,
    level: float = LEVEL,
    expand: bool = True,
    statistic: str | None = None,
    p_at: float | None = None,
) -> Estimate | tuple[Estimate, float, float]:
    """IQM(``better``) − IQM(``worse``), signed so > 0 is ``better`` winning, with a 95% CI
    from a stratified bootstrap: each side's seeds resampled on their own (rliable's
    ``StratifiedIndependentBootstrap``), the percentile interval expanded for small samples.

    Each side is an :class:`Arm`, per-seed values, or a constant (a paper's number, a
    threshold). ``n`` is the smaller arm's seed count (a one-run arm: its item groups). ``expand=False``: the plain percentile
    interval (what rliable computes). ``statistic``: ``"iqm"`` or ``"mean"`` over seeds (by
    default the arms' own; two arms must agree). ``p_at``: also return the two-sided α at
    which the interval's lower end would reach ``p_at``, and at which its upper end would
    (the p-values of "above it" and "below it", for Holm's step-down)."""
    own = {s.statistic for s in (better, worse) if isinstance(s, Arm)}
    if len(own) > 1 or (statistic is not None and own - {statistic}):
        raise ValueError(f"the arms' statistics differ: {sorted(own | {statistic} - {None})}")
    statistic = statistic or (own.pop() if own else "iqm")
    a, pa = _sample(better, statistic)
    b, pb = _sample(worse, statistic)
    sign = 1.0 if higher_is_better else -1.0
    exact = _share_against_constant(better, worse, sign)
    if exact is not None:
        return _exact_difference(*exact, level, p_at)
    # one run whose items form a single group cannot vary: it enters as its value (a constant)
    a = None if isinstance(better, Arm) and better.dof < 2 else a
    b = None if isinstance(worse, Arm) and worse.dof < 2 else b
    if a is None and b is None:
        raise ValueError("a difference needs at least one arm of seeds")
    for side, x in ((better, a), (worse, b)):
        if x is not None and ((_dof(side, x) or 0) < 2 or not np.isfinite(x).all()):
            raise ValueError(
                "a difference needs >= 2 finite values per arm (or one run's items, or a constant)"
            )
    rng = np.random.default_rng(seed)
    reps = reps_for(better, worse, reps)
    if paired_by_seed(better, worse):  # the same seeds and items drawn for both arms
        plan = _draws(better, rng, reps)
        da = _boot_arm(better, rng, reps, statistic, plan)
        db = _boot_arm(worse, rng, reps, statistic, plan)
    elif paired(better, worse):  # the same draws of the shared items for both arms
        k = len(set(better.clusters[0]))
        shared = rng.integers(0, k, (reps, k))
        da = _boot_arm(better, rng, reps, statistic, _draws(better, rng, reps, shared))
        db = _boot_arm(worse, rng, reps, statistic, _draws(worse, rng, reps, shared))
    else:
        da = _replicates(better, a, pa, rng, reps, statistic)
        db = _replicates(worse, b, pb, rng, reps, statistic)
    dist = sign * (np.asarray(da) - np.asarray(db))
    n = min(d for d in (_dof(better, a), _dof(worse, b)) if d is not None)
    t = _tail(n, level) if expand else (1 - level) / 2
    lo, hi = np.quantile(dist, [t, 1 - t])
    # equal IQMs differ by rounding noise (1e-17): round it away so a tie reads as 0
    point, lo, hi = (float(np.round(v, 12)) for v in (sign * (pa - pb), lo, hi))
    if p_at is not None:  # the levels at which this interval would just reach ``p_at``
        at = np.round(dist, 12)  # the tails on each side, the threshold counted in both
        below, above = float(np.mean(at <= p_at)), float(np.mean(at >= p_at))
        return Estimate(point, lo, hi, n), _alpha(below, n, expand), _alpha(above, n, expand)
    return Estimate(point, lo, hi, n)


def _alpha(tail: float, n: int, expand: bool = True) -> float:
    """The two-sided α at which the (expanded) percentile interval leaves ``tail`` of the
    bootstrap outside it on one side: the inverse of :func:`_tail` (α = 2·tail unexpanded)."""
    from scipy import stats

    if not expand or n < 2:
        return min(1.0, 2 * tail)
    if tail <= 0:
        return 0.0
    if tail >= 0.5:
        return 1.0
    q = -stats.norm.ppf(tail) / math.sqrt(n / (n - 1))
    return float(min(1.0, 2 * stats.t.sf(q, n - 1)))
