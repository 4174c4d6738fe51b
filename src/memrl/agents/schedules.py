"""The exploration schedules' one formula, for Python floats and traced arrays alike (the
torch agents, SB3's schedule and the engines' compiled loops call the same function)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _clip(x: float, lo: float, hi: float) -> float:
    return min(max(x, lo), hi)


def linear(
    t: Any,
    start: float,
    span: float,
    first: float,
    last: float,
    clip: Callable[[Any, float, float], Any] = _clip,
) -> Any:
    """``first`` until step ``start``, then linearly to ``last`` over ``span`` steps, then
    ``last``: with ``f = clip((t - start) / span, 0, 1)``, ``(1 - f) first + f last`` (exactly
    ``first`` and ``last`` at the ends); ``span`` 0 gives ``last`` after ``start``. ``clip``
    is the array library's (``jnp.clip`` for a traced ``t``; Python's ``min``/``max`` by
    default)."""
    frac = clip((t - start) / span, 0.0, 1.0) if span > 0 else clip((t - start) * 1e30, 0.0, 1.0)
    return (1.0 - frac) * first + frac * last
