"""An element-wise LSTM trained by exact real-time recurrent learning (Irie, Gopalakrishnan &
Schmidhuber 2023, "Exploring the Promise and Limits of Real-Time Recurrent Learning";
reference: IDSIA/rtrl-elstm, ``diagnostic/rtrl_layers.py``, its quasi-LSTM layer).

The recurrence is element-wise in the cell (each unit sees only its own past)::

    z_t = tanh(W_z x_t + v_z * c_{t-1} + b_z)
    f_t = sigmoid(W_f x_t + v_f * c_{t-1} + b_f)
    c_t = f_t * c_{t-1} + (1 - f_t) * z_t            (the output is c_t)

so ``dc_t / dc_{t-1}`` is diagonal and the sensitivities ``dc_t / dtheta`` of a unit involve
only its own row of ``W`` and its own entries of ``v`` and ``b``: (B, H, I) for each matrix
and (B, H) for each vector, carried forward step by step::

    S_t = (f + (1 - f)(1 - z^2) v_z + (c_{t-1} - z) f (1 - f) v_f) * S_{t-1} + immediate_t

The gradient of a loss at step ``t`` is ``dL_t/dc_t * S_t``, exact for every earlier step:
no truncation, no backward pass through time, memory constant in the sequence length.
:meth:`ELSTM.forward` is the same recurrence for backpropagation (acting, and the test that
RTRL's gradient equals BPTT's).
"""

from __future__ import annotations

import torch as th
from torch import nn


class ELSTM(nn.Module):
    """The element-wise (quasi-)LSTM; state: the cell ``c`` (batch, hidden).

    :param forget_bias: added to ``b_f`` at initialisation (the reference's default: 0).
    """

    def __init__(self, input_size: int, hidden_size: int, forget_bias: float = 0.0) -> None:
        super().__init__()
        self.input_size, self.hidden_size = input_size, hidden_size
        # the reference's initialisation: every weight ~ N(0, 0.1^2)
        self.w = nn.Parameter(th.randn(2 * hidden_size, input_size) * 0.1)  # [W_z; W_f]
        self.v = nn.Parameter(th.randn(2, hidden_size) * 0.1)  # v_z, v_f
        self.b = nn.Parameter(th.randn(2, hidden_size) * 0.1)  # b_z, b_f
        with th.no_grad():
            self.b[1] += forget_bias

    def initial_state(self, batch: int) -> th.Tensor:
        return th.zeros(batch, self.hidden_size)

    def _gates(self, x: th.Tensor, c: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        a_z, a_f = (x @ self.w.T).split(self.hidden_size, -1)
        z = th.tanh(a_z + self.v[0] * c + self.b[0])
        f = th.sigmoid(a_f + self.v[1] * c + self.b[1])
        return z, f

    def step(self, x: th.Tensor, c: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        z, f = self._gates(x, c)
        c = f * c + (1 - f) * z
        return c, c

    def forward(self, x: th.Tensor, c: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        """Sequence mode (B, T, I) for acting and backpropagation: outputs (B, T, H)."""
        out = []
        for t in range(x.shape[1]):
            y, c = self.step(x[:, t], c)
            out.append(y)
        return th.stack(out, 1), c

    # ------------------------------------------------------------------ RTRL
    def sensitivities(self, batch: int) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
        """Zero sensitivities of ``c`` to ``w`` (B, 2, H, I), ``v`` and ``b`` (B, 2, H)."""
        H, n_in = self.hidden_size, self.input_size
        return th.zeros(batch, 2, H, n_in), th.zeros(batch, 2, H), th.zeros(batch, 2, H)

    @th.no_grad()
    def rtrl_step(
        self, x: th.Tensor, c: th.Tensor, sens: tuple[th.Tensor, th.Tensor, th.Tensor]
    ) -> tuple[th.Tensor, tuple[th.Tensor, th.Tensor, th.Tensor]]:
        """One step forward, the sensitivities carried with it: (c_t, S_t)."""
        z, f = self._gates(x, c)
        dz = (1 - f) * (1 - z * z)  # dc_t / d(pre-activation of z)
        df = (c - z) * (1 - f) * f  # dc_t / d(pre-activation of f)
        keep = (f + dz * self.v[0] + df * self.v[1])[:, None]  # dc_t / dc_{t-1}, (B, 1, H)
        d = th.stack([dz, df], 1)  # (B, 2, H)
        s_w, s_v, s_b = sens
        s_w = keep[..., None] * s_w + d[..., None] * x[:, None, None, :]
        s_v = keep * s_v + d * c[:, None]
        s_b = keep * s_b + d
        return f * c + (1 - f) * z, (s_w, s_v, s_b)

    @th.no_grad()
    def accumulate(self, dc: th.Tensor, sens: tuple[th.Tensor, th.Tensor, th.Tensor]) -> None:
        """Add ``dL/dc_t * S_t`` (summed over the batch) to the parameters' ``.grad``."""
        s_w, s_v, s_b = sens
        for p, g in (
            (self.w, th.einsum("bh,bkhi->khi", dc, s_w).reshape_as(self.w)),
            (self.v, th.einsum("bh,bkh->kh", dc, s_v)),
            (self.b, th.einsum("bh,bkh->kh", dc, s_b)),
        ):
            p.grad = g if p.grad is None else p.grad + g
