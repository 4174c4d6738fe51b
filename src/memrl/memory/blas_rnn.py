"""LSTM and GRU layers whose matrix products run on numpy's OpenBLAS, gradients by hand.

Under the pinned kernel set (:mod:`memrl.isa`) torch's recurrent layers lose oneDNN's fused
kernels (oneDNN promises equal results only on an identical platform) and their products
run on MKL's ``COMPATIBLE`` branch (SSE2): recurrent SAC then costs 2x per update at the
default profile's sizes. numpy's OpenBLAS, pinned to its Haswell kernels like every numpy
call here, runs the same products 2.2-3.2x faster (``benchmarks/blas_rnn.py``).

:class:`BlasLSTM` and :class:`BlasGRU` are one-layer layers (batch first unless told) with
torch's equations, parameter names, gate order and initialisation (the same seed draws the
same weights as ``nn.LSTM`` / ``nn.GRU``), as a :class:`torch.autograd.Function` each:

    LSTM  [i, f, g, o] = [s, s, tanh, s](x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)
          c_t = f * c_{t-1} + i * g          h_t = o * tanh(c_t)
    GRU   [r, z] = s(x_t W_i^T + b_i + h_{t-1} W_h^T + b_h)          (their r, z rows)
          n = tanh(x_t W_in^T + b_in + r * (h_{t-1} W_hn^T + b_hn))    h_t = (1 - z) * n + z * h_{t-1}

The input products of all steps are one product before the loop, and the weight gradients
one product over all steps after it; the loop itself does one product a step each way and
one compiled call for the step's gates (:mod:`memrl.memory.rnn_cells`).
Outputs and gradients equal torch's to rounding (``tests/test_blas_rnn.py``, in float64).
Tensors on another device than the CPU go through torch's own layers.
"""

from __future__ import annotations

import math

import numpy as np
import torch as th
from torch import nn

from memrl.memory import rnn_cells


def _np(t: th.Tensor) -> np.ndarray:
    return t.detach().numpy()


class _LSTM(th.autograd.Function):
    @staticmethod
    def forward(ctx, x, h0, c0, w_ih, w_hh, b_ih, b_hh):  # x: (T, B, I), time first
        X, Whh = _np(x), _np(w_hh)
        T, B, _ = X.shape
        H = Whh.shape[1]
        XW = (X.reshape(T * B, -1) @ _np(w_ih).T + (_np(b_ih) + _np(b_hh))).reshape(T, B, 4 * H)
        gates, hw = np.empty_like(XW), np.empty((B, 4 * H), X.dtype)
        c = np.empty((T + 1, B, H), X.dtype)
        h = np.empty((T + 1, B, H), X.dtype)
        tc = np.empty((T, B, H), X.dtype)  # tanh(c_t), kept for the backward
        c[0], h[0] = _np(c0), _np(h0)
        WhhT = Whh.T
        for t in range(T):
            np.matmul(h[t], WhhT, out=hw)
            rnn_cells.lstm_step(XW[t], hw, c[t], gates[t], c[t + 1], h[t + 1], tc[t])
        ctx.save_for_backward(x, w_ih, w_hh)
        ctx.kept = gates, c, h, tc
        return tuple(th.from_numpy(a.copy()) for a in (h[1:], h[-1], c[-1]))

    @staticmethod
    def backward(ctx, dy, dh_last, dc_last):
        x, w_ih, w_hh = ctx.saved_tensors
        gates, c, h, tc = ctx.kept
        X, Whh = _np(x), _np(w_hh)
        T, B, _ = X.shape
        H = Whh.shape[1]
        dY = dy.numpy()
        dh, dc = dh_last.numpy().copy(), dc_last.numpy().copy()
        dG = np.empty_like(gates)
        one = X.dtype.type(1)
        for t in reversed(range(T)):
            dh += dY[t]
            rnn_cells.lstm_step_back(gates[t], c[t], tc[t], dh, dc, dG[t], one)
            np.matmul(dG[t], Whh, out=dh)
        D = dG.reshape(T * B, 4 * H)
        db = D.sum(0)
        grads = (
            (D @ _np(w_ih)).reshape(X.shape),
            dh,
            dc,
            D.T @ X.reshape(T * B, -1),
            D.T @ h[:-1].reshape(T * B, H),
            db,
            db.copy(),
        )
        return tuple(th.from_numpy(np.ascontiguousarray(a)) for a in grads)


class _GRU(th.autograd.Function):
    @staticmethod
    def forward(ctx, x, h0, w_ih, w_hh, b_ih, b_hh):  # x: (T, B, I), time first
        X, Whh, bhh = _np(x), _np(w_hh), _np(b_hh)
        T, B, _ = X.shape
        H = Whh.shape[1]
        XW = (X.reshape(T * B, -1) @ _np(w_ih).T + _np(b_ih)).reshape(T, B, 3 * H)
        rz = np.empty((T, B, 2 * H), X.dtype)
        n = np.empty((T, B, H), X.dtype)
        hn = np.empty((T, B, H), X.dtype)  # h_{t-1} W_hn^T + b_hn, which r gates
        h = np.empty((T + 1, B, H), X.dtype)
        h[0] = _np(h0)
        WhhT = Whh.T
        hw = np.empty((B, 3 * H), X.dtype)
        for t in range(T):
            np.add(np.matmul(h[t], WhhT, out=hw), bhh, out=hw)
            rnn_cells.gru_step(XW[t], hw, h[t], rz[t], n[t], hn[t], h[t + 1])
        ctx.save_for_backward(x, w_ih, w_hh)
        ctx.kept = rz, n, hn, h
        return th.from_numpy(h[1:].copy()), th.from_numpy(h[-1].copy())

    @staticmethod
    def backward(ctx, dy, dh_last):
        x, w_ih, w_hh = ctx.saved_tensors
        rz, n, hn, h = ctx.kept
        X, Whh = _np(x), _np(w_hh)
        T, B, _ = X.shape
        H = Whh.shape[1]
        dY = dy.numpy()
        dh = dh_last.numpy().copy()
        dXW = np.empty((T, B, 3 * H), X.dtype)
        dHW = np.empty((T, B, 3 * H), X.dtype)
        one, dhW = X.dtype.type(1), np.empty_like(dh)
        for t in reversed(range(T)):
            dh += dY[t]
            rnn_cells.gru_step_back(rz[t], n[t], hn[t], h[t], dh, dXW[t], dHW[t], one)
            dh += np.matmul(dHW[t], Whh, out=dhW)
        DX, DH = dXW.reshape(T * B, 3 * H), dHW.reshape(T * B, 3 * H)
        grads = (
            (DX @ _np(w_ih)).reshape(X.shape),
            dh,
            DX.T @ X.reshape(T * B, -1),
            DH.T @ h[:-1].reshape(T * B, H),
            DX.sum(0),
            DH.sum(0),
        )
        return tuple(th.from_numpy(np.ascontiguousarray(a)) for a in grads)


class _BlasRNN(nn.Module):
    """One layer with torch's parameters: ``weight_ih_l0`` (G·H, in), ``weight_hh_l0``
    (G·H, H), ``bias_ih_l0``, ``bias_hh_l0``, drawn as torch draws them; batch first unless
    ``batch_first=False`` (then time first, as torch's default)."""

    gates = 0
    torch_layer: type[nn.RNNBase] = nn.RNNBase

    def __init__(self, input_size: int, hidden_size: int, batch_first: bool = True) -> None:
        super().__init__()
        self.input_size, self.hidden_size = input_size, hidden_size
        self.batch_first = batch_first
        G = self.gates * hidden_size
        self.weight_ih_l0 = nn.Parameter(th.empty(G, input_size))
        self.weight_hh_l0 = nn.Parameter(th.empty(G, hidden_size))
        self.bias_ih_l0 = nn.Parameter(th.empty(G))
        self.bias_hh_l0 = nn.Parameter(th.empty(G))
        bound = 1.0 / math.sqrt(hidden_size)
        for p in self.parameters():  # torch's order and distribution (RNNBase.reset_parameters)
            nn.init.uniform_(p, -bound, bound)

    def _params(self) -> tuple[th.Tensor, ...]:
        return self.weight_ih_l0, self.weight_hh_l0, self.bias_ih_l0, self.bias_hh_l0

    def _torch(self, x: th.Tensor, state):
        """The same layer through torch's own kernels (another device than the CPU)."""
        layer = self.torch_layer(self.input_size, self.hidden_size, batch_first=self.batch_first)
        weights = dict(
            zip(
                ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"),
                self._params(),
                strict=True,
            )
        )
        return th.func.functional_call(layer.to(x.device), weights, (x, state))

    def _time_first(self, x: th.Tensor) -> th.Tensor:
        return x.transpose(0, 1) if self.batch_first else x


class BlasLSTM(_BlasRNN):
    """``nn.LSTM(input_size, hidden_size, batch_first)``, products on OpenBLAS; state
    ``(h, c)``, each (1, batch, hidden)."""

    gates = 4
    torch_layer = nn.LSTM

    def forward(self, x: th.Tensor, state: tuple[th.Tensor, th.Tensor]):
        if x.device.type != "cpu":
            return self._torch(x, state)
        y, h, c = _LSTM.apply(
            self._time_first(x).contiguous(), state[0][0], state[1][0], *self._params()
        )
        return self._time_first(y), (h[None], c[None])


class BlasGRU(_BlasRNN):
    """``nn.GRU(input_size, hidden_size, batch_first)``, products on OpenBLAS; state
    (1, batch, hidden)."""

    gates = 3
    torch_layer = nn.GRU

    def forward(self, x: th.Tensor, state: th.Tensor):
        if x.device.type != "cpu":
            return self._torch(x, state)
        y, h = _GRU.apply(self._time_first(x).contiguous(), state[0], *self._params())
        return self._time_first(y), h[None]
