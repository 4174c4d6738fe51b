"""The history encoder recurrent agents share: ``[o_t, a_{t-1}, r_{t-1}]`` -> ``h_t``.

Each input is embedded by a linear layer (observation 32, previous action 16,
previous reward 16 units, as pomdp-baselines sizes them), concatenated, passed
through a ReLU and a memory core from :mod:`memrl.memory.cores` (``core_kwargs``
go to the core, e.g. ``context=K`` for the windowed core).
"""

from __future__ import annotations

from typing import Any

import torch as th
from torch import nn
from torch.nn import functional as F

from memrl.memory.cores import make_core


class HistoryEncoder(nn.Module):
    def __init__(
        self, obs_dim: int, act_dim: int, core: str, hidden: int, embed: int = 32, **core_kwargs
    ) -> None:
        super().__init__()
        self.obs_embed = nn.Linear(obs_dim, embed)
        self.act_embed = nn.Linear(act_dim, embed // 2)
        self.rew_embed = nn.Linear(1, embed // 2)
        self.core = make_core(core, 2 * embed, hidden, **core_kwargs)

    def _inputs(self, obs: th.Tensor, prev_act: th.Tensor, prev_rew: th.Tensor) -> th.Tensor:
        x = [self.obs_embed(obs), self.act_embed(prev_act), self.rew_embed(prev_rew[..., None])]
        return F.relu(th.cat(x, -1))

    def initial_state(self, batch: int) -> Any:
        return self.core.initial_state(batch)

    def forward(self, obs, prev_act, prev_rew, state=None) -> tuple[th.Tensor, Any]:
        """Sequence mode: inputs (B, T, .) -> (B, T, hidden), from a zero state by default."""
        state = self.core.initial_state(obs.shape[0]) if state is None else state
        return self.core(self._inputs(obs, prev_act, prev_rew), state)

    def step(self, obs, prev_act, prev_rew, state) -> tuple[th.Tensor, Any]:
        """Step mode: inputs (B, .) -> (B, hidden)."""
        return self.core.step(self._inputs(obs, prev_act, prev_rew), state)
