"""A replay buffer of whole episodes that samples fixed-length subsequences (recurrent agents).

As in pomdp-baselines (Ni et al. 2022): episodes are stored whole; a sample is
``batch`` windows of ``seq_len`` steps, each inside one episode (never across a
boundary), zero-padded at the end of short episodes with a ``mask`` marking the
real steps. Recurrent encoders start every window from a zero state (as the reference
does; R2D2's burn-in of earlier steps is not used by any agent here).

Each window also carries the previous action and previous reward of every step
(zeros before an episode's first step), the inputs recurrent agents condition on.
"""

from __future__ import annotations

from collections import deque
from typing import NamedTuple

import numpy as np


class SequenceSamples(NamedTuple):
    obs: np.ndarray  # (B, T, obs_dim)       o_t
    actions: np.ndarray  # (B, T, act_dim)   a_t
    rewards: np.ndarray  # (B, T)            r_t
    next_obs: np.ndarray  # (B, T, obs_dim)  o_{t+1}
    dones: np.ndarray  # (B, T)              1 where o_{t+1} is terminal
    prev_actions: np.ndarray  # (B, T, act_dim)  a_{t-1} (0 at an episode's start)
    prev_rewards: np.ndarray  # (B, T)            r_{t-1} (0 at an episode's start)
    mask: np.ndarray  # (B, T)               1 on the steps that count in the loss


class Episode(NamedTuple):
    obs: np.ndarray  # (n + 1, obs_dim): every observation, the last one included
    actions: np.ndarray  # (n, act_dim)
    rewards: np.ndarray  # (n,)
    terminated: bool  # True: the last observation is terminal; False: cut by a time limit


class SequenceReplayBuffer:
    """Whole episodes, oldest dropped first once more than ``capacity`` transitions are held."""

    def __init__(self, capacity: int, seq_len: int, seed: int | np.random.SeedSequence = 0) -> None:
        if capacity < 1 or seq_len < 1:
            raise ValueError("capacity and seq_len must be positive")
        self.capacity, self.seq_len = capacity, seq_len
        self.episodes: deque[Episode] = deque()
        self.n_transitions = 0
        self.rng = np.random.default_rng(seed)

    def __len__(self) -> int:
        return self.n_transitions

    def add_episode(self, obs, actions, rewards, terminated: bool) -> None:
        obs = np.asarray(obs, dtype=np.float32)
        actions = np.asarray(actions, dtype=np.float32)
        actions = actions.reshape(len(actions), -1)
        rewards = np.asarray(rewards, dtype=np.float32).reshape(-1)
        n = len(rewards)
        if n < 1 or len(actions) != n or len(obs) != n + 1:
            raise ValueError(
                f"an episode needs n >= 1 actions and rewards and n + 1 observations; got "
                f"{len(obs)} observations, {len(actions)} actions, {n} rewards"
            )
        self.episodes.append(Episode(obs.reshape(n + 1, -1), actions, rewards, bool(terminated)))
        self.n_transitions += n
        while self.n_transitions > self.capacity and len(self.episodes) > 1:
            self.n_transitions -= len(self.episodes.popleft().rewards)

    def sample(self, batch: int) -> SequenceSamples:
        """``batch`` windows; episodes drawn in proportion to their length, starts uniform."""
        if not self.episodes:
            raise ValueError("the buffer is empty")
        lengths = np.array([len(e.rewards) for e in self.episodes])
        picks = self.rng.choice(len(lengths), size=batch, p=lengths / lengths.sum())
        ep0 = self.episodes[0]
        obs_dim, act_dim = ep0.obs.shape[1], ep0.actions.shape[1]
        T = self.seq_len
        out = {
            "obs": np.zeros((batch, T, obs_dim), np.float32),
            "actions": np.zeros((batch, T, act_dim), np.float32),
            "rewards": np.zeros((batch, T), np.float32),
            "next_obs": np.zeros((batch, T, obs_dim), np.float32),
            "dones": np.zeros((batch, T), np.float32),
            "prev_actions": np.zeros((batch, T, act_dim), np.float32),
            "prev_rewards": np.zeros((batch, T), np.float32),
            "mask": np.zeros((batch, T), np.float32),
        }
        for b, i in enumerate(picks):
            ep = self.episodes[i]
            n = len(ep.rewards)
            start = int(self.rng.integers(max(1, n - T + 1)))  # the window [start, stop)
            stop = min(n, start + T)
            k = stop - start
            out["obs"][b, :k] = ep.obs[start:stop]
            out["actions"][b, :k] = ep.actions[start:stop]
            out["rewards"][b, :k] = ep.rewards[start:stop]
            out["next_obs"][b, :k] = ep.obs[start + 1 : stop + 1]
            if ep.terminated and stop == n:
                out["dones"][b, k - 1] = 1.0
            if start > 0:
                out["prev_actions"][b, :k] = ep.actions[start - 1 : stop - 1]
                out["prev_rewards"][b, :k] = ep.rewards[start - 1 : stop - 1]
            else:  # a_{-1} = 0, r_{-1} = 0
                out["prev_actions"][b, 1:k] = ep.actions[: stop - 1]
                out["prev_rewards"][b, 1:k] = ep.rewards[: stop - 1]
            out["mask"][b, :k] = 1.0
        return SequenceSamples(**out)
