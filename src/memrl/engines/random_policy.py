"""A uniformly random policy on a ported MinAtar game (:mod:`memrl.envs.minatar_jax`), the
loop compiled: the streaming claims' floor over their whole budget, every episode ending
within it, as :func:`memrl.agents.random_policy.random_policy` logs the package's game
(the same distributions; the draws from ``jax.random``, ``fold_in(key(seed), t)`` split in
two per step: the action, the game's uniforms). The package's game stepped from Python
costs ~25-60 us a step (AMD EPYC family 26, Intel Xeon family 6 model 207), the compiled
port ~5-7 us (200,000 steps in 1.4-1.9 CPU-s, under load)."""

from __future__ import annotations

from typing import Any

from memrl.engines.pin import pin

pin()  # before jax loads: XLA's flags and one core (memrl.engines.pin)

import jax
import jax.numpy as jnp

from memrl.agents.random_policy import RANDOM, record
from memrl.engines.loop import episode, run_chunks, scan_run
from memrl.envs import minatar_jax as mj


def make_run(game: mj.Game):
    """``init(seed) -> carry`` and ``run(carry, n) -> (carry, (done, return, length))``."""

    def init(seed: int):
        k_reset, key = jax.random.split(jax.random.key(seed))
        env, _ = mj.reset_u(game, mj.uniforms(k_reset)[1])
        count, zero = jnp.zeros((), jnp.int32), jnp.zeros((), jnp.float32)
        return env, key, count, zero, count

    def body(c, _):
        env, key, t, ret, length = c
        k_act, k_env = jax.random.split(jax.random.fold_in(key, t))
        a = jax.random.randint(k_act, (), 0, game.n_actions, jnp.int32)
        env, _, r, term, trunc, _ = mj.step_autoreset_u(game, env, a, mj.uniforms(k_env))
        done = term | trunc
        ret, length, next_ret, next_length = episode(ret, length, r, done)
        return (env, key, t + 1, next_ret, next_length), (done, ret, length)

    return init, scan_run(body)


def random_policy(env_id: str, env: str, seed: int, steps: int) -> dict[str, Any]:
    """A uniformly random policy for ``steps`` steps of the ported ``env_id``: the floor
    job's record (:func:`memrl.agents.random_policy.record`)."""
    if env_id not in mj.GAMES:
        raise ValueError(f"the engine runs {sorted(mj.GAMES)}, not {env_id!r}")
    init, run = make_run(mj.GAMES[env_id])
    _, returns, lengths = run_chunks(run, init(seed), steps)
    return record(RANDOM, env, env_id, seed, returns, lengths, steps)
