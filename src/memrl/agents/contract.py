"""What every environment-trained agent looks like to the jobs that run it::

    train(env_fn, params, steps, seed, evals) -> TrainLog

- ``env_fn(seed)``: a fresh env, reset once with ``seed`` (``None``: unseeded, e.g. for a
  vectorised env that seeds its copies itself). Training uses ``env_fn(seed)``; the greedy
  evaluation after training ``env_fn(seed + EVAL_SEED_OFFSET)`` where the agent has one,
  checkpoint evaluations ``env_fn(seed + CHECKPOINT_SEED_OFFSET)``: evaluation never
  shares a seed with training, and training is the same with or without checkpoints.
- ``params``: the agent's typed config (a :class:`~memrl.schema.StrictModel` beside it).
- ``evals``: how many greedy episodes to play after training and at which step counts
  (:class:`Evals`); an agent records what it can at those counts (returns, memory size).
- :class:`TrainLog`: the per-episode training log and the evaluations.

The jobs of a family (``families/<f>/jobs.py``) build ``env_fn`` and ``params`` from a job's
arguments, call ``train`` and turn the log into the run's row (:func:`log_row`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, TypedDict

import numpy as np

EVAL_SEED_OFFSET = 10_000  # evaluation envs never share a seed with training envs
CHECKPOINT_SEED_OFFSET = 20_000  # checkpoint evaluations: an env of their own

EnvFn = Callable[[int | None], Any]  # seed -> a fresh gymnasium env


class Evals(NamedTuple):
    """Evaluations a run makes: ``episodes`` greedy episodes after training, and at each
    step count of ``at`` (checkpoints; an agent without a greedy policy records its memory
    size there instead)."""

    episodes: int = 0
    at: tuple[int, ...] = ()


NO_EVALS = Evals()


def checkpoint_evals(episodes: int, steps: int) -> Evals:
    """``episodes`` greedy episodes after training and at each of
    :data:`~memrl.stats.curves.CHECKPOINTS` of ``steps`` but the last (whose value is the
    evaluation after training)."""
    from memrl.stats.curves import CHECKPOINTS

    return Evals(episodes, tuple(int(f * steps) for f in CHECKPOINTS[:-1]))


def train_seeded(
    train: Callable[..., TrainLog],
    params: Any,
    env_fn: EnvFn,
    total_timesteps: int,
    seed: int,
    eval_episodes: int,
) -> TrainLog:
    """What every training job does: seed everything, then ``train(env_fn, params,
    total_timesteps, seed, evals)`` with ``eval_episodes`` greedy episodes at each checkpoint
    (:func:`checkpoint_evals`)."""
    from memrl.runtime import seed_everything

    seed_everything(seed)
    evals = checkpoint_evals(eval_episodes, total_timesteps)
    return train(env_fn, params, total_timesteps, seed, evals)


class TrainLog(TypedDict, total=False):
    """What ``train`` returns: the training episodes (``lengths`` in env steps, summed over
    vectorised envs), then whatever evaluations it made."""

    episode_returns: list[float]
    episode_lengths: list[int]
    eval_returns: list[float]  # greedy episodes after training
    checkpoint_returns: list[list[float]]  # greedy episodes at each count of ``evals.at``
    memory_sizes: list[int]  # an episodic memory's size at each count of ``evals.at`` and last


def mean_return(returns: Sequence[float]) -> float:
    """The mean of ``returns``; NaN when no episode finished (never a made-up 0)."""
    return float(np.mean(returns)) if len(returns) else float("nan")


def log_row(log: TrainLog, steps: int, points: int) -> dict[str, Any]:
    """The part of a run's row every family shares: its budget, episode count, mean training
    return, its training curve on ``points`` evenly spaced step counts and the raw episode
    log (any later window or trend needs no retraining)."""
    from memrl.stats.curves import episode_curve

    rets, lens = list(log["episode_returns"]), list(log["episode_lengths"])
    grid = np.linspace(steps / points, steps, points).astype(int)
    return {
        "total_timesteps": steps,
        "episodes": len(rets),
        "mean_return": mean_return(rets),
        "grid": grid.tolist(),
        "curve": episode_curve(rets, lens, grid),
        "episode_returns": rets,
        "episode_lengths": lens,
    }
