"""Aggregate per-seed scores with rliable: IQM and 95% stratified-bootstrap CIs."""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np


class Estimate(NamedTuple):
    """An IQM over seeds with its 95% stratified-bootstrap confidence interval."""

    iqm: float
    ci_low: float
    ci_high: float
    n: int

    def as_dict(self) -> dict[str, float | int]:
        return {"iqm": self.iqm, "ci_low": self.ci_low, "ci_high": self.ci_high, "n": self.n}

    def __str__(self) -> str:
        return f"{self.iqm:.4g} [{self.ci_low:.4g}, {self.ci_high:.4g}]"


def iqm(values: np.ndarray, axis: int = 0) -> np.ndarray:
    """Interquartile mean along ``axis`` (the 25%-trimmed mean, as rliable's ``aggregate_iqm``).

    ``scipy.stats.trim_mean(values, 0.25, axis)``'s arithmetic, the same bytes (a test
    compares them): the same partition, the same slice, the same mean; a slice holding a NaN
    is NaN, as there. Without scipy's argument-checking wrapper (~1 ms a call), the verdict
    simulation of tests/test_verdict_rule.py runs in about half the time."""
    a = np.asarray(values)
    if a.size == 0:
        return np.float64(np.nan)
    if not np.issubdtype(a.dtype, np.floating):
        a = a.astype(float)
    n = a.shape[axis]
    low = n // 4  # int(0.25 * n): the count trimmed from each end, rounded down
    part = np.partition(a, (low, n - low - 1), axis)
    middle = [slice(None)] * a.ndim
    middle[axis] = slice(low, n - low)
    out = np.mean(part[tuple(middle)], axis=axis)
    nan = np.isnan(a).any(axis=axis)
    return np.where(nan, np.nan, out)[()] if nan.any() else out


def iqm_ci(scores, reps: int = 2000, seed: int = 0) -> Estimate:
    """IQM of ``scores`` (one value per seed, or runs x tasks) with a 95% CI.

    The bootstrap is seeded, so the same scores always give the same interval.
    """
    from rliable import library as rly
    from rliable import metrics

    x = np.asarray(scores, dtype=np.float64)
    if x.ndim == 1:
        x = x[:, None]
    if x.shape[0] < 2:
        raise ValueError("a confidence interval needs at least 2 seeds")
    if not np.all(np.isfinite(x)):
        raise ValueError("scores must be finite")
    # rliable 1.2's StratifiedBootstrap draws its resamples from numpy's *global*
    # RNG (np.random.choice), ignoring `random_state`; seed it here and restore it after.
    saved = np.random.get_state()
    np.random.seed(seed)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            point, interval = rly.get_interval_estimates(
                {"x": x},
                lambda s: np.array([metrics.aggregate_iqm(s)]),
                reps=reps,
                random_state=np.random.RandomState(seed),
            )
    finally:
        np.random.set_state(saved)
    return Estimate(
        float(point["x"][0]), float(interval["x"][0, 0]), float(interval["x"][1, 0]), x.shape[0]
    )


def stable_seed(*parts: str) -> int:
    """A bootstrap seed from names (e.g. a claim id and an estimate's name): the same
    estimate always gets the same interval, whatever else the family computes."""
    import hashlib

    return int(hashlib.sha256("\0".join(parts).encode()).hexdigest()[:8], 16)


def estimate(values, claim_id: str, name: str, reps: int = 2000) -> Estimate:
    """:func:`iqm_ci` of ``values`` seeded by ``(claim_id, name)``."""
    return iqm_ci(np.asarray(values, dtype=np.float64), reps=reps, seed=stable_seed(claim_id, name))


def reference(value: float) -> Estimate:
    """A constant from a paper to compare against (``n = 0``: not a run of ours)."""
    return Estimate(float(value), float(value), float(value), 0)
