"""Make any environment the suite uses from its id: gymnasium's, plus MinAtar's.

MinAtar (Young & Tian 2019) is miniature Atari built for CPU research: 10x10
boolean frames with one channel per object type, the original games' dynamics
(including sticky actions, p = 0.1) and no frame skip. It stands in for the
Atari games of the episodic-control papers. Its gymnasium ids
(``MinAtar/Breakout-v1`` ...) exist once :func:`register_minatar` has run;
:func:`make` does that and converts MinAtar frames to float32 channels-first
arrays, the layout torch convolutions and SB3 expect.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

MINATAR_PREFIX = "MinAtar/"


def register_minatar() -> None:
    """Register MinAtar's gymnasium ids (idempotent)."""
    if any(k.startswith(MINATAR_PREFIX) for k in gym.envs.registry):
        return
    from minatar.gym import register_envs

    register_envs()


class ChannelsFirstFloat(gym.ObservationWrapper, gym.utils.RecordConstructorArgs):
    """(H, W, C) boolean frames -> (C, H, W) float32 in {0, 1}; rewards as Python floats."""

    def __init__(self, env: gym.Env) -> None:
        gym.utils.RecordConstructorArgs.__init__(self)  # gym.make(env.spec) rebuilds it
        super().__init__(env)
        h, w, c = env.observation_space.shape
        self.observation_space = gym.spaces.Box(0.0, 1.0, (c, h, w), dtype=np.float32)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if seed is not None:  # MinAtar seeds its game but not gymnasium's generator, which
            gym.Env.reset(self.unwrapped, seed=seed)  # the checkers look for; it uses none
        return super().reset(seed=seed, options=options)

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, float(reward), terminated, truncated, info  # some games give numpy ints

    def observation(self, obs: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(np.moveaxis(obs, -1, 0), dtype=np.float32)


def register_for(env_id: str) -> None:
    """Register the suite's own ids an env id may need: MinAtar's, or the POMDPs of
    :mod:`memrl.envs.pomdp` (``memrl/...`` masked control, T-Maze; ``popgym/...``)."""
    if env_id.startswith(MINATAR_PREFIX):
        register_minatar()
    elif env_id.startswith(("memrl/", "popgym/")):
        from memrl.envs import pomdp

        pomdp.register()


def make(env_id: str, seed: int | None = None, **kwargs) -> gym.Env:
    """The environment ``env_id`` (reset once with ``seed`` if given); ``kwargs`` go to
    ``gym.make`` (e.g. ``length`` for the T-Maze)."""
    register_for(env_id)
    if env_id.startswith(MINATAR_PREFIX):
        env = ChannelsFirstFloat(gym.make(env_id, **kwargs))
    else:
        env = gym.make(env_id, **kwargs)
    if seed is not None:
        env.reset(seed=seed)
        env.action_space.seed(seed)
    return env


def short_env(env_id: str) -> str:
    """An env id without its namespace and version, as tables and figures name it:
    ``memrl/Pendulum-V-v1`` -> ``Pendulum-V``; ``MinAtar/Breakout-v1`` -> ``Breakout``."""
    return env_id.split("/")[-1].rsplit("-v", 1)[0]


def is_image(env: gym.Env) -> bool:
    """True for (C, H, W) frame observations (MinAtar), False for flat vectors."""
    return len(env.observation_space.shape) == 3
