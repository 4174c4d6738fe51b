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
    return {
        "floor": RANDOM,
        "env": env,
        "env_id": env_id,
        "seed": seed,
        "score": float(np.mean(returns)) if returns else float("nan"),
        "episode_returns": returns,
        "episode_lengths": lengths,
        "total_timesteps": steps,
    }
