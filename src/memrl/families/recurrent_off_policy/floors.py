"""The recurrent off-policy family's floors: a uniformly random policy scored as the claims
score the agents (mean return of ``eval_episodes`` episodes; T-Maze success, also on the
memory card's corridors), per env and seed. Nothing here knows about claims."""

from __future__ import annotations

from memrl.agents.random_policy import random_policy
from memrl.envs.registry import short_env
from memrl.families.recurrent_off_policy.params import RecurrentOffPolicyParams
from memrl.jobs import JobSpec

TMAZE_ID = "memrl/PassiveTMaze-v0"
RANDOM = f"{random_policy.__module__}:{random_policy.__name__}"


def _tmaze(env: str, length: int, seed: int, episodes: int, cost: float) -> JobSpec:
    kw = {
        "env_id": TMAZE_ID,
        "env": env,
        "seed": seed,
        "env_kwargs": {"length": length},
        "episodes": episodes,
    }
    return JobSpec(RANDOM, kw, cost, label=f"random · {env} · seed {seed}")


def grid(cfg: RecurrentOffPolicyParams) -> list[JobSpec]:
    out = []
    for s in range(cfg.seeds):
        for e in cfg.envs:
            env = short_env(e.env_id)
            kw = {"env_id": e.env_id, "env": env, "seed": s, "episodes": cfg.eval_episodes}
            out.append(JobSpec(RANDOM, kw, 1.0, label=f"random · {env} · seed {s}"))
        for length in cfg.tmaze.lengths:
            out.append(_tmaze(f"T-Maze L={length}", length, s, cfg.tmaze.eval_episodes, 0.1))
        # the memory card's T-Mazes, scored as the card scores a core (RO-10's floor)
        for xi in cfg.card.horizons if cfg.card is not None else ():
            cost = 0.1 + 2e-5 * xi * cfg.card.eval_episodes  # ~20 µs per random step
            out.append(_tmaze(f"T-Maze xi={xi}", xi, s, cfg.card.eval_episodes, cost))
    return out
