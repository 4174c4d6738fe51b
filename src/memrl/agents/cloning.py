"""Behaviour cloning of oracle Passive T-Maze runs, and the greedy success rate of what it
trained: the memory card's trainer and evaluation, the same for every policy of
:mod:`memrl.agents.offline_policies` (transformers and recurrent cores alike).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

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
from memrl.envs.pomdp import PassiveTMaze
from memrl.envs.tmaze_oracle import Trajectories


# =========================================================================== training
def train(
    data: Sequence[Trajectories], p: OfflineParams, seed: int, device: str = "cpu"
) -> tuple[nn.Module, list[float]]:
    """Behaviour cloning: cross-entropy of the oracle's actions at every step, Adam(W),
    ``p.epochs`` passes over every trajectory (batches of one length at a time, shuffled).
    How a batch is learned depends on the policy (:data:`~memrl.agents.offline_policies.K_KIND`): in segments of ``K``
    steps, the state or memory carried and detached, one step per segment (:func:`_segments`);
    RATE with backpropagation through all its memory, one step per trajectory
    (``rate_bptt``); the RTRL core by exact real-time recurrent learning (:func:`_rtrl`).

    :return: the trained policy and the mean loss of each epoch.
    """
    g = th.Generator().manual_seed(seed)
    obs_dim = data[0].observations.shape[-1]
    policy = make_policy(obs_dim, len(PassiveTMaze.MOVES), p).to(device)  # the maze's moves
    opt = th.optim.AdamW(policy.parameters(), lr=p.learning_rate, weight_decay=p.weight_decay)
    learn = {"rate_bptt": _whole, "rtrl": _rtrl}.get(p.model, _segments)
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
            total, count = total + learn(policy, opt, p, obs, act, rtg) * len(idx), count + len(idx)
        losses.append(total / count)
    return policy, losses


def _update(policy: nn.Module, opt: th.optim.Optimizer, p: OfflineParams, loss: th.Tensor) -> None:
    opt.zero_grad(set_to_none=True)
    loss.backward()
    nn.utils.clip_grad_norm_(policy.parameters(), p.grad_clip)
    opt.step()


def _ce(logits: th.Tensor, act: th.Tensor) -> th.Tensor:
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), act.reshape(-1))


def _detach(state: Any) -> Any:
    return tuple(s.detach() for s in state) if isinstance(state, tuple) else state.detach()


def _segments(policy, opt, p: OfflineParams, obs, act, rtg) -> float:
    """Segments of ``K`` steps in order, each its own loss and optimiser step; the state (a
    core's) or memory (RATE's) enters the next segment detached: gradients reach ``K`` steps
    back at most. The decision transformer reads each segment on its own."""
    K, T = p.context, obs.shape[1]
    if isinstance(policy, TrajectoryTransformer):
        carried = policy.initial_memory(len(obs))
    else:
        carried = policy.core.initial_state(len(obs))
        prev = F.pad(act[:, :-1], (1, 0), value=-1)
    total = 0.0
    for s in range(0, T, K):
        w = slice(s, s + K)
        if isinstance(policy, TrajectoryTransformer):
            logits, carried = policy.segment(obs[:, w], act[:, w], rtg[:, w], carried)
        else:
            y, carried = policy.core(policy.inputs(obs[:, w], prev[:, w], rtg[:, w]), carried)
            logits = policy.head(y)
        loss = _ce(logits, act[:, w])
        _update(policy, opt, p, loss)
        carried = _detach(carried)
        total += loss.item() * logits.shape[1]
    return total / T


def _whole(policy, opt, p: OfflineParams, obs, act, rtg) -> float:
    """The whole trajectory at once, backpropagation through all of it, one step."""
    loss = _ce(policy(obs, act, rtg), act)
    _update(policy, opt, p, loss)
    return loss.item()


def _rtrl(policy, opt, p: OfflineParams, obs, act, rtg) -> float:
    """Exact real-time recurrent learning: step by step, the core's sensitivities carried
    forward and each step's loss gradient added at once (the head's by autograd, the core's
    as ``dL_t/dc_t * S_t``); one optimiser step for the trajectory, the gradient exactly
    backpropagation's."""
    B, T = act.shape
    core = policy.core
    x = policy.inputs(obs, F.pad(act[:, :-1], (1, 0), value=-1), rtg)
    c, sens = core.initial_state(B).to(x), core.sensitivities(B)
    opt.zero_grad(set_to_none=True)
    total = 0.0
    for t in range(T):
        c, sens = core.rtrl_step(x[:, t], c, sens)
        leaf = c.clone().requires_grad_()
        loss = F.cross_entropy(policy.head(leaf), act[:, t], reduction="sum") / (B * T)
        loss.backward()
        core.accumulate(leaf.grad, sens)
        total += loss.item()
    nn.utils.clip_grad_norm_(policy.parameters(), p.grad_clip)
    opt.step()
    return total


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


def success_rate(policy: nn.Module, length: int, episodes: int, seed: int) -> float:
    """Greedy success rate on ``episodes`` Passive T-Mazes of corridor ``length``."""
    return float(successes(policy, length, episodes, seed).mean())


@th.no_grad()
def successes(policy: nn.Module, length: int, episodes: int, seed: int) -> np.ndarray:
    """Greedy successes (1 or 0) on ``episodes`` Passive T-Mazes of corridor ``length``, run
    side by side (every episode lasts ``length`` steps); env ``i`` seeded ``seed + i``."""
    policy.eval()
    envs = [PassiveTMaze(length) for _ in range(episodes)]
    first = [env.reset(seed=seed + i)[0] for i, env in enumerate(envs)]
    n = episodes
    obs = th.zeros(n, length, len(first[0]))
    act = th.zeros(n, length, dtype=th.long)
    rtg = th.ones(n, length)  # condition on success
    obs[:, 0] = th.as_tensor(np.stack(first))
    won = np.zeros(n)
    actor = Actor(policy, n)
    for t in range(length):
        a = actor.logits(t, obs, act, rtg).argmax(-1)
        act[:, t] = a
        for i, env in enumerate(envs):
            o, r, done, _, _ = env.step(int(a[i]))
            if done:
                won[i] = r
            elif t + 1 < length:
                obs[i, t + 1] = th.as_tensor(o)
    return won
