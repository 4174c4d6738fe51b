"""Summaries of per-episode training logs: learning curves and windowed returns."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from memrl.stats.aggregate import iqm_ci

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


def iqm_curves(
    runs: pd.DataFrame, by: Sequence[str] = ("env", "method"), reps: int = 500
) -> pd.DataFrame:
    """Learning curves over seeds: per ``by`` group and grid step, the IQM with a 95% CI.

    ``runs`` has one row per seed with a ``curve`` (values on ``grid``) and its ``grid``.
    Steps where some seed has not finished an episode yet (NaN) are left out.
    """
    rows = []
    for i, (key, g) in enumerate(runs.groupby(list(by), sort=False)):
        ys = np.array(g.curve.tolist(), dtype=float)
        for j, step in enumerate(g.grid.iloc[0]):
            col = ys[:, j]
            if np.isnan(col).any():
                continue
            e = iqm_ci(col, reps=reps, seed=1000 * i + j)
            rows.append(
                {**dict(zip(by, key, strict=True)), "step": step,
                 "iqm": e.iqm, "ci_low": e.ci_low, "ci_high": e.ci_high}
            )  # fmt: skip
    return pd.DataFrame(rows)


CI_COLUMNS = ("ci_low", "ci_high")  # "<method> ci_low" beside a method's column: its band


def wide(curves: pd.DataFrame, x: str, methods: Sequence[str], by: str = "method") -> pd.DataFrame:
    """A long table (``x``, ``by``, iqm, ci_low, ci_high) as ``dvc plots`` reads it: ``x``,
    one IQM column per method of ``methods`` present (in that order), then each one's 95% CI
    as ``"<method> ci_low"`` and ``"<method> ci_high"`` (the band of ``.dvc/plots/memrl_lines.json``)."""
    present = [m for m in methods if m in set(curves[by])]
    out = curves.pivot(index=x, columns=by, values="iqm")[present]
    for c in CI_COLUMNS:
        out = out.join(curves.pivot(index=x, columns=by, values=c)[present].add_suffix(f" {c}"))
    return out.reset_index()


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
        out.append(window_mean(episode_returns, episode_lengths,
                               0 if cumulative else int(prev * total), int(f * total)))  # fmt: skip
        prev = f
    return out
