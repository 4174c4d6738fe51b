"""POPGym's harder levels, registered apart from :mod:`memrl.envs.pomdp`.

:func:`memrl.envs.pomdp.register` runs in every job that makes an env (it registers the
masked control tasks, the T-Maze and POPGym's Easy levels), so a level added there would move
every job's key. A level here moves only the keys of the code that imports this module: the
POPGym PPO agent (:mod:`memrl.agents.ppo`), the recurrent family's parameters (which validate
env ids) and its POPGym floors (:func:`memrl.families.recurrent_off_policy.floors.
popgym_random`).
"""

from __future__ import annotations

import importlib

import gymnasium as gym

from memrl.envs.pomdp import FloatObservation

# PositionOnlyCartPole at Medium: 400 steps (Easy 200); the POPGym PPO pilot's GRU reached
# Easy's maximum of 1 by 295k steps, and a tie at the ceiling decides nothing
LEVELS: dict[str, str] = {
    "PositionOnlyCartPoleMedium": "popgym.envs.position_only_cartpole",
}


def make_level(task: str) -> gym.Env:
    """POPGym's ``task`` with flat float32 observations, as :func:`memrl.envs.pomdp.make_popgym`."""
    return FloatObservation(getattr(importlib.import_module(LEVELS[task]), task)())


def register() -> None:
    """Register ``popgym/<Task>-v0`` for each level (idempotent)."""
    for task in LEVELS:
        if f"popgym/{task}-v0" not in gym.envs.registry:
            gym.register(f"popgym/{task}-v0", entry_point=make_level, kwargs={"task": task})


register()
