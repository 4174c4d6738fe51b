"""Comparisons on differences: one estimator, one test per relation, floors.

A comparison says that method A beats method B (``beats``) or shows no loss against it
(``matches or beats``). Both are judged on the *difference* d = IQM(A) − IQM(B), signed so
that d > 0 is the paper's way, with a 95% CI from a bootstrap over the seeds of both arms
(:func:`difference`):

- **beats** holds when the CI lies above 0, fails when it lies at or below 0 (no positive
  difference inside it: a loss, or an exact tie such as two arms that all succeed);
- **matches or beats** is an equivalence (non-inferiority) test with a declared margin δ:
  it holds when the CI's lower end is above −δ, fails when its upper end is at or below −δ;
- otherwise the comparison is *undecided*; it is undecided too, whatever its CI, when
  neither arm clears the claim's **floor** (a policy with no learning or no knowledge):
  two methods that both sit at the floor say nothing about the paper; and when its CI has
  no width (**no spread**: nothing varies between the resampled runs, as with copies of one
  deterministic run, values on a coarse grid, or a constant against one): an interval of
  width zero is evidence of nothing.

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
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from memrl.stats.aggregate import Estimate, iqm, stable_seed

HOLDS, FAILS, UNDECIDED = "holds", "fails", "undecided"
NO_SPREAD, MULTIPLICITY = "no spread", "multiplicity"  # why a difference may decide nothing
BEATS, MATCHES = "beats", "matches or beats"
LEVEL = 0.95
REPS = 4000  # bootstrap resamples per difference: the expanded tails sit at ~0.1% for 5 seeds

# measured by `python tests/test_verdict_rule.py 2000` (the test asserts the bounds on fewer)
MEASURED_RATES = (
    "Measured by simulation (tests/test_verdict_rule.py: normal per-seed scores, 2,000 "
    "experiments per row, δ = 0.5 seed-sd): with no true effect a *beats* comparison holds in "
    "0.5% of experiments at 5 seeds per arm and 0.9% at 10; with a true loss of 2δ a "
    "*matches* comparison holds in 0.1% (5 seeds) and 0.0% (10 seeds); with a true effect of "
    "2 seed-sd a *beats* comparison holds in 51% at 5 seeds and 95% at 10."
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
    :class:`Estimate`, whose ``iqm`` field then holds that statistic)."""

    values: tuple[float, ...]
    estimate: Estimate
    statistic: str = "iqm"

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

    def as_dict(self) -> dict:
        out = {**self.estimate.as_dict(), "values": list(self.values)}
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


def arm(
    values: Sequence[float], claim_id: str, name: str, reps: int = REPS, statistic: str = "iqm"
) -> Arm:
    """The IQM (or ``statistic``: ``"mean"``) of ``values`` (one per seed) with its
    expanded-percentile bootstrap 95% CI, seeded by ``(claim_id, name)``: the same values
    always give the same interval."""
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    if len(x) < 2:
        raise ValueError(f"{claim_id} · {name}: a confidence interval needs >= 2 seeds")
    if not np.isfinite(x).all():
        raise ValueError(f"{claim_id} · {name}: values must be finite")
    rng = np.random.default_rng(stable_seed(claim_id, name))
    dist = _boot(x, rng, max(reps, REPS), statistic)
    t = _tail(len(x))
    lo, hi = np.quantile(dist, [t, 1 - t])
    point = float(STATISTICS[statistic](x))
    est = Estimate(point, float(lo), float(hi), len(x))
    return Arm(tuple(float(v) for v in x), est, statistic)


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
    threshold). ``n`` is the smaller arm's seed count. ``expand=False``: the plain percentile
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
    if a is None and b is None:
        raise ValueError("a difference needs at least one arm of seeds")
    for x in (a, b):
        if x is not None and (len(x) < 2 or not np.isfinite(x).all()):
            raise ValueError("a difference needs >= 2 finite values per arm (or a constant)")
    sign = 1.0 if higher_is_better else -1.0
    rng = np.random.default_rng(seed)
    reps = max(reps, REPS)
    da = _boot(a, rng, reps, statistic) if a is not None else pa
    db = _boot(b, rng, reps, statistic) if b is not None else pb
    dist = sign * (np.asarray(da) - np.asarray(db))
    n = min(len(x) for x in (a, b) if x is not None)
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
    seeds_needed: int | None = None  # for "power": seeds per arm that would decide
    p: float | None = None  # HOLDS / FAILS (and MULTIPLICITY): the α at which it would stand


def clears(side, floor, higher_is_better: bool) -> bool:
    """``side``'s CI (or constant) lies beyond ``floor``'s CI in the better direction."""
    lo = side.ci_low if hasattr(side, "ci_low") else float(side)
    hi = side.ci_high if hasattr(side, "ci_high") else float(side)
    if higher_is_better:
        return lo > floor.ci_high
    return hi < floor.ci_low


def seeds_to_decide(d: Estimate, threshold: float, n: int) -> int | None:
    """Seeds per arm at which a CI of today's width, shrinking as 1/√n, would leave
    ``threshold`` at the observed difference (None: no difference observed)."""
    gap = d.iqm - threshold
    if gap == 0 or n < 2:
        return None
    half = (d.iqm - d.ci_low) if gap > 0 else (d.ci_high - d.iqm)
    return max(n + 1, math.ceil(n * (half / abs(gap)) ** 2))


def judge(
    better,
    worse,
    relation: str,
    higher_is_better: bool,
    seed: int,
    *,
    margin: float | None = None,
    floor=None,
    sides: Sequence = (),
    reps: int = REPS,
) -> Judgement:
    """Judge one comparison (see the module's docstring). ``sides``: the arms that must clear
    ``floor`` (default: ``better`` and ``worse``)."""
    if relation not in (BEATS, MATCHES):
        raise ValueError(f"relation must be '{BEATS}' or '{MATCHES}', got {relation!r}")
    if relation == MATCHES and margin is None:
        raise ValueError("a 'matches or beats' comparison needs a margin")
    threshold = -margin if relation == MATCHES else 0.0
    d, p_above, p_below = difference(better, worse, higher_is_better, seed, reps, p_at=threshold)
    if floor is not None and not any(
        clears(s, floor, higher_is_better) for s in (sides or (better, worse))
    ):
        return Judgement(d, margin, UNDECIDED, "floor")
    if d.ci_low == d.ci_high:  # nothing varies: copies of one run, a grid, a constant
        return Judgement(d, margin, UNDECIDED, NO_SPREAD)
    side = decided(d, threshold)
    if side == HOLDS:
        return Judgement(d, margin, HOLDS, p=p_above)
    if side == FAILS:
        return Judgement(d, margin, FAILS, p=p_below)
    return Judgement(d, margin, UNDECIDED, "power", seeds_to_decide(d, threshold, d.n))


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
