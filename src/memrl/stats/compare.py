"""Comparisons on differences: one estimator, one test per relation, floors.

A comparison says that method A beats method B (``beats``) or shows no loss against it
(``matches or beats``). Both are judged on the *difference* d = IQM(A) − IQM(B), signed so
that d > 0 is the paper's way, with a 95% CI from a bootstrap over the seeds of both arms
(:func:`difference`; where a run's value is a mean over items, such as test questions, the
items within each seed are resampled too, and a deterministic method is one run whose
interval comes from its items alone):

- **beats** holds when the CI lies above 0, fails when it lies at or below 0 (no positive
  difference inside it: a loss, or an exact tie);
- **matches or beats** is an equivalence (non-inferiority) test with a declared margin δ:
  it holds when the CI's lower end is above −δ, fails when its upper end is at or below −δ;
- otherwise the comparison is *undecided*; it is undecided too, whatever its CI, when
  neither arm clears the claim's **floor** (a policy with no learning or no knowledge) or
  neither lies below its **ceiling** (the task's maximum: a tie at the top), each decided
  on the CI of the arm's *difference* from it (:func:`clears`), not on overlapping
  intervals; when the arms are copies (:func:`identical`: more seeds of them are more
  copies); when no outcome of the design could decide at 95% (:func:`decidable`: 3 seeds
  against 3 are all above in 1 of 20 experiments with no effect, 5 against a constant in 1
  of 32, more than the 2.5% a 95% interval allows on one side); and when its CI has no width
  (**no spread**: copies of one deterministic run, values on a coarse grid; seeds that all
  land on one value beyond a constant are judged by the sign test instead).

Arms scored on the same items (``Arm.shared``) are resampled **paired**: one draw of the
item groups per replicate, for every run of both arms (:func:`paired`).

A share of seeds (0 or 1 per seed, a mean over seeds) against a constant is judged on the
share's exact Clopper–Pearson interval and binomial tails: a bootstrap of seeds that all
succeed has no width, while 6 of 6 above one half is evidence at 95%.

An undecided comparison says how many seeds per arm would decide it in 80% of experiments,
by simulation from the observed seeds (:func:`seeds_for_power`).

A claim's comparisons are several tests: where a verdict rests on *some* of them (one fails,
one holds), their decisions stand only as far as Holm–Bonferroni's step-down allows
(:func:`holm`), so the chance that any one of them decides by luck stays at 5%.

The CI is a percentile bootstrap *expanded* for small samples (Hesterberg 2015, "What
teachers should know about the bootstrap", Sec. 5.1): the plain percentile interval of an
IQM over 5 seeds covers ~90%, not 95%, so the tail probability α/2 is replaced by
Φ(−√(n/(n−1))·t_{α/2, n−1}), n the smaller arm's seed count. ``tests/test_verdict_rule.py``
measures the rule's error rates by simulation; :data:`MEASURED_RATES` states them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from memrl.stats.aggregate import Estimate, iqm, stable_seed

HOLDS, FAILS, UNDECIDED = "holds", "fails", "undecided"
# why a difference may decide nothing
NO_SPREAD, MULTIPLICITY, CEILING, IDENTICAL, DESIGN = (
    "no spread",
    "multiplicity",
    "ceiling",
    "identical",
    "design",
)
BEATS, MATCHES = "beats", "matches or beats"
LEVEL = 0.95
REPS = 4000  # bootstrap resamples per difference: the expanded tails sit at ~0.1% for 5 seeds

# measured by `python tests/test_verdict_rule.py 1000` (the test asserts the bounds on fewer)
MEASURED_RATES = (
    "Measured by simulation (tests/test_verdict_rule.py: normal per-seed scores, 1,000 "
    "experiments per row, δ = 0.5 seed-sd): with no true effect a *beats* comparison holds in "
    "0.5% of experiments at 5 seeds per arm and 0.9% at 10; with a true loss of 2δ a "
    "*matches* comparison holds in 0.1% (5 seeds) and 0.0% (10 seeds); with a true effect of "
    "2 seed-sd a *beats* comparison holds in 51% at 5 seeds and 95% at 10. The whole verdict "
    "(arms, a floor run in the same seeds, Holm, the rule): with no true effect a claim of one "
    "comparison sides with the paper in 0.8% (5 seeds) / 1.1% (10) and against it in 1.0% / "
    "0.9%, and a claim of two has a comparison fail in 0.8% / 0.7%; with true effects of 2 "
    "seed-sd on both, two comparisons are *reproduced* in 23% (5 seeds) / 90% (10) and never "
    "fail; with one real effect and one null, *reproduced* in 0.1% / 0.8%; a 2 seed-sd effect "
    "at 10% of the paper's budget reads *partially* in 50% / 94%, its mirror *partially "
    "contradicted* in 54% / 96%. At 3 seeds against 3 nothing is "
    "decided (no exact test can reach 2.5% there)."
)


# =========================================================================== arms
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
    def dof(self) -> int:
        """The count the small-sample expansion uses: seeds, or one run's item groups."""
        return self.n if self.n >= 2 or not self.items else len(set(self.clusters[0]))

    def as_dict(self) -> dict:
        out = {**self.estimate.as_dict(), "values": list(self.values)}
        if self.items:
            out["items_per_run"] = [len(i) for i in self.items]
            out["clusters_per_run"] = [len(set(c)) for c in self.clusters]
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


def paired(a, b) -> bool:
    """Two arms scored on the same items: the same ``shared`` set, and every run of both
    with the same item groups in the same order. Their bootstrap then draws one set of item
    groups per replicate for every run of both arms (the test set is what both answer), each
    arm's seeds drawn on their own."""
    if not (isinstance(a, Arm) and isinstance(b, Arm) and a.shared and a.shared == b.shared):
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
) -> Arm:
    """The IQM (or ``statistic``: ``"mean"``) of ``values`` (one per seed) with its
    expanded-percentile bootstrap 95% CI, seeded by ``(claim_id, name)``: the same values
    always give the same interval.

    ``items``: each run's per-item values (its value is their mean; ``values`` may then be
    None), ``clusters`` their groups: the bootstrap resamples items within seeds too. One run
    needs its items (a deterministic method: its interval is over its items alone; binary
    items without groups get the exact Clopper–Pearson interval). ``shared``: the item set
    (arms naming the same one are resampled paired, :func:`paired`)."""
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
    # the arm without its interval yet: what the bootstrap resamples
    side = Arm(
        tuple(float(v) for v in x),
        Estimate(0.0, 0.0, 0.0, len(x)),
        statistic,
        runs,
        groups,
        shared if runs else "",
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


# =========================================================================== the difference
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
    (the p-values of "above it" and "at or below it", for Holm's step-down)."""
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
    reps = max(reps, REPS)
    if paired(better, worse):  # the same draws of the shared items for both arms
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
        below = float(np.mean(np.round(dist, 12) <= p_at))
        return Estimate(point, lo, hi, n), _alpha(below, n, expand), _alpha(1 - below, n, expand)
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


# =========================================================================== margins
@dataclass(frozen=True)
class Margin:
    """The δ of a *matches or beats* comparison and where it comes from.

    Either ``delta`` (in the metric's unit, e.g. what the paper calls "no significant loss")
    or ``gap_share`` of the gap between the baseline and the floor (a stated convention);
    ``source`` says which and why."""

    source: str
    delta: float | None = None
    gap_share: float | None = None

    def __post_init__(self) -> None:
        if (self.delta is None) == (self.gap_share is None):
            raise ValueError("a margin is either an absolute delta or a share of the gap")
        if (self.delta if self.delta is not None else self.gap_share) <= 0:
            raise ValueError("a margin must be positive")

    def resolve(self, baseline: float, floor: float | None) -> float:
        """δ for this baseline and floor (IQMs)."""
        if self.delta is not None:
            return self.delta
        if floor is None:
            raise ValueError(f"margin '{self.source}' needs the claim's floor")
        return self.gap_share * abs(baseline - floor)


GAP_10 = Margin("convention: 10% of the gap between the baseline and the floor", gap_share=0.1)


def gap_margin(floor: str | None, baseline: float) -> Margin:
    """:data:`GAP_10` where the comparison has a floor; without a floor run (fabricated test
    runs), 10% of the baseline's magnitude, stated as such."""
    if floor is not None:
        return GAP_10
    return Margin(
        "convention without a floor run: 10% of the baseline's magnitude",
        delta=0.1 * abs(baseline) or 1e-9,
    )


# =========================================================================== one comparison
@dataclass(frozen=True)
class Judgement:
    """A comparison's difference, its margin (matches only), outcome and why."""

    difference: Estimate
    margin: float | None
    outcome: str  # HOLDS | FAILS | UNDECIDED
    reason: str = ""  # for UNDECIDED: "floor", "power", NO_SPREAD or MULTIPLICITY
    p: float | None = None  # HOLDS / FAILS (and MULTIPLICITY): the α at which it would stand
    # for "power": the simulation behind :attr:`seeds_needed`, run when first asked for
    power: Callable[[], int | None] | None = field(default=None, repr=False, compare=False)

    @cached_property
    def seeds_needed(self) -> int | None:
        """For "power": seeds per arm at which the rule decides in 80% of simulated
        experiments (:func:`seeds_for_power`; None: not within its cap; 0: not simulated)."""
        return self.power() if self.power is not None else None


def clears(side, edge, higher_is_better: bool, seed: int = 0) -> bool:
    """``side`` lies beyond ``edge`` (a floor) in the better direction: the CI of the
    *difference* side − edge lies above 0 (both resampled as in :func:`difference`, paired
    where they share items), not two intervals that fail to overlap. A ceiling is the
    mirror: an arm is below its ceiling when ``clears(ceiling, arm, ...)``. Two constants
    compare as numbers."""
    if _sample(side)[0] is None and _sample(edge)[0] is None:
        sign = 1.0 if higher_is_better else -1.0
        return sign * (_sample(side)[1] - _sample(edge)[1]) > 0
    try:
        d = difference(side, edge, higher_is_better, seed)
    except ValueError:  # a one-run arm without varying items: compare its value
        sign = 1.0 if higher_is_better else -1.0
        return sign * (_sample(side)[1] - _sample(edge)[1]) > 0
    return d.ci_low > 0


def _units(side) -> int | None:
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
    na, nb = _units(better), _units(worse)
    if na is None and nb is None:  # two deterministic runs: their item groups are the units
        na, nb = (s.dof if isinstance(s, Arm) else None for s in (better, worse))
        if na is None or nb is None:
            return 0.0 if (na or nb) else 1.0
    if na is None or nb is None:
        return _smallest_p(na or nb)
    return _smallest_p(na, nb)


def _smallest_p(n: int, m: int | None = None) -> float:
    """:func:`design_p` of ``n`` seeds against ``m`` (None: against a constant)."""
    return 2.0**-n if m is None else 1.0 / math.comb(n + m, n)


def _two_arms(better, worse) -> bool:
    """Both sides have seeds (else one is a constant or one deterministic run)."""
    return _units(better) is not None and _units(worse) is not None


def seeds_for_design(better, worse, level: float = LEVEL, threshold: float = 0.0) -> int:
    """The fewest seeds per seeded arm at which some outcome could decide: :func:`design_p`
    reaching (1 − level) / 2, or for a share of seeds against a constant, its exact interval
    at all or no successes clearing ``threshold``."""
    two = _two_arms(better, worse)
    share = _share_against_constant(better, worse, 1.0)
    n = 2
    while True:
        if share is not None:
            c, s = share[2], share[3]
            ends = [sorted(s * (v - c) for v in _exact(k, n)) for k in (0, n)]
            if any(lo > threshold or hi <= threshold for lo, hi in ends):
                return n
        elif _smallest_p(n, n if two else None) <= (1 - level) / 2:
            return n
        n += 1


def seeds_for_power(
    better,
    worse,
    relation: str,
    higher_is_better: bool,
    seed: int,
    *,
    margin: float | None = None,
    power: float = 0.8,
    experiments: int = 100,
    cap: int = 100,
) -> int | None:
    """The seeds per arm at which the rule decides (holds or fails) in ``power`` of simulated
    experiments, each seed drawn from an arm's observed seeds (the observed effect and spread
    taken as true; a constant stays constant). None: not within ``cap`` seeds."""
    pools = [
        None if _units(s) is None else np.asarray(_sample(s)[0], dtype=np.float64)
        for s in (better, worse)
    ]
    consts = [_sample(s)[1] for s in (better, worse)]
    statistic = next((s.statistic for s in (better, worse) if isinstance(s, Arm)), "iqm")
    threshold = -margin if relation == MATCHES else 0.0
    sign = 1.0 if higher_is_better else -1.0
    rng = np.random.default_rng(seed)
    two = _two_arms(better, worse)

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
        hit = (d[:, 0] > threshold) | (d[:, 1] <= threshold)
        return float(np.sum(stats.binom.pmf(ks, n, q)[hit]))

    def rate(n: int) -> float:
        """Share of ``experiments`` at ``n`` seeds per arm the rule decides (vectorised:
        the same expanded-percentile interval as :func:`difference`)."""
        if share is not None:
            return exact_rate(n)
        if _smallest_p(n, n if two else None) > (1 - LEVEL) / 2:
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
            hits += int(np.sum(((lo > threshold) | (hi <= threshold)) & (hi > lo)))
        return hits / experiments

    now = max((n for n in (_units(better), _units(worse)) if n), default=1)
    lo, hi = now, now + 1  # undecided at ``now`` seeds
    while rate(hi) < power:  # double until it decides often enough
        lo, hi = hi, hi * 2
        if hi > cap:
            return None
    while hi - lo > 1:  # then bisect
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if rate(mid) >= power else (mid, hi)
    return hi


def judge(
    better,
    worse,
    relation: str,
    higher_is_better: bool,
    seed: int,
    *,
    margin: float | None = None,
    floor=None,
    ceiling=None,
    sides: Sequence = (),
    reps: int = REPS,
    power_experiments: int = 100,
) -> Judgement:
    """Judge one comparison (see the module's docstring). ``sides``: the arms that must clear
    ``floor`` (default: ``better`` and ``worse``); ``ceiling``: the task's maximum (an oracle
    or a constant): a comparison in which no arm is shown below it is a tie at the ceiling,
    undecided, as two arms at the floor are. ``power_experiments``: simulated experiments
    per seed count for an undecided comparison's ``seeds_needed`` (0: none)."""
    if relation not in (BEATS, MATCHES):
        raise ValueError(f"relation must be '{BEATS}' or '{MATCHES}', got {relation!r}")
    if relation == MATCHES and margin is None:
        raise ValueError("a 'matches or beats' comparison needs a margin")
    threshold = -margin if relation == MATCHES else 0.0
    d, p_above, p_below = difference(better, worse, higher_is_better, seed, reps, p_at=threshold)
    arms = sides or (better, worse)
    if floor is not None and not any(
        clears(s, floor, higher_is_better, seed + i) for i, s in enumerate(arms)
    ):
        return Judgement(d, margin, UNDECIDED, "floor")
    if ceiling is not None and not any(
        clears(ceiling, s, higher_is_better, seed + 7 + i) for i, s in enumerate((better, worse))
    ):
        return Judgement(d, margin, UNDECIDED, CEILING)
    if identical(better, worse):  # copies: no number of seeds tells them apart
        return Judgement(d, margin, UNDECIDED, IDENTICAL)
    if not decidable(better, worse, relation, higher_is_better, margin):
        return Judgement(
            d,
            margin,
            UNDECIDED,
            DESIGN,
            power=lambda: seeds_for_design(better, worse, threshold=threshold),
        )
    if d.ci_low == d.ci_high:  # nothing varies: copies of one run, a grid, a constant
        signs = _against_constant(better, worse, higher_is_better, threshold)
        if signs is None:
            return Judgement(d, margin, UNDECIDED, NO_SPREAD)
        # seeds all at one value beyond a constant (every seed at CartPole's cap of 500): the
        # sign test decides, every seed on one side by chance 2^-n
        return Judgement(d, margin, signs, p=_smallest_p(_units(better) or _units(worse)))
    side = decided(d, threshold)
    if side == HOLDS:
        return Judgement(d, margin, HOLDS, p=p_above)
    if side == FAILS:
        return Judgement(d, margin, FAILS, p=p_below)

    def needed() -> int | None:
        if not power_experiments:  # not simulated (0): a simulation of the rule itself
            return 0
        return seeds_for_power(
            better,
            worse,
            relation,
            higher_is_better,
            seed,
            margin=margin,
            experiments=power_experiments,
        )

    return Judgement(d, margin, UNDECIDED, "power", power=needed)


def _against_constant(better, worse, higher_is_better: bool, threshold: float) -> str | None:
    """HOLDS / FAILS when one side is seeds and the other a constant and every seed lies on
    one side of it (beyond ``threshold``), else None."""
    a, b = _sample(better)[0], _sample(worse)[0]
    if (a is None) == (b is None) or _units(better if a is not None else worse) is None:
        return None
    sign = 1.0 if higher_is_better else -1.0
    d = sign * (a - _sample(worse)[1]) if a is not None else sign * (_sample(better)[1] - b)
    if np.all(d > threshold):
        return HOLDS
    return FAILS if np.all(d <= threshold) else None


def decidable(better, worse, relation: str, higher_is_better: bool, margin=None) -> bool:
    """Whether some outcome of this design (its seeds, its items) could decide at 95%: a
    share of seeds against a constant by its exact interval at all and at no successes;
    anything else by :func:`design_p` (3 seeds against 3, or 5 against a constant, cannot)."""
    share = _share_against_constant(better, worse, 1.0 if higher_is_better else -1.0)
    if share is not None:
        _, n, c, s = share
        threshold = -margin if relation == MATCHES else 0.0
        for k in (0, n):
            lo, hi = sorted(s * (v - c) for v in _exact(k, n))
            if lo > threshold or hi <= threshold:
                return True
        return False
    return design_p(better, worse) <= (1 - LEVEL) / 2


def decided(d: Estimate, threshold: float) -> str:
    """The difference's CI against ``threshold`` (0 for *beats*, −δ for *matches*): above it
    holds, at or below it fails, across it undecided."""
    return HOLDS if d.ci_low > threshold else FAILS if d.ci_high <= threshold else UNDECIDED


def holm(judgements: Sequence[Judgement], alpha: float = 1 - LEVEL) -> list[Judgement]:
    """Holm–Bonferroni over one claim's decided comparisons: ordered by ``p``, the i-th
    (from 0) stands while ``p <= alpha / (k - i)``, k the claim's comparisons; from the
    first that does not on, each decision becomes undecided (:data:`MULTIPLICITY`). It
    bounds the chance that *any* comparison holds or fails by luck: the union rules' error."""
    k = len(judgements)
    order = sorted(
        (i for i, j in enumerate(judgements) if j.outcome in (HOLDS, FAILS)),
        key=lambda i: judgements[i].p,
    )
    out, stop = list(judgements), False
    for rank, i in enumerate(order):
        stop = stop or judgements[i].p > alpha / (k - rank)
        if stop:
            j = judgements[i]
            out[i] = Judgement(j.difference, j.margin, UNDECIDED, MULTIPLICITY, p=j.p)
    return out
