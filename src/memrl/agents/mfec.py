"""Model-Free Episodic Control (Blundell et al. 2016), with optional state aggregation (Pinto 2020).

The agent keeps one :class:`~memrl.memory.episodic.EpisodicMemory` per action.
Observations are embedded by a fixed Gaussian random projection
``phi(o) = A o`` (``A`` with i.i.d. N(0, 1/key_dim) entries, so distances are
roughly preserved). Acting is epsilon-greedy on ``Q_EC(phi(o), a)``: the stored
value for a state seen before, else the mean of its ``k`` nearest neighbours.
At the end of every episode each visited ``(phi(s_t), a_t)`` is written with
its Monte-Carlo return ``R_t = sum_j gamma^j r_{t+j}`` (gamma = 1 in the paper)
by ``Q <- max(Q, R_t)``.

With ``merge_radius > 0`` a new key within that distance of a stored key is
merged into it (Pinto 2020): the table holds fewer keys, so each kNN search
scans fewer.
"""

from __future__ import annotations

import time
from typing import Annotated

import numpy as np
from pydantic import Field

from memrl.agents import schedules
from memrl.agents.contract import NO_EVALS, EnvFn, Evals, TrainLog
from memrl.memory.episodic import EpisodicMemory
from memrl.schema import PosInt, Prob, StrictModel


class MFECParams(StrictModel):
    """Model-Free Episodic Control (Blundell et al. 2016)."""

    key_dim: PosInt
    k: PosInt
    capacity: PosInt
    gamma: Annotated[float, Field(gt=0, le=1)]
    epsilon_start: Prob
    epsilon_final: Prob
    exploration_fraction: Prob
    merge_radius: Annotated[float, Field(ge=0)] = 0.0


def greedy(q: np.ndarray, rng: np.random.Generator) -> int:
    """``argmax q``, ties broken uniformly at random (no draw when there is no tie)."""
    best = np.flatnonzero(q == q.max())
    return int(best[0] if len(best) == 1 else rng.choice(best))


def discounted_returns(rewards: list[float], gamma: float) -> np.ndarray:
    """``R_t = r_t + gamma R_{t+1}`` for every step of one finished episode."""
    out = np.zeros(len(rewards))
    acc = 0.0
    for t in range(len(rewards) - 1, -1, -1):
        acc = rewards[t] + gamma * acc
        out[t] = acc
    return out


class MFEC:
    """Episodic tables, projection and the epsilon-greedy policy (no environment inside)."""

    def __init__(self, obs_dim: int, n_actions: int, p: MFECParams, seed: int) -> None:
        self.p = p
        self.rng = np.random.default_rng(seed)
        self.n_actions = n_actions
        self.projection = self.rng.normal(
            0.0, 1.0 / np.sqrt(p.key_dim), (p.key_dim, obs_dim)
        ).astype(np.float32)
        # one table per action, each searched on its own: one product over all the tables'
        # keys at once searches the fullest table's rows for every action and ran the default's
        # SpaceInvaders jobs 1.06x slower (benchmarks/mfec_lookup.py)
        self.tables = [
            EpisodicMemory(p.capacity, p.key_dim, k=p.k, merge_radius=p.merge_radius)
            for _ in range(n_actions)
        ]
        self.lookup_seconds = 0.0

    def embed(self, obs: np.ndarray) -> np.ndarray:
        # always one matrix-vector product, so equal observations give bit-equal keys
        return self.projection @ np.asarray(obs, dtype=np.float32).ravel()

    def q_values(self, key: np.ndarray) -> np.ndarray:
        t = time.perf_counter()
        q = np.array([m.estimate(key[None])[0] for m in self.tables])
        self.lookup_seconds += time.perf_counter() - t
        return q

    def act(self, key: np.ndarray, epsilon: float) -> int:
        if self.rng.random() < epsilon:
            return int(self.rng.integers(self.n_actions))
        return greedy(self.q_values(key), self.rng)

    def write_episode(
        self, keys: list[np.ndarray], actions: list[int], rewards: list[float]
    ) -> None:
        for key, a, ret in zip(
            keys, actions, discounted_returns(rewards, self.p.gamma), strict=True
        ):
            self.tables[a].write(key, ret)

    @property
    def memory_size(self) -> int:
        return sum(len(m) for m in self.tables)

    @property
    def scanned(self) -> int:
        return sum(m.scanned for m in self.tables)


def train(
    env_fn: EnvFn, p: MFECParams, total_steps: int, seed: int, evals: Evals = NO_EVALS
) -> TrainLog:
    """Run MFEC for ``total_steps`` environment steps on ``env_fn(seed)``; returns
    per-episode logs and memory stats (``memory_sizes``: keys stored at each step count of
    ``evals.at``, then at the end). MFEC has no greedy evaluation."""
    env = env_fn(seed)
    agent = MFEC(int(np.prod(env.observation_space.shape)), env.action_space.n, p, seed)
    obs, _ = env.reset(seed=seed)
    keys: list[np.ndarray] = []
    actions: list[int] = []
    rewards: list[float] = []
    returns, lengths = [], []
    decay_steps = int(p.exploration_fraction * total_steps)
    record, sizes = set(evals.at), []
    for step in range(total_steps):
        if step in record:
            sizes.append(agent.memory_size)
        key = agent.embed(obs)
        eps = schedules.linear(step, 0, max(1, decay_steps), p.epsilon_start, p.epsilon_final)
        a = agent.act(key, eps)
        obs, r, terminated, truncated, _ = env.step(a)
        keys.append(key)
        actions.append(a)
        rewards.append(float(r))
        if terminated or truncated:
            agent.write_episode(keys, actions, rewards)
            returns.append(float(sum(rewards)))
            lengths.append(len(rewards))
            keys, actions, rewards = [], [], []
            obs, _ = env.reset()
    env.close()
    return {
        "episode_returns": returns,
        "episode_lengths": lengths,
        "memory_size": agent.memory_size,
        "memory_sizes": [*sizes, agent.memory_size],
        "scanned_per_step": agent.scanned / total_steps,
        "lookup_seconds": agent.lookup_seconds,
    }
