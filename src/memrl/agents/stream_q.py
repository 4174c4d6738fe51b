"""Stream Q(λ) (Elsayed, Vasan & Mahmood 2024, "Streaming Deep Reinforcement Learning Finally
Works"), readable top to bottom; reference: mohmdelsayed/streaming-drl, ``stream_q_minatar.py``,
``optim.py`` (ObGD), ``sparse_init.py``, ``normalization_wrappers.py``.

Every transition is learned from once, as it arrives: no replay buffer, no batch, no target
network. What makes that stable (the paper's ablations):

- **ObGD**, SGD along an eligibility trace with an effective step-size bound::

      z  <- gamma * lambda * z + grad_theta Q(s, a)          (z <- 0 at an episode's end
                                                              or after a non-greedy action:
                                                              Watkins's Q(lambda))
      delta = r + gamma * (1 - done) * max_a' Q(s', a') - Q(s, a)
      M = alpha * kappa * max(|delta|, 1) * ||z||_1
      theta <- theta + (alpha / max(M, 1)) * delta * z

  so one update never moves ``Q(s, a)`` past its target by more than the bound allows;
- **sparse initialisation**: 90% of each unit's incoming weights zero, the rest uniform in
  +-1/sqrt(fan_in); biases zero;
- **LayerNorm without parameters** after the convolution and the hidden layer;
- **online normalisation** of observations (running mean and variance per element) and
  **scaling** of rewards by the running standard deviation of the discounted return
  (:mod:`memrl.envs.stream_normalisation`).

The network is the reference's MinAtar one: a 3x3 convolution with 16 channels, LayerNorm,
leaky ReLU, a 128-unit layer, LayerNorm, leaky ReLU, one output per action. Exploration is
epsilon-greedy, annealed linearly from ``epsilon_start`` to ``epsilon_target`` over
``exploration_fraction`` of the budget. A non-greedy action is one that differs from the
greedy one (a random draw of the greedy action keeps the trace).

Deviations: the transition's two forward passes are one batched pass ([s, s'], the loss only
on s: the same gradient); exploration draws from a generator of its own (the reference:
numpy's global one).
"""

from __future__ import annotations

import math
from typing import Annotated

import numpy as np
import torch as th
from pydantic import Field
from torch import nn
from torch.nn import functional as F

from memrl.agents import schedules
from memrl.agents.contract import NO_EVALS, EnvFn, Evals, TrainLog
from memrl.schema import PosFloat, PosInt, Prob, StrictModel


class StreamQParams(StrictModel):
    """Stream Q(lambda); defaults: the reference's ``stream_q_minatar.py`` command line."""

    hidden_size: PosInt = 128
    lr: PosFloat = 1.0
    gamma: Annotated[float, Field(gt=0, le=1)] = 0.99
    lamda: Annotated[float, Field(ge=0, le=1)] = 0.8
    kappa: PosFloat = 2.0
    epsilon_start: Prob = 1.0
    epsilon_target: Prob = 0.01
    exploration_fraction: Prob = 0.2
    sparsity: Prob = 0.9


def sparse_init_(w: th.Tensor, sparsity: float) -> th.Tensor:
    """Uniform in +-1/sqrt(fan_in), then ``ceil(sparsity * fan_in)`` of each output unit's
    incoming weights zeroed (random positions): the reference's ``sparse_init``."""
    fan_in = math.prod(w.shape[1:])
    zeros = int(math.ceil(sparsity * fan_in))
    with th.no_grad():
        w.uniform_(-math.sqrt(1.0 / fan_in), math.sqrt(1.0 / fan_in))
        for unit in w.view(w.shape[0], -1):
            unit[th.randperm(fan_in)[:zeros]] = 0.0
    return w


class LayerNorm(nn.Module):
    """LayerNorm over every axis but the batch, with no learned scale or shift."""

    def forward(self, x: th.Tensor) -> th.Tensor:
        return F.layer_norm(x, x.shape[1:])


def q_network(obs_shape: tuple[int, ...], n_actions: int, p: StreamQParams) -> nn.Sequential:
    """The reference's MinAtar network: conv 3x3 (16) -> LayerNorm -> leaky ReLU -> linear
    (``hidden_size``) -> LayerNorm -> leaky ReLU -> one output per action; sparse weights,
    zero biases."""
    c, h, w = obs_shape
    net = nn.Sequential(
        nn.Conv2d(c, 16, 3, stride=1),
        LayerNorm(),
        nn.LeakyReLU(),
        nn.Flatten(),
        nn.Linear(16 * (h - 2) * (w - 2), p.hidden_size),
        LayerNorm(),
        nn.LeakyReLU(),
        nn.Linear(p.hidden_size, n_actions),
    )
    for m in net:
        if isinstance(m, nn.Linear | nn.Conv2d):
            sparse_init_(m.weight, p.sparsity)
            nn.init.zeros_(m.bias)
    return net


class ObGD:
    """SGD along eligibility traces with the overshooting bound (the reference's ``ObGD``)::

    z <- gamma lambda z + grad Q(s, a);  M = alpha kappa max(|delta|, 1) ||z||_1
    theta <- theta + (alpha / max(M, 1)) delta z;  z <- 0 on a reset
    """

    def __init__(self, params: list[nn.Parameter], p: StreamQParams) -> None:
        self.params = params
        self.traces = [th.zeros_like(q) for q in params]
        self.p = p

    @th.no_grad()
    def step(self, delta: float, reset: bool) -> None:
        p = self.p
        th._foreach_mul_(self.traces, p.gamma * p.lamda)
        th._foreach_add_(self.traces, [q.grad for q in self.params])
        z_sum = float(sum(t.abs().sum() for t in self.traces))
        bound = max(abs(delta), 1.0) * z_sum * p.lr * p.kappa
        size = p.lr / bound if bound > 1 else p.lr
        th._foreach_add_(self.params, self.traces, alpha=size * delta)
        if reset:
            for t in self.traces:
                t.zero_()


def epsilon(p: StreamQParams, step: int, total_steps: int) -> float:
    """Linear from ``epsilon_start`` to ``epsilon_target`` over ``exploration_fraction`` of
    the run (``step`` counts from 1, as the reference's)."""
    span = p.exploration_fraction * total_steps
    return schedules.linear(step, 0, span, p.epsilon_start, p.epsilon_target)


def train(
    env_fn: EnvFn, p: StreamQParams, total_steps: int, seed: int, evals: Evals = NO_EVALS
) -> TrainLog:
    """Stream Q(lambda) for ``total_steps`` steps on ``env_fn(seed)``, its observations
    normalised and rewards scaled online; returns the training episodes' raw returns and
    lengths (no greedy evaluation: ``evals`` is not used; the paper reports training
    returns)."""
    from memrl.envs.stream_normalisation import NormalizeObservation, ScaleReward

    th.manual_seed(seed)
    rng = np.random.default_rng(seed)
    raw = env_fn(seed)
    env = ScaleReward(NormalizeObservation(raw), gamma=p.gamma)
    n_actions = int(env.action_space.n)
    net = q_network(env.observation_space.shape, n_actions, p)
    opt = ObGD(list(net.parameters()), p)
    returns, lengths, ret, length = [], [], 0.0, 0
    obs, _ = env.reset(seed=seed)
    s = th.as_tensor(obs)[None]
    for t in range(1, total_steps + 1):
        # ---- act: epsilon-greedy on Q(s); a random action unlike the greedy one is
        # non-greedy (it cuts the trace, as Watkins's Q(lambda))
        q = net(s)[0]  # kept for the update: the parameters do not change before it
        greedy = int(q.argmax())
        a, nongreedy = greedy, False
        if rng.random() < epsilon(p, t, total_steps):
            a = int(rng.integers(n_actions))
            nongreedy = a != greedy
        obs, r, terminated, truncated, _ = env.step(a)
        s_next = th.as_tensor(obs)[None]
        done = terminated or truncated

        # ---- learn from this transition once: delta = r + gamma max Q(s', .) - Q(s, a)
        with th.no_grad():
            target = float(r) + (0.0 if done else p.gamma * float(net(s_next).max()))
        delta = target - float(q[a].detach())
        for w in opt.params:
            w.grad = None
        q[a].backward()
        opt.step(delta, reset=done or nongreedy)

        ret, length = ret + env.raw, length + 1  # the env's own reward, unscaled
        if done:
            returns.append(ret)
            lengths.append(length)
            ret, length = 0.0, 0
            obs, _ = env.reset()
            s_next = th.as_tensor(obs)[None]
        s = s_next
    return {"episode_returns": returns, "episode_lengths": lengths}
