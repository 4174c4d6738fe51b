"""Replay across Experiments (Tirumala et al. 2023) as an SB3 replay buffer.

A second, read-only replay source holds every transition of earlier
experiments; each minibatch takes a fixed fraction from it and the rest from
the agent's own (online) buffer.  Nothing else about the learner changes.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.type_aliases import ReplayBufferSamples
from stable_baselines3.common.vec_env import VecNormalize


class Transitions(NamedTuple):
    """A flat batch of transitions, as stored in ``data/`` (a folder of ``.npy`` files)."""

    observations: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    next_observations: np.ndarray
    dones: np.ndarray

    def __len__(self) -> int:
        return len(self.rewards)

    def subset(self, idx: np.ndarray | slice) -> Transitions:
        return Transitions(*(a[idx] for a in self))

    def save(self, directory: str | Path) -> None:
        """One ``.npy`` per field: byte-for-byte deterministic, unlike ``.npz`` (zip timestamps)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        for name, arr in zip(self._fields, self, strict=True):
            np.save(directory / f"{name}.npy", np.ascontiguousarray(arr), allow_pickle=False)

    @classmethod
    def load(cls, directory: str | Path) -> Transitions:
        directory = Path(directory)
        if not directory.is_dir():
            raise FileNotFoundError(
                f"prior-experiment data not found: {directory} (run `make data` to fetch or rebuild it)"
            )
        missing = [f for f in cls._fields if not (directory / f"{f}.npy").is_file()]
        if missing:
            raise FileNotFoundError(f"{directory} lacks {', '.join(m + '.npy' for m in missing)}")
        arrays = [np.load(directory / f"{f}.npy", allow_pickle=False) for f in cls._fields]
        if len({len(a) for a in arrays}) != 1:
            raise ValueError(f"{directory}: arrays have different lengths")
        return cls(*arrays)


class MixedReplayBuffer(ReplayBuffer):
    """SB3 ``ReplayBuffer`` whose samples mix in a fixed fraction of prior data.

    :param prior: transitions from previous experiments (read-only).
    :param prior_fraction: share of each minibatch drawn from ``prior``.
    """

    def __init__(
        self,
        buffer_size: int,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        device: th.device | str = "auto",
        n_envs: int = 1,
        optimize_memory_usage: bool = False,
        handle_timeout_termination: bool = True,
        prior: Transitions | None = None,
        prior_fraction: float = 0.5,
    ) -> None:
        super().__init__(
            buffer_size,
            observation_space,
            action_space,
            device=device,
            n_envs=n_envs,
            optimize_memory_usage=optimize_memory_usage,
            handle_timeout_termination=handle_timeout_termination,
        )
        if prior is None or len(prior) == 0:
            raise ValueError("MixedReplayBuffer needs a non-empty `prior` data set")
        if not 0.0 < prior_fraction < 1.0:
            raise ValueError(f"prior_fraction must be in (0, 1), got {prior_fraction}")
        if prior.observations.shape[1:] != self.obs_shape:
            raise ValueError(
                f"prior observations have shape {prior.observations.shape[1:]}, "
                f"the environment's are {self.obs_shape}"
            )
        self.prior = prior
        self.prior_fraction = float(prior_fraction)

    def sample(self, batch_size: int, env: VecNormalize | None = None) -> ReplayBufferSamples:
        n_prior = int(round(self.prior_fraction * batch_size))
        online = super().sample(batch_size - n_prior, env=env)
        idx = np.random.randint(0, len(self.prior), size=n_prior)
        p = self.prior
        prior = (
            self._normalize_obs(p.observations[idx], env),
            p.actions[idx].reshape(n_prior, -1),
            self._normalize_obs(p.next_observations[idx], env),
            p.dones[idx].reshape(-1, 1),
            self._normalize_reward(p.rewards[idx].reshape(-1, 1), env),
        )
        prior_t = [self.to_torch(np.asarray(a, dtype=np.float32)) for a in prior]
        return ReplayBufferSamples(
            *(th.cat([o, q.to(o.dtype)]) for o, q in zip(online[:5], prior_t, strict=True))
        )
