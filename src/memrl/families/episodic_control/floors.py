"""The episodic-control family's floors: a uniformly random policy for each env's whole
budget, its episodes logged as the agents' training episodes are (the claims read the same
windows of them). Nothing here knows about claims."""

from __future__ import annotations

from memrl.agents.random_policy import random_policy
from memrl.envs.registry import short_env
from memrl.families.episodic_control.params import EpisodicControlParams
from memrl.jobs import JobSpec


def grid(cfg: EpisodicControlParams) -> list[JobSpec]:
    return [
        JobSpec(
            f"{random_policy.__module__}:{random_policy.__name__}",
            {"env_id": e.env_id, "env": short_env(e.env_id), "seed": s, "steps": e.total_timesteps},
            2e-5 * e.total_timesteps,
            label=f"random · {short_env(e.env_id)} · seed {s}",
        )
        for e in cfg.envs
        for s in range(cfg.seeds)
    ]
