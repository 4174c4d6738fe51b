"""Neural Episodic Control (Pritzel et al. 2017), readable top to bottom.

- An embedding network ``f`` maps an observation to a key ``h = f(s)`` (the
  MinAtar convolutional torso for frames, a small MLP for vectors).
- One :class:`~memrl.memory.dnd.DND` per action estimates ``Q(s, a)`` as the
  kernel-weighted mean of the values of the ``p`` nearest keys.
- Acting is epsilon-greedy on those estimates.
- Every step's N-step return ``G_t = sum_{j<N} gamma^j r_{t+j} + gamma^N max_a Q(s_{t+N}, a)``
  is computed once it is known (N steps later, or at the episode's end) and
  (1) written into ``DND_{a_t}`` under ``h_t`` (tabular update with rate
  ``alpha`` if the key is already there) and (2) stored with ``s_t`` in a replay
  memory.
- Every ``train_freq`` steps a minibatch ``(s, a, G)`` from replay trains the
  embedding network and the neighbours' keys and values on ``(Q(s, a) - G)^2``.
"""

from __future__ import annotations

from typing import Annotated, Any

import numpy as np
import torch as th
from pydantic import Field
from torch import nn

from memrl.agents import schedules
from memrl.agents.contract import NO_EVALS, EnvFn, Evals, TrainLog
from memrl.agents.mfec import greedy
from memrl.memory.dnd import DND
from memrl.schema import NonNegInt, PosFloat, PosInt, Prob, StrictModel


class NECParams(StrictModel):
    """Neural Episodic Control (Pritzel et al. 2017)."""

    key_dim: PosInt
    capacity: PosInt
    neighbours: PosInt
    delta: PosFloat
    alpha: Prob
    learning_rate: PosFloat
    dnd_learning_rate: Annotated[float, Field(ge=0)]
    buffer_size: PosInt
    batch_size: PosInt
    n_step: PosInt
    gamma: Annotated[float, Field(gt=0, le=1)]
    train_freq: PosInt
    learning_starts: NonNegInt
    epsilon_start: Prob
    epsilon_final: Prob
    exploration_fraction: Prob


def embedding_network(obs_shape: tuple[int, ...], key_dim: int) -> nn.Module:
    """MinAtar torso (3x3 conv, 16 channels) for frames; a 2-layer MLP for vectors."""
    if len(obs_shape) == 3:
        c, h, w = obs_shape
        return nn.Sequential(
            nn.Conv2d(c, 16, 3), nn.ReLU(), nn.Flatten(), nn.Linear(16 * (h - 2) * (w - 2), key_dim)
        )
    return nn.Sequential(nn.Linear(int(np.prod(obs_shape)), 64), nn.ReLU(), nn.Linear(64, key_dim))


class NStepReturns:
    """Turns an episode's stream of steps into N-step targets as soon as each is known."""

    def __init__(self, n: int, gamma: float) -> None:
        self.n, self.gamma = n, gamma
        self.pending: list[tuple[Any, float]] = []  # (payload, reward) of steps awaiting a target

    def _target(self, bootstrap: float) -> tuple[Any, float]:
        g = sum(self.gamma**j * r for j, (_, r) in enumerate(self.pending))
        g += self.gamma ** len(self.pending) * bootstrap
        return self.pending.pop(0)[0], g

    def step(self, payload: Any, reward: float, next_max_q: float) -> list[tuple[Any, float]]:
        """Add a non-final step; returns the (payload, G) that is now complete, if any."""
        self.pending.append((payload, reward))
        return [self._target(next_max_q)] if len(self.pending) == self.n else []

    def end(self, payload: Any, reward: float, bootstrap: float) -> list[tuple[Any, float]]:
        """Add an episode's last step; returns targets for all pending steps.

        ``bootstrap`` is 0 at a terminal state, ``max_a Q(s_T, a)`` at a time-limit cut.
        """
        self.pending.append((payload, reward))
        return [self._target(bootstrap) for _ in range(len(self.pending))]


def train(
    env_fn: EnvFn, p: NECParams, total_steps: int, seed: int, evals: Evals = NO_EVALS
) -> TrainLog:
    """Run NEC for ``total_steps`` environment steps on ``env_fn(seed)``; returns per-episode
    logs (no greedy evaluation: ``evals`` is not used)."""
    th.manual_seed(seed)
    rng = np.random.default_rng(seed)
    env = env_fn(seed)
    n_actions = env.action_space.n
    obs_shape = env.observation_space.shape
    net = embedding_network(obs_shape, p.key_dim)
    opt = th.optim.Adam(net.parameters(), lr=p.learning_rate)
    dnds = [DND(p.capacity, p.key_dim, p.neighbours, p.delta, p.alpha) for _ in range(n_actions)]
    # replay of (s, a, G) for the embedding loss
    rb_obs = np.zeros((p.buffer_size, *obs_shape), dtype=np.float32)
    rb_act = np.zeros(p.buffer_size, dtype=np.int64)
    rb_ret = np.zeros(p.buffer_size, dtype=np.float32)
    rb_n = rb_pos = 0
    nstep = NStepReturns(p.n_step, p.gamma)

    def q_all(o: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        with th.no_grad():
            h = net(th.as_tensor(o[None]))[0].numpy()
        return h, np.array([d.lookup(h)[0] for d in dnds])

    def store(done_steps: list[tuple[Any, float]]) -> None:
        nonlocal rb_n, rb_pos
        for (o, h, a), g in done_steps:
            dnds[a].write(h, g)
            rb_obs[rb_pos], rb_act[rb_pos], rb_ret[rb_pos] = o, a, g
            rb_pos = (rb_pos + 1) % p.buffer_size
            rb_n = min(rb_n + 1, p.buffer_size)

    returns, lengths, losses = [], [], []
    ep_ret, ep_len = 0.0, 0
    obs, _ = env.reset(seed=seed)
    h, q = q_all(obs)
    decay_steps = int(p.exploration_fraction * total_steps)
    for step in range(total_steps):
        eps = schedules.linear(step, 0, max(1, decay_steps), p.epsilon_start, p.epsilon_final)
        if rng.random() < eps:
            a = int(rng.integers(n_actions))
        else:
            a = greedy(q, rng)
        next_obs, r, terminated, truncated, _ = env.step(a)
        ep_ret += float(r)
        ep_len += 1
        next_h, next_q = q_all(next_obs)
        if terminated or truncated:
            store(nstep.end((obs, h, a), float(r), 0.0 if terminated else float(next_q.max())))
            returns.append(ep_ret)
            lengths.append(ep_len)
            ep_ret, ep_len = 0.0, 0
            obs, _ = env.reset()
            h, q = q_all(obs)
        else:
            store(nstep.step((obs, h, a), float(r), float(next_q.max())))
            obs, h, q = next_obs, next_h, next_q

        if step >= p.learning_starts and step % p.train_freq == 0 and rb_n >= p.batch_size:
            idx = rng.integers(rb_n, size=p.batch_size)
            hb = net(th.as_tensor(rb_obs[idx]))
            acts, target = rb_act[idx], th.as_tensor(rb_ret[idx])
            pred = th.zeros(p.batch_size)
            handles = []
            for a_ in np.unique(acts):
                m = np.flatnonzero(acts == a_)
                if len(dnds[a_]) == 0:
                    continue
                nb = dnds[a_].search(hb[m].detach().numpy())
                qa, handle = dnds[a_].read(hb[m], nb)
                pred = pred.index_put((th.as_tensor(m),), qa)
                handles.append((a_, handle))
            loss = ((pred - target) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            for a_, handle in handles:
                dnds[a_].apply_gradients(handle, p.dnd_learning_rate)
            losses.append(loss.item())
    env.close()
    return {
        "episode_returns": returns,
        "episode_lengths": lengths,
        "memory_size": sum(len(d) for d in dnds),
        "final_loss": float(np.mean(losses[-100:])) if losses else float("nan"),
    }
