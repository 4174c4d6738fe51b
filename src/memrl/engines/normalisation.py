"""The streaming agents' online normalisation (:mod:`memrl.envs.stream_normalisation`:
Elsayed, Vasan & Mahmood 2024's ``normalization_wrappers.py``) as pure functions for a
compiled training loop: Welford's running mean and sample variance of each observation
element, the observation as a z-score under them (updated first), and the reward over the
running standard deviation of the discounted return ``G <- gamma G (1 - done) + r``.

The wrappers keep their statistics in float64, as the reference does; the engine computes in
float32 (``JAX_ENABLE_X64=0``: :mod:`memrl.engines.pin`). Over a 5M-step run a float32 sum
of squared deviations loses its increments (~0.09 added to ~450,000, where a float32's step
is 0.03), so the two running sums (the mean and ``p``) are kept with Kahan's compensation:
each carries the rounding error of its last addition into the next one. Against the float64
wrappers on the same stream the z-scores agree within float32 rounding and the scaled
rewards within 4e-7 over 2M steps (``tests/test_engine.py``); on that synthetic stream the
uncompensated sums agreed as closely, so the compensation is a guard, not a measured need.
"""

from __future__ import annotations

from typing import NamedTuple

from memrl.engines.pin import pin

pin()  # before jax loads: XLA's flags and one core (memrl.engines.pin)

import jax.numpy as jnp  # noqa: E402

EPSILON = 1e-8  # the wrappers' (and the reference's) epsilon inside the root


class Welford(NamedTuple):
    """Running mean and sum of squared deviations of arrays of one shape, each with its
    Kahan compensation; ``count`` of updates (float32: exact below 2^24 = 16.7M)."""

    mean: jnp.ndarray
    mean_c: jnp.ndarray
    p: jnp.ndarray
    p_c: jnp.ndarray
    count: jnp.ndarray


def welford(shape: tuple[int, ...] = ()) -> Welford:
    z = jnp.zeros(shape, jnp.float32)
    return Welford(z, z, z, z, jnp.zeros((), jnp.float32))


def _kahan(total: jnp.ndarray, comp: jnp.ndarray, x: jnp.ndarray):
    """``total + x`` with ``comp`` carrying the lost low part (Kahan 1965)."""
    y = x - comp
    t = total + y
    return t, (t - total) - y


def update(s: Welford, x: jnp.ndarray) -> tuple[Welford, jnp.ndarray]:
    """``SampleMeanStd.update``: the statistics with ``x`` added, and the sample variance
    (1 until two are seen)."""
    count = s.count + 1
    first = count == 1
    delta = (x - s.mean) / count
    mean, mean_c = _kahan(s.mean, s.mean_c, delta)
    p, p_c = _kahan(s.p, s.p_c, (x - s.mean) * (x - mean))
    mean, mean_c = jnp.where(first, x, mean), jnp.where(first, 0.0, mean_c)
    p, p_c = jnp.where(first, 0.0, p), jnp.where(first, 0.0, p_c)
    var = jnp.where(count < 2, 1.0, p / jnp.maximum(count - 1, 1.0))
    return Welford(mean, mean_c, p, p_c, count), var


def normalise(s: Welford, obs: jnp.ndarray) -> tuple[Welford, jnp.ndarray]:
    """``NormalizeObservation``: the statistics updated with ``obs``, then its z-score."""
    s, var = update(s, obs)
    return s, (obs - s.mean) / jnp.sqrt(var + EPSILON)


def scale_reward(
    s: Welford, trace: jnp.ndarray, r: jnp.ndarray, done: jnp.ndarray, gamma: float
) -> tuple[Welford, jnp.ndarray, jnp.ndarray]:
    """``ScaleReward``: ``(stats, discounted-return trace, scaled reward)``; the trace is
    cut on the step that ends an episode (``done``), as the wrapper does."""
    trace = trace * gamma * (1.0 - done.astype(jnp.float32)) + r
    s, var = update(s, trace)
    return s, trace, r / jnp.sqrt(var + EPSILON)
