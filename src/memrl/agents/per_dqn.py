"""DQN with proportional prioritized replay (Schaul et al. 2016, Algorithm 1), on SB3's DQN.

Only the gradient step differs from SB3's ``DQN.train``: the per-sample Huber
loss is weighted by the buffer's importance-sampling weights, the new
``|TD error|`` of every sampled transition becomes its priority, and beta is
annealed to 1 over the run.  Everything else (exploration, target network,
collection) is SB3's.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch as th
import torch.nn.functional as F
from stable_baselines3 import DQN

from memrl.memory.prioritized import PrioritizedReplayBuffer


class PrioritizedDQN(DQN):
    """SB3 DQN that trains on a :class:`PrioritizedReplayBuffer`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("replay_buffer_class", PrioritizedReplayBuffer)
        if not issubclass(kwargs["replay_buffer_class"], PrioritizedReplayBuffer):
            raise TypeError("PrioritizedDQN needs a PrioritizedReplayBuffer (sub)class")
        super().__init__(*args, **kwargs)

    def train(self, gradient_steps: int, batch_size: int = 100) -> None:
        self.policy.set_training_mode(True)
        self._update_learning_rate(self.policy.optimizer)
        buffer: PrioritizedReplayBuffer = self.replay_buffer  # type: ignore[assignment]
        buffer.set_progress(1.0 - self._current_progress_remaining)

        losses = []
        for _ in range(gradient_steps):
            batch = buffer.sample(batch_size, env=self._vec_normalize_env)
            with th.no_grad():
                next_q = self.q_net_target(batch.next_observations).max(dim=1).values.reshape(-1, 1)
                target = batch.rewards + (1 - batch.dones) * self.gamma * next_q
            q = th.gather(self.q_net(batch.observations), dim=1, index=batch.actions.long())
            td_error = target - q
            loss = (batch.weights * F.smooth_l1_loss(q, target, reduction="none")).mean()
            losses.append(loss.item())

            self.policy.optimizer.zero_grad()
            loss.backward()
            th.nn.utils.clip_grad_norm_(self.policy.parameters(), self.max_grad_norm)
            self.policy.optimizer.step()
            buffer.update_priorities(batch.indices, td_error)

        self._n_updates += gradient_steps
        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
        self.logger.record("train/loss", float(np.mean(losses)))
        self.logger.record("train/per_beta", buffer.beta)
