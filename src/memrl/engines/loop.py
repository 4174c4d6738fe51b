"""What the engine's compiled training loops share around them: the ported game an
agents'-contract ``env_fn`` names, and a run as chunks of one compiled ``lax.scan`` each
(:func:`memrl.engines.stream_q.make_train`, :func:`memrl.engines.dqn1.make_train`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from memrl.agents.contract import EnvFn
from memrl.envs import minatar_jax as mj  # pins the process before jax loads

CHUNK = 50_000  # steps per compiled call: ~10 s here, the granularity of a job's progress


def game_of(env_fn: EnvFn, seed: int) -> mj.Game:
    """The ported game ``env_fn`` makes (:data:`memrl.envs.minatar_jax.GAMES`), checked
    against the package's env: its id, frame shape and action count."""
    env = env_fn(seed)
    spec_id = getattr(env.spec, "id", None)
    if spec_id not in mj.GAMES:
        raise ValueError(f"the engine runs {sorted(mj.GAMES)}, not {spec_id!r}")
    game = mj.GAMES[spec_id]
    if (env.observation_space.shape, int(env.action_space.n)) != (game.obs_shape, game.n_actions):
        raise ValueError(f"{spec_id}: the package's env and the port disagree on its spaces")
    return game


def run_chunks(
    run: Callable[[Any, int], tuple[Any, tuple]], carry: Any, total_steps: int
) -> tuple[Any, list[float], list[int]]:
    """``total_steps`` steps of ``run(carry, n) -> (carry, (done, return, length, ...))`` in
    chunks of :data:`CHUNK` (the last one shorter: a second compilation at most): the last
    carry, and the finished episodes' returns and lengths in order."""
    returns: list[float] = []
    lengths: list[int] = []
    done_steps = 0
    while done_steps < total_steps:
        steps = min(CHUNK, total_steps - done_steps)
        carry, (done, ret, length, *_) = run(carry, steps)
        done = np.asarray(done)
        returns += np.asarray(ret)[done].astype(float).tolist()
        lengths += np.asarray(length)[done].astype(int).tolist()
        done_steps += steps
    return carry, returns, lengths
