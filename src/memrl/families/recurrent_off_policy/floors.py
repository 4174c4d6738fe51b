"""The recurrent off-policy family's floors, per env and seed: a uniformly random policy
scored as the claims score the agents (mean return of ``eval_episodes`` episodes); on the
T-Maze (also the corridors of the memory card and of RO-11's test) also *chance*: the
oracle's walk with a coin-flip turn, what an agent that walks the maze but holds no memory
scores (a uniformly random policy there almost never reaches the junction). Nothing here
knows about claims."""

from __future__ import annotations

from typing import Any

from memrl.agents.random_policy import CHANCE, chance, random_policy
from memrl.envs import popgym_levels
from memrl.envs.registry import short_env
from memrl.families.recurrent_off_policy.params import RecurrentOffPolicyParams
from memrl.jobs import JobSpec

TMAZE_ID = "memrl/PassiveTMaze-v0"
RANDOM = f"{random_policy.__module__}:{random_policy.__name__}"
CHANCE_FN = f"{chance.__module__}:{chance.__name__}"


def popgym_random(**kw: Any) -> dict[str, Any]:
    """:func:`memrl.agents.random_policy.random_policy` on one of POPGym's harder levels
    (:mod:`memrl.envs.popgym_levels`, registered by importing it: a job process may not have)."""
    popgym_levels.register()
    return random_policy(**kw)


POPGYM_RANDOM = f"{__name__}:{popgym_random.__name__}"


def _tmaze(env: str, length: int, seed: int, episodes: int, cost: float) -> list[JobSpec]:
    """Both T-Maze floors of one corridor: chance (the comparator) and the uniformly random
    policy (what an agent that never learned to walk scores)."""
    kw = {
        "env_id": TMAZE_ID,
        "env": env,
        "seed": seed,
        "env_kwargs": {"length": length},
        "episodes": episodes,
    }
    return [
        JobSpec(CHANCE_FN, kw, cost, label=f"{CHANCE} · {env} · seed {seed}"),
        JobSpec(RANDOM, kw, cost, label=f"random · {env} · seed {seed}"),
    ]


def grid(cfg: RecurrentOffPolicyParams) -> list[JobSpec]:
    out = []
    horizons = tmaze_horizons(cfg)
    seeds = max(cfg.seeds, cfg.truncation.seeds if cfg.truncation else 0)
    for s in range(seeds):
        if s < cfg.seeds:
            for e in cfg.envs:
                env = short_env(e.env_id)
                kw = {"env_id": e.env_id, "env": env, "seed": s, "episodes": cfg.eval_episodes}
                level = e.env_id.removeprefix("popgym/").removesuffix("-v0") in popgym_levels.LEVELS
                fn = POPGYM_RANDOM if level else RANDOM
                out.append(JobSpec(fn, kw, 1.0, label=f"random · {env} · seed {s}"))
            for length in cfg.tmaze.lengths:
                out += _tmaze(f"T-Maze L={length}", length, s, cfg.tmaze.eval_episodes, 0.1)
        # the memory card's and RO-11's fair test's T-Mazes, scored as they score a core,
        # over the seeds of the study with the most
        for xi, episodes in horizons.items():
            cost = 0.1 + 2e-5 * xi * episodes  # ~20 µs per step
            out += _tmaze(f"T-Maze xi={xi}", xi, s, episodes, cost)
    return out


def tmaze_horizons(cfg: RecurrentOffPolicyParams) -> dict[int, int]:
    """Corridor -> greedy episodes of every cloned-policy study (the card, the truncation
    test); one floor per corridor, scored with the larger count where both use it."""
    out: dict[int, int] = {}
    for c in (cfg.card, cfg.truncation):
        for xi in c.horizons if c is not None else ():
            out[xi] = max(out.get(xi, 0), c.eval_episodes)
    return dict(sorted(out.items()))
