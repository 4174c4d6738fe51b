"""Where a comparison heads along training: its effect at checkpoints of our budget.

A claim run on a tenth of a paper's budget cannot say "no" about the end of training;
what it can show is the *trend*: the compared effect — IQM(A) − IQM(B), signed so that
a positive effect is the paper's way — at 25, 50, 75 and 100% of our budget, each with
a 95% bootstrap CI from the verdicts' own estimator (:func:`memrl.stats.compare.difference`:
the two methods' seeds resampled apart, the percentile interval expanded for few seeds). :attr:`Trend.direction` reads the curve as *widening*, *closing*,
*flipping* or *steady*.

Values come from the same stored runs as the claim: periodic deterministic evaluations
where the claim's metric is a post-training return, windows of the training curve where
it is a training return.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from memrl.stats.aggregate import Estimate, stable_seed
from memrl.stats.bootstrap import difference
from memrl.stats.claims import Claim, Comparison
from memrl.stats.curves import CHECKPOINTS

__all__ = ["CHECKPOINTS", "Trend", "TrendPoint", "effect", "trends"]

STEADY = 0.1  # |change| below this share of the larger |effect| reads as steady


@dataclass(frozen=True)
class TrendPoint:
    fraction: float  # of our budget
    effect: Estimate  # > 0: the paper's way


@dataclass(frozen=True)
class Trend:
    """One comparison's effect along our budget."""

    comparison: str
    points: tuple[TrendPoint, ...]

    @property
    def direction(self) -> str:
        """``flipping`` (the sign changed), ``widening`` / ``closing`` (|effect| grew /
        shrank by more than :data:`STEADY` of the larger one), else ``steady``."""
        first, last = self.points[0].effect.iqm, self.points[-1].effect.iqm
        if first * last < 0:
            return "flipping"
        if abs(last - first) <= STEADY * max(abs(first), abs(last)):
            return "steady"
        return "widening" if abs(last) > abs(first) else "closing"

    @property
    def heading(self) -> str:
        last = self.points[-1].effect.iqm
        return "the paper's way" if last > 0 else "against the paper" if last < 0 else "tied"

    def summary(self) -> str:
        """E.g. ``A > B: +0.31 -> +1.2 (widening, the paper's way)``."""
        if len(self.points) == 1:
            return f"{self.comparison}: {self.points[0].effect.iqm:+.3g} (one checkpoint)"
        first, last = self.points[0].effect.iqm, self.points[-1].effect.iqm
        return (
            f"{self.comparison}: {first:+.3g} at {self.points[0].fraction:.0%} -> {last:+.3g} "
            f"at {self.points[-1].fraction:.0%} ({self.direction}, {self.heading})"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "comparison": self.comparison,
            "direction": self.direction,
            "heading": self.heading,
            "summary": self.summary(),
            "points": [{"fraction": p.fraction, **p.effect.as_dict()} for p in self.points],
        }


def effect(
    better: Sequence[float],
    worse: Sequence[float] | float,
    higher_is_better: bool,
    seed: int,
    reps: int = 2000,
    statistic: str = "iqm",
) -> Estimate:
    """IQM(``better``) − IQM(``worse``) over seeds (or another ``statistic``) with its 95% CI:
    the verdicts' own estimator, :func:`memrl.stats.compare.difference` (``worse`` may be a
    constant)."""
    return difference(better, worse, higher_is_better, seed, reps, statistic=statistic)


def trends(
    claim: Claim,
    comparisons: Sequence[Comparison],
    series: Mapping[str, np.ndarray | float],
    fractions: Sequence[float],
    reps: int = 2000,
    statistic: str = "iqm",
) -> list[Trend]:
    """One :class:`Trend` per comparison of ``claim`` (its id seeds the bootstraps, its
    direction signs the effects) whose two sides have ``series``: an array
    (seeds x checkpoints, one column per ``fractions``) or a paper's constant (on either
    side: a level the runs should stay below is the better side). Checkpoints
    where a side has a NaN (no episode ended yet) are left out. ``statistic``: over seeds, as
    the claim's arms."""
    out = []
    for c in comparisons:
        if c.better not in series or c.worse not in series:
            continue
        a, b, higher = series[c.better], series[c.worse], claim.higher_is_better
        if np.ndim(a) == 0:  # a paper's constant above the runs: c − B is −(B − c)
            a, b, higher = b, a, not higher
        a = np.asarray(a, dtype=np.float64)
        points = []
        for j, f in enumerate(fractions):
            bj = b if np.ndim(b) == 0 else np.asarray(b, dtype=np.float64)[:, j]
            aj = a[:, j]
            if np.isnan(aj).any() or np.isnan(bj).any():
                continue
            seed = stable_seed(claim.claim_id, str(c), f"{f:.4f}")
            d = effect(aj, bj, higher, seed, reps, statistic)
            points.append(TrendPoint(float(f), d))
        if points:
            out.append(Trend(str(c), tuple(points)))
    return out
