"""The random policy, the floor of every claim: what a policy with no learning and no
knowledge scores, run as ordinary jobs in the claims' own envs and seeds (each family's
``floors.py`` builds their grid).

A floor job's result carries ``"floor"`` (the floor's name) and ``"env"``; the analysis
side splits them from the family's runs with :func:`memrl.stats.floors.split`.
Nothing here knows about claims.
"""

from __future__ import annotations

from typing import Any

import numpy as np

RANDOM = "random"
CHANCE = "chance"  # the T-Maze's: the walk with a coin-flip turn


def random_policy(
    env_id: str,
    env: str,
    seed: int,
    episodes: int = 0,
    steps: int = 0,
    env_kwargs: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A uniformly random policy on ``env_id``: ``episodes`` whole episodes (an evaluation's
    floor), or every episode ending within ``steps`` env steps (a training curve's floor).

    :param env: the env's name in the family's tables (e.g. ``Pendulum-V``, ``T-Maze L=4``)
    :return: the episodes' returns and lengths, and ``score``: their mean return
    """
    from memrl.envs.registry import make

    if (episodes > 0) == (steps > 0):
        raise ValueError("give either episodes or steps")
    e = make(env_id, seed, **(env_kwargs or {}))
    rng = np.random.default_rng(seed)
    e.action_space.seed(int(rng.integers(2**31)))
    returns: list[float] = []
    lengths: list[int] = []
    total, ret, length = 0, 0.0, 0
    e.reset(seed=seed)
    while (episodes and len(returns) < episodes) or (steps and total < steps):
        _, r, terminated, truncated, _ = e.step(e.action_space.sample())
        ret, length, total = ret + float(r), length + 1, total + 1
        if terminated or truncated:
            returns.append(ret)
            lengths.append(length)
            ret, length = 0.0, 0
            e.reset()
    e.close()
    return record(RANDOM, env, env_id, seed, returns, lengths, steps)


def chance(env_id: str, env: str, seed: int, episodes: int, env_kwargs: dict) -> dict[str, Any]:
    """The T-Maze's chance floor: the oracle's walk with a coin-flip turn (what an agent that
    walks the maze but holds no memory of the cue scores, ~0.5; the papers' "chance"), over
    ``episodes`` episodes of one seeded stream of cues, as :func:`random_policy`."""
    from memrl.envs.registry import make
    from memrl.envs.tmaze_oracle import turn

    e = make(env_id, seed, **env_kwargs)
    rng = np.random.default_rng([seed, env_kwargs.get("length", 0)])  # corridors flip apart
    returns, lengths = [], []
    for i in range(episodes):
        e.reset(seed=seed if i == 0 else None)
        ret, t, done = 0.0, 0, False
        while not done:
            last = t == e.unwrapped.length - 1
            a = turn(int(rng.choice((1, -1)))) if last else e.unwrapped.RIGHT
            _, r, done, _, _ = e.step(a)
            ret, t = ret + float(r), t + 1
        returns.append(ret)
        lengths.append(t)
    e.close()
    return record(CHANCE, env, env_id, seed, returns, lengths, 0)


def record(floor, env, env_id, seed, returns, lengths, steps) -> dict[str, Any]:
    """A floor job's result: its episodes' returns and lengths, ``score`` their mean return."""
    return {
        "floor": floor,
        "env": env,
        "env_id": env_id,
        "seed": seed,
        "score": float(np.mean(returns)) if returns else float("nan"),
        "episode_returns": returns,
        "episode_lengths": lengths,
        "total_timesteps": steps,
    }
