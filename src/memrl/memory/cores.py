"""Recurrent memory cores with one interface: sequence mode for training, step mode for acting.

Every core maps inputs ``x`` (batch, time, in) and a state to outputs
(batch, time, hidden) and the state after the last step; ``step`` does one
time step. :class:`GRUCore` and :class:`LSTMCore` wrap torch's fused layers;
:class:`FFMCore` is Fast and Forgetful Memory (Morad et al. 2023), written from
the paper's equations:

    [x~, g_in, thru, g_out] = Linear(x)
    S_t = gamma * S_{t-1} + (x~ * sigmoid(g_in))          S: m x c complex, gamma_jk = exp(a_j + i b_k), a_j < 0
    z_t = Linear([Re S_t, Im S_t])
    y_t = LayerNorm(z_t) * sigmoid(g_out) + thru * (1 - sigmoid(g_out))

In sequence mode the recurrence is solved in closed form,
``S_t = gamma^t (S_0 + sum_{i<=t} gamma^{-i} u_i)``, as one cumulative sum per
chunk of time steps (complex128, chunks short enough that ``|gamma|^{-t}``
cannot overflow), so training costs no Python loop over time.
"""

from __future__ import annotations

import math

import torch as th
from torch import nn


class GRUCore(nn.Module):
    """``nn.GRU`` (one layer, batch first); state: (1, batch, hidden)."""

    def __init__(self, input_size: int, hidden_size: int) -> None:
        super().__init__()
        self.hidden_size = hidden_size
        self.rnn = nn.GRU(input_size, hidden_size, batch_first=True)

    def initial_state(self, batch: int) -> th.Tensor:
        return th.zeros(1, batch, self.hidden_size)

    def forward(self, x: th.Tensor, state: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        return self.rnn(x, state)

    def step(self, x: th.Tensor, state: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        y, state = self.rnn(x[:, None], state)
        return y[:, 0], state


class LSTMCore(GRUCore):
    """``nn.LSTM`` (one layer, batch first); state: a pair (h, c), each (1, batch, hidden)."""

    def __init__(self, input_size: int, hidden_size: int) -> None:
        nn.Module.__init__(self)
        self.hidden_size = hidden_size
        self.rnn = nn.LSTM(input_size, hidden_size, batch_first=True)

    def initial_state(self, batch: int) -> tuple[th.Tensor, th.Tensor]:
        z = th.zeros(1, batch, self.hidden_size)
        return z, z.clone()


class FFMCore(nn.Module):
    """Fast and Forgetful Memory.

    :param memory_size: ``m``, traces per context (decay rates ``a_j``).
    :param context_size: ``c``, oscillation frequencies ``b_k`` per trace.
    :param max_period: decays initialised so the slowest trace falls to 1% after
        this many steps, frequencies spread over periods 1..max_period.
    :param chunk: time steps per closed-form chunk (bounds ``|gamma|^{-t}``).
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        memory_size: int = 32,
        context_size: int = 8,
        max_period: int = 1024,
        chunk: int = 64,
    ) -> None:
        super().__init__()
        self.hidden_size, self.m, self.c, self.chunk = hidden_size, memory_size, context_size, chunk
        self.pre = nn.Linear(input_size, 2 * memory_size + 2 * hidden_size)
        self.mix = nn.Linear(2 * memory_size * context_size, hidden_size)
        self.norm = nn.LayerNorm(hidden_size)
        periods = th.linspace(1.0, max_period, memory_size)
        self.log_decay = nn.Parameter(th.log(-math.log(0.01) / periods))  # a = -exp(log_decay) < 0
        self.freq = nn.Parameter(2 * math.pi / th.linspace(1.0, max_period, context_size))

    def initial_state(self, batch: int) -> th.Tensor:
        return th.zeros(batch, self.m, self.c, dtype=th.complex64)

    def _log_gamma(self) -> th.Tensor:
        """log(gamma), shape (m, c): real part < 0 (decay), imaginary part = frequency."""
        a = -self.log_decay.exp().clamp(max=4.6)  # at most a 100x fall per step (bounds the chunk)
        return th.complex(
            a[:, None].expand(self.m, self.c), self.freq[None, :].expand(self.m, self.c)
        )

    def _split(self, x: th.Tensor) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
        u, g_in, thru, g_out = self.pre(x).split(
            [self.m, self.m, self.hidden_size, self.hidden_size], -1
        )
        return u * th.sigmoid(g_in), thru, th.sigmoid(g_out)

    def _readout(self, s: th.Tensor, thru: th.Tensor, gate: th.Tensor) -> th.Tensor:
        flat = th.cat([s.real, s.imag], -1).flatten(-2).to(thru.dtype)
        return self.norm(self.mix(flat)) * gate + thru * (1 - gate)

    def forward(self, x: th.Tensor, state: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        u, thru, gate = self._split(x)  # u: (B, T, m)
        log_g = self._log_gamma().to(th.complex128)
        s0 = state.to(th.complex128)
        out = []
        for start in range(0, x.shape[1], self.chunk):
            uc = u[:, start : start + self.chunk].to(th.float64)  # (B, L, m)
            t = th.arange(1, uc.shape[1] + 1, dtype=th.float64)[:, None, None]  # (L, 1, 1)
            g_t = th.exp(t * log_g)  # gamma^t, (L, m, c)
            acc = th.cumsum(uc[..., None] / g_t, dim=1)  # sum_i gamma^{-i} u_i, (B, L, m, c)
            s = g_t * (s0[:, None] + acc)
            out.append(s)
            s0 = s[:, -1]
        s_all = th.cat(out, 1)
        return self._readout(s_all, thru, gate), s0.to(state.dtype)

    def step(self, x: th.Tensor, state: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        u, thru, gate = self._split(x)  # u: (B, m)
        s = th.exp(self._log_gamma()) * state + u[..., None]
        return self._readout(s, thru, gate), s


def make_core(kind: str, input_size: int, hidden_size: int, **kwargs) -> nn.Module:
    """``"gru"``, ``"lstm"`` or ``"ffm"``."""
    cores = {"gru": GRUCore, "lstm": LSTMCore, "ffm": FFMCore}
    if kind not in cores:
        raise ValueError(f"unknown memory core {kind!r}; choose one of {sorted(cores)}")
    return cores[kind](input_size, hidden_size, **kwargs)
