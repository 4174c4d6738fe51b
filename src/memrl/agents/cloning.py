"""Behaviour cloning of oracle Passive T-Maze runs, and the greedy success rate of what it
trained: the memory card's trainer and evaluation, the same for every policy of
:mod:`memrl.agents.offline_policies` (transformers and recurrent cores alike).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch as th
from torch import nn
from torch.nn import functional as F

from memrl.agents.offline_policies import (
    CorePolicy,
    OfflineParams,
    TrajectoryTransformer,
    make_policy,
)
from memrl.envs.tmaze_oracle import Trajectories


# =========================================================================== training
def train(
    data: Sequence[Trajectories], p: OfflineParams, seed: int, device: str = "cpu"
) -> tuple[nn.Module, list[float]]:
    """Behaviour cloning: cross-entropy of the oracle's actions at every step, Adam(W),
    ``p.epochs`` passes over every trajectory (batches of one length at a time, shuffled).

    :return: the trained policy and the mean loss of each epoch.
    """
    g = th.Generator().manual_seed(seed)
    obs_dim, n_actions = data[0].observations.shape[-1], int(max(d.actions.max() for d in data)) + 1
    policy = make_policy(obs_dim, max(n_actions, 2), p).to(device)
    opt = th.optim.AdamW(policy.parameters(), lr=p.learning_rate, weight_decay=p.weight_decay)
    tensors = [
        tuple(th.as_tensor(a, device=device) for a in (d.observations, d.actions, d.returns_to_go))
        for d in data
    ]
    batches = [(i, j) for i, d in enumerate(data) for j in range(0, len(d.actions), p.batch_size)]
    losses = []
    policy.train()
    for _ in range(p.epochs):
        total, count = 0.0, 0
        perms = [th.randperm(len(d.actions), generator=g) for d in data]
        for k in th.randperm(len(batches), generator=g).tolist():
            i, j = batches[k]
            idx = perms[i][j : j + p.batch_size]
            obs, act, rtg = (t[idx] for t in tensors[i])
            logits = policy(obs, act, rtg)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), act.reshape(-1))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(policy.parameters(), p.grad_clip)
            opt.step()
            total, count = total + loss.item() * len(idx), count + len(idx)
        losses.append(total / count)
    return policy, losses


# =========================================================================== acting
class Actor:
    """Acting one step at a time, as training read the trajectory: a core in step mode from
    its carried state; RATE over the current segment after the memory of the finished ones;
    the decision transformer over the last ``K`` steps.

    ``obs``, ``act``, ``rtg``: (n, T, .) buffers the caller fills, ``act`` up to ``t - 1``."""

    def __init__(self, policy: nn.Module, n: int) -> None:
        self.policy, self.n = policy, n
        self.state = policy.core.initial_state(n) if isinstance(policy, CorePolicy) else None
        self.memory = (
            policy.initial_memory(n) if isinstance(policy, TrajectoryTransformer) else None
        )

    @th.no_grad()
    def logits(self, t: int, obs: th.Tensor, act: th.Tensor, rtg: th.Tensor) -> th.Tensor:
        p = self.policy
        if isinstance(p, CorePolicy):
            prev = act[:, t - 1] if t else th.full((self.n,), -1)
            y, self.state = p.core.step(p.inputs(obs[:, t], prev, rtg[:, t]), self.state)
            return p.head(y)
        K = p.K
        if p.M and t and t % K == 0:  # a segment finished: write its memory
            s = slice(t - K, t)
            _, self.memory = p.segment(obs[:, s], act[:, s], rtg[:, s], self.memory)
        w = slice((t // K) * K if p.M else max(0, t - K + 1), t + 1)
        return p.segment(obs[:, w], act[:, w], rtg[:, w], self.memory)[0][:, -1]


@th.no_grad()
def success_rate(policy: nn.Module, length: int, episodes: int, seed: int) -> float:
    """Greedy success rate on ``episodes`` Passive T-Mazes of corridor ``length``, run side
    by side (every episode lasts ``length`` steps); env ``i`` seeded ``seed + i``."""
    from memrl.envs.pomdp import PassiveTMaze

    policy.eval()
    envs = [PassiveTMaze(length) for _ in range(episodes)]
    first = [env.reset(seed=seed + i)[0] for i, env in enumerate(envs)]
    n = episodes
    obs = th.zeros(n, length, len(first[0]))
    act = th.zeros(n, length, dtype=th.long)
    rtg = th.ones(n, length)  # condition on success
    obs[:, 0] = th.as_tensor(np.stack(first))
    successes = np.zeros(n)
    actor = Actor(policy, n)
    for t in range(length):
        a = actor.logits(t, obs, act, rtg).argmax(-1)
        act[:, t] = a
        for i, env in enumerate(envs):
            o, r, done, _, _ = env.step(int(a[i]))
            if done:
                successes[i] = r
            elif t + 1 < length:
                obs[i, t + 1] = th.as_tensor(o)
    return float(successes.mean())
