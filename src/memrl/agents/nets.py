"""Small network builders shared by the agents."""

from __future__ import annotations

from torch import nn


def mlp(inp: int, out: int, hidden: list[int]) -> nn.Sequential:
    """``inp -> hidden... (ReLU) -> out`` (linear output)."""
    layers: list[nn.Module] = []
    for h in hidden:
        layers += [nn.Linear(inp, h), nn.ReLU()]
        inp = h
    return nn.Sequential(*layers, nn.Linear(inp, out))
