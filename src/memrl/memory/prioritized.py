"""Proportional prioritized experience replay (Schaul et al. 2016) as an SB3 replay buffer.

Plug it into any SB3 off-policy algorithm with
``replay_buffer_class=PrioritizedReplayBuffer``.  Sampling follows the paper:
``P(i) = p_i^alpha / sum_k p_k^alpha`` with ``p_i = |delta_i| + eps``, new
transitions enter at the maximal priority seen so far, and each sample carries
the importance-sampling weight ``w_i = (N * P(i))^-beta / max_j w_j``.

An algorithm that knows about priorities (``memrl.agents.per_dqn.PrioritizedDQN``)
multiplies its per-sample loss by ``weights``, calls :meth:`update_priorities`
with the new TD errors and anneals ``beta`` towards 1 with :meth:`set_progress`.
Algorithms that do not still train, on prioritized but uncorrected samples.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.vec_env import VecNormalize

from memrl.memory.sum_tree import SumTree


class PrioritizedReplayBufferSamples(NamedTuple):
    """SB3's ``ReplayBufferSamples`` plus IS weights and the sampled buffer indices."""

    observations: th.Tensor
    actions: th.Tensor
    next_observations: th.Tensor
    dones: th.Tensor
    rewards: th.Tensor
    discounts: th.Tensor | None
    weights: th.Tensor
    indices: np.ndarray


class PrioritizedReplayBuffer(ReplayBuffer):
    """Proportional PER on a sum-tree, a drop-in for SB3's ``ReplayBuffer``.

    :param alpha: how much prioritization is used (0 = uniform). Paper: 0.6.
    :param beta0: initial IS exponent, annealed linearly to 1. Paper: 0.4.
    :param eps: small constant keeping every priority positive.
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
        alpha: float = 0.6,
        beta0: float = 0.4,
        eps: float = 1e-6,
    ) -> None:
        if optimize_memory_usage:
            raise ValueError("PrioritizedReplayBuffer does not support optimize_memory_usage=True")
        if alpha < 0 or not 0 <= beta0 <= 1 or eps <= 0:
            raise ValueError(
                f"need alpha >= 0, 0 <= beta0 <= 1, eps > 0; got {alpha}, {beta0}, {eps}"
            )
        super().__init__(
            buffer_size,
            observation_space,
            action_space,
            device=device,
            n_envs=n_envs,
            optimize_memory_usage=False,
            handle_timeout_termination=handle_timeout_termination,
        )
        self.alpha = float(alpha)
        self.beta0 = float(beta0)
        self.beta = float(beta0)
        self.eps = float(eps)
        self.max_priority = 1.0
        # one leaf per (slot, env) pair: leaf = pos * n_envs + env
        self.tree = SumTree(self.buffer_size * self.n_envs)

    def reset(self) -> None:
        """Empty the buffer as SB3's ``reset()`` does, priorities and beta included."""
        super().reset()
        self.tree = SumTree(self.buffer_size * self.n_envs)
        self.max_priority = 1.0
        self.beta = self.beta0

    def set_progress(self, progress: float) -> None:
        """Anneal beta linearly from ``beta0`` (progress 0) to 1 (progress 1)."""
        progress = min(max(float(progress), 0.0), 1.0)
        self.beta = self.beta0 + (1.0 - self.beta0) * progress

    def add(self, obs, next_obs, action, reward, done, infos: list[dict[str, Any]]) -> None:
        leaves = self.pos * self.n_envs + np.arange(self.n_envs)
        super().add(obs, next_obs, action, reward, done, infos)
        self.tree.update(leaves, self.max_priority**self.alpha)

    def sample(
        self, batch_size: int, env: VecNormalize | None = None
    ) -> PrioritizedReplayBufferSamples:
        leaves = self.tree.sample(batch_size)
        probs = self.tree[leaves] / self.tree.total
        n_stored = self.size() * self.n_envs
        weights = (n_stored * probs) ** (-self.beta)
        weights /= weights.max()
        slot, env_idx = np.divmod(leaves, self.n_envs)
        base = self._samples_at(slot, env_idx, env)
        return PrioritizedReplayBufferSamples(
            *base,
            discounts=None,
            weights=self.to_torch(weights.astype(np.float32).reshape(-1, 1)),
            indices=leaves,
        )

    def _samples_at(self, slot: np.ndarray, env_idx: np.ndarray, env: VecNormalize | None):
        data = (
            self._normalize_obs(self.observations[slot, env_idx, :], env),
            self.actions[slot, env_idx, :],
            self._normalize_obs(self.next_observations[slot, env_idx, :], env),
            (self.dones[slot, env_idx] * (1 - self.timeouts[slot, env_idx])).reshape(-1, 1),
            self._normalize_reward(self.rewards[slot, env_idx].reshape(-1, 1), env),
        )
        return tuple(map(self.to_torch, data))

    def update_priorities(self, indices: np.ndarray, td_errors: np.ndarray | th.Tensor) -> None:
        """Set ``p_i = |delta_i| + eps`` for the sampled ``indices``."""
        if isinstance(td_errors, th.Tensor):
            td_errors = td_errors.detach().cpu().numpy()
        priorities = np.abs(np.asarray(td_errors, dtype=np.float64).reshape(-1)) + self.eps
        self.max_priority = max(self.max_priority, float(priorities.max()))
        self.tree.update(indices, priorities**self.alpha)
