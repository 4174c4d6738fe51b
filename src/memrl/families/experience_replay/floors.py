"""The experience-replay family's floors, run as ordinary jobs: Q-learning's starting point
(Q = 0, no update) on the rare-reward chain, a uniformly random policy on the DQN, RaE and streaming
tasks (every episode of the whole budget, as the agents' training curves log them) and on
bit flipping (its success rate at each n). The Blind Cliffwalk has no floor: a learner that
never learns never reaches the threshold. Nothing here knows about claims."""

from __future__ import annotations

from typing import Any

import numpy as np

from memrl.agents.random_policy import random_policy
from memrl.families.experience_replay.params import ExperienceReplayParams
from memrl.jobs import JobSpec

HERE = "memrl.families.experience_replay.floors"
ENGINE_RANDOM = "memrl.engines.random_policy:random_policy"  # imported only by its job
ENGINE_RANDOM_COST = 6e-6  # core-s per step: ~200k steps in 1.4-1.9 CPU-s (AMD EPYC, loaded)


def q_zero_error(seed: int, p: dict[str, Any]) -> dict[str, Any]:
    """The relative max-norm error to Q* of the initial Q = 0 (what no learning leaves)."""
    from memrl.envs.tabular import q_star, rare_reward_chain

    qs = q_star(rare_reward_chain(p["n_states"], p["p_forward"], p["gamma"]))
    error = float(np.abs(qs).max() / np.abs(qs).max())  # |0 - Q*| / |Q*|
    return {"floor": "no learning", "env": "chain", "seed": seed, "score": error}


def bitflip_random(seed: int, n_bits: int, episodes: int) -> dict[str, Any]:
    """A uniformly random policy's success rate on ``n_bits`` bit flipping (``n_bits`` steps)."""
    from stable_baselines3.common.envs import BitFlippingEnv

    env = BitFlippingEnv(n_bits=n_bits, continuous=False, max_steps=n_bits)
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    wins = 0
    for _ in range(episodes):
        env.reset()
        for _ in range(n_bits):
            _, _, done, _, info = env.step(int(rng.integers(n_bits)))
            if done:
                wins += bool(info.get("is_success", False))
                break
    return {
        "floor": "random",
        "env": f"bits n={n_bits}",
        "n_bits": n_bits,
        "seed": seed,
        "score": wins / episodes,
    }


def grid(cfg: ExperienceReplayParams) -> list[JobSpec]:
    q = cfg.q_replay
    chain = {"n_states": q.n_states, "p_forward": q.p_forward, "gamma": q.gamma}
    out = []
    for s in range(cfg.seeds):
        out.append(
            JobSpec(
                f"{HERE}:q_zero_error",
                {"seed": s, "p": chain},
                0.01,
                label=f"no learning · chain · seed {s}",
            )
        )
        package = (f"{random_policy.__module__}:{random_policy.__name__}", 2e-5, "")
        tasks = [
            (cfg.per_dqn.env_id, cfg.per_dqn.total_timesteps, *package),
            (cfg.rae.env_id, cfg.rae.total_timesteps, *package),
        ]
        if cfg.stream is not None:  # the streaming claims' MinAtar games, over their budget
            # on the engine, the ported game's loop compiled (memrl.engines.random_policy)
            run = (
                (ENGINE_RANDOM, ENGINE_RANDOM_COST, "xla")
                if cfg.stream.engine == "xla"
                else package
            )
            tasks += [(e, cfg.stream.total_timesteps, *run) for e in cfg.stream.env_ids]
        for env_id, steps, fn, cost, engine in tasks:
            kw = {"env_id": env_id, "env": env_id, "seed": s, "steps": steps}
            out.append(
                JobSpec(fn, kw, cost * steps, label=f"random · {env_id} · seed {s}", engine=engine)
            )
        for n in cfg.her.n_bits:
            kw = {"seed": s, "n_bits": n, "episodes": cfg.her.eval_episodes}
            out.append(
                JobSpec(f"{HERE}:bitflip_random", kw, 0.01, label=f"random · bits n={n} · seed {s}")
            )
    return out
