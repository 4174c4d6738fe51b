"""Summaries of per-episode training logs: learning curves and windowed returns."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

CHECKPOINTS = (0.25, 0.5, 0.75, 1.0)  # shares of a run's budget where trends are measured


def episode_curve(
    episode_returns: Sequence[float],
    episode_lengths: Sequence[int],
    grid: Sequence[int],
    last: int = 10,
) -> list[float]:
    """At each step of ``grid``, the mean return of the (up to) ``last`` episodes finished by then.

    NaN where no episode has finished yet.
    """
    ends = np.cumsum(np.asarray(episode_lengths, dtype=np.int64))
    rets = np.asarray(episode_returns, dtype=np.float64)
    out = []
    for t in grid:
        done = rets[ends <= t][-last:]
        out.append(float(done.mean()) if done.size else float("nan"))
    return out


def window_mean(
    episode_returns: Sequence[float], episode_lengths: Sequence[int], start: int, stop: int
) -> float:
    """Mean return of the episodes that ended at a step in ``(start, stop]``; NaN if none did."""
    ends = np.cumsum(np.asarray(episode_lengths, dtype=np.int64))
    rets = np.asarray(episode_returns, dtype=np.float64)
    sel = rets[(ends > start) & (ends <= stop)]
    return float(sel.mean()) if sel.size else float("nan")


def checkpoint_windows(
    episode_returns: Sequence[float],
    episode_lengths: Sequence[int],
    total: int,
    fractions: Sequence[float],
    cumulative: bool = False,
) -> list[float]:
    """At each fraction ``f`` of a ``total``-step run, the mean return of the episodes that
    ended in the window since the previous fraction (``((f_prev) total, f total]``), or
    since the start with ``cumulative`` (the area under the curve up to ``f``)."""
    out, prev = [], 0.0
    for f in fractions:
        out.append(
            window_mean(
                episode_returns,
                episode_lengths,
                0 if cumulative else int(prev * total),
                int(f * total),
            )
        )
        prev = f
    return out
