"""Small network builders shared by the agents."""

from __future__ import annotations

from collections.abc import Iterable

import torch as th
from torch import nn


def mlp(inp: int, out: int, hidden: list[int]) -> nn.Sequential:
    """``inp -> hidden... (ReLU) -> out`` (linear output)."""
    layers: list[nn.Module] = []
    for h in hidden:
        layers += [nn.Linear(inp, h), nn.ReLU()]
        inp = h
    return nn.Sequential(*layers, nn.Linear(inp, out))


def adam(params, lr: float) -> th.optim.Adam:
    """Adam with the fused kernel (one kernel for all parameters, CPU and CUDA): for the
    small networks here, the per-parameter loop of the default Adam is a quarter of an update."""
    return th.optim.Adam(list(params), lr=lr, fused=True)


def optimise(opt: th.optim.Optimizer, loss: th.Tensor) -> None:
    """One gradient step of ``opt`` on ``loss``."""
    opt.zero_grad()
    loss.backward()
    opt.step()


@th.no_grad()
def polyak(target: Iterable[th.Tensor], online: Iterable[th.Tensor], tau: float) -> None:
    """``target <- (1 - tau) target + tau online``, all tensors in one batched call."""
    t, o = list(target), list(online)
    if len(t) != len(o):
        raise ValueError(f"{len(t)} target tensors for {len(o)} online ones")
    th._foreach_lerp_(t, o, tau)
