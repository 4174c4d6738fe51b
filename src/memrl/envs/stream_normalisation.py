"""Online normalisation for streaming RL (Elsayed, Vasan & Mahmood 2024; reference:
mohmdelsayed/streaming-drl, ``normalization_wrappers.py``), as gymnasium wrappers:

- :class:`NormalizeObservation`: each observation element minus its running mean, over its
  running standard deviation (a sample variance over every observation seen, the first one
  included; 1 until two are seen);
- :class:`ScaleReward`: each reward over the running standard deviation of the discounted
  return ``G <- gamma * G * (1 - done) + r`` (reset on the step that ends an episode, as the
  reference does).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


class SampleMeanStd:
    """Welford's running mean and sample variance of arrays of one shape."""

    def __init__(self, shape: tuple[int, ...] = ()) -> None:
        self.mean = np.zeros(shape, np.float64)
        self.var = np.ones(shape, np.float64)
        self.p = np.ones(shape, np.float64)
        self.count = 0

    def update(self, x: np.ndarray) -> None:
        x = np.asarray(x, np.float64)
        if self.count == 0:
            self.mean, self.p = x, np.zeros_like(x)
        self.count += 1
        mean = self.mean + (x - self.mean) / self.count
        self.p = self.p + (x - self.mean) * (x - mean)
        self.mean = mean
        self.var = np.ones_like(x) if self.count < 2 else self.p / (self.count - 1)


class NormalizeObservation(gym.Wrapper):
    """Observations as z-scores under the running statistics (updated first)."""

    def __init__(self, env: gym.Env, epsilon: float = 1e-8) -> None:
        super().__init__(env)
        self.stats = SampleMeanStd(env.observation_space.shape)
        self.epsilon = epsilon

    def _normalise(self, obs: Any) -> np.ndarray:
        self.stats.update(obs)
        return ((obs - self.stats.mean) / np.sqrt(self.stats.var + self.epsilon)).astype(np.float32)

    def reset(self, **kwargs: Any):
        obs, info = self.env.reset(**kwargs)
        return self._normalise(obs), info

    def step(self, action: Any):
        obs, r, terminated, truncated, info = self.env.step(action)
        return self._normalise(obs), r, terminated, truncated, info


class ScaleReward(gym.Wrapper):
    """Rewards over the running standard deviation of the discounted return."""

    def __init__(self, env: gym.Env, gamma: float = 0.99, epsilon: float = 1e-8) -> None:
        super().__init__(env)
        self.stats = SampleMeanStd(())
        self.trace = 0.0
        self.raw = 0.0  # the last reward as the env gave it
        self.gamma, self.epsilon = gamma, epsilon

    def step(self, action: Any):
        obs, r, terminated, truncated, info = self.env.step(action)
        done = terminated or truncated
        self.raw = float(r)
        self.trace = self.trace * self.gamma * (1 - done) + r
        self.stats.update(self.trace)
        return obs, r / float(np.sqrt(self.stats.var + self.epsilon)), terminated, truncated, info
