"""Env steps per core-second of MinAtar Breakout and SpaceInvaders: (a) the ``minatar``
package through :func:`memrl.envs.registry.make`, random actions in a Python loop (resets
included); (b) the JAX port (:mod:`memrl.envs.minatar_jax`) as one jitted ``lax.scan`` of
``step_autoreset_u`` with random actions, drawn inside the scan from a key (one split and
three uniforms a step), and (c) the same scan (``rollout_u``) on actions and uniforms drawn
before the clock starts; compile excluded. One process bound to one core (the port's pin), ``time.process_time``.

    python benchmarks/minatar_jax.py [--package-steps 100000] [--jax-steps 100000]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from memrl.engines.pin import pin  # first: memrl pins the kernels (tests/test_isa.py)

pin()  # before jax loads: XLA's flags and one core (memrl.engines.pin)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from memrl.envs import minatar_jax as M  # noqa: E402
from memrl.envs.registry import make  # noqa: E402


def cpu_name() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def package_rate(env_id: str, steps: int) -> float:
    env = make(env_id, seed=0)
    rng = np.random.default_rng(0)
    actions = rng.integers(env.action_space.n, size=steps)
    env.reset()
    t0 = time.process_time()
    for a in actions:
        _, _, term, trunc, _ = env.step(int(a))
        if term or trunc:
            env.reset()
    return steps / (time.process_time() - t0)


def jax_rates(env_id: str, steps: int) -> tuple[float, float]:
    """(keys drawn in the scan: one split and three uniforms a step, the action one of them;
    actions and uniforms drawn before the clock starts, the scan ``rollout_u``)."""
    game = M.GAMES[env_id]

    def body(carry, _):
        state, key = carry
        key, sub = jax.random.split(key)
        u = jax.random.uniform(sub, (M.N_UNIFORMS + 1,))
        a = jnp.floor(u[M.N_UNIFORMS] * game.n_actions).astype(jnp.int32)
        state, _, reward, term, _, _ = M.step_autoreset_u(game, state, a, u[: M.N_UNIFORMS])
        return (state, key), (reward, term)

    @jax.jit
    def keyed(key):
        state, _ = M.reset(game, key)
        _, (rewards, terms) = jax.lax.scan(body, (state, key), None, length=steps)
        return rewards.sum(), terms.sum()

    @jax.jit
    def predrawn(actions, us):
        state, _ = M.reset_u(game, us[0, 1])
        _, (_, rewards, terms, _, _) = M.rollout_u(game, state, actions, us)
        return rewards.sum(), terms.sum()

    rates = []
    k_act, k_env = jax.random.split(jax.random.key(1))
    inputs = [
        (jax.random.key(1),),
        (
            jax.random.randint(k_act, (steps,), 0, game.n_actions),
            jax.random.uniform(k_env, (steps, M.N_UNIFORMS)),
        ),
    ]
    for fn, args in zip((keyed, predrawn), inputs, strict=True):
        jax.block_until_ready(fn(*args))  # compile (and one run) off the clock
        t0 = time.process_time()
        reward, episodes = jax.block_until_ready(fn(*args))
        rates.append(steps / (time.process_time() - t0))
        print(f"    ({fn.__name__}: {int(episodes)} episodes, reward {float(reward):.0f})")
    return rates[0], rates[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--package-steps", type=int, default=100_000)
    ap.add_argument("--jax-steps", type=int, default=100_000)
    args = ap.parse_args()
    print(f"CPU: {cpu_name()} (one core)")
    for env_id in M.GAMES:
        pkg = package_rate(env_id, args.package_steps)
        keyed, predrawn = jax_rates(env_id, args.jax_steps)
        print(
            f"{env_id}: package {pkg:,.0f} steps/core-s; jax scan {keyed:,.0f} "
            f"(keys in the scan), {predrawn:,.0f} (uniforms drawn before)"
        )


if __name__ == "__main__":
    main()
