"""What the engine's compiled training loops share around them: the ported game an
agents'-contract ``env_fn`` names, and a run as chunks of one compiled ``lax.scan`` each
(:func:`memrl.engines.stream_q.make_train`, :func:`memrl.engines.dqn1.make_train`)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from memrl.agents.contract import EnvFn
from memrl.envs import minatar_jax as mj  # pins the process before jax loads

# isort: split
import jax
import jax.numpy as jnp

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


def episode(ret: Any, length: Any, r: Any, done: Any) -> tuple[Any, Any, Any, Any]:
    """A step's episode bookkeeping: the return and length with this step's reward ``r``
    (what the step reports), and what the carry keeps (zeros once the episode is ``done``)."""
    ret, length = ret + r, length + 1
    zero = jnp.zeros_like
    return ret, length, jnp.where(done, zero(ret), ret), jnp.where(done, zero(length), length)


def scan_run(body: Callable[[Any, None], tuple[Any, Any]]) -> Callable[[Any, int], tuple]:
    """``run(carry, n)``: ``n`` steps of ``body`` as one ``lax.scan``, compiled once per chunk
    length (``n`` static); not donated: an ``init``'s zeros may share buffers."""

    @partial(jax.jit, static_argnums=1)
    def run(c: Any, steps: int):
        return jax.lax.scan(body, c, None, length=steps)

    return run


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
