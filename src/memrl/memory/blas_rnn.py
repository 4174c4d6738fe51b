"""LSTM and GRU layers whose matrix products run on numpy's OpenBLAS, gradients by hand.

Under the pinned kernel set (:mod:`memrl.isa`) torch's recurrent layers lose oneDNN's fused
kernels (oneDNN promises equal results only on an identical platform) and their products
run on MKL's ``COMPATIBLE`` branch (SSE2): recurrent SAC then costs 2x per update at the
default profile's sizes. numpy's OpenBLAS, pinned to its Haswell kernels like every numpy
call here, runs the same products 2.2-3.2x faster (``benchmarks/blas_rnn.py``).

:class:`BlasLSTM` and :class:`BlasGRU` are one-layer, batch-first layers with torch's
equations, parameter names, gate order and initialisation (the same seed draws the same
weights as ``nn.LSTM`` / ``nn.GRU``), as a :class:`torch.autograd.Function` each:

    LSTM  [i, f, g, o] = [s, s, tanh, s](x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)
          c_t = f * c_{t-1} + i * g          h_t = o * tanh(c_t)
    GRU   [r, z] = s(x_t W_i^T + b_i + h_{t-1} W_h^T + b_h)          (their r, z rows)
          n = tanh(x_t W_in^T + b_in + r * (h_{t-1} W_hn^T + b_hn))    h_t = (1 - z) * n + z * h_{t-1}

The input products of all steps are one product before the loop, and the weight gradients
one product over all steps after it; the loop itself does one product a step each way.
Outputs and gradients equal torch's to rounding (``tests/test_blas_rnn.py``, in float64).
Tensors on another device than the CPU go through torch's own layers.
"""

from __future__ import annotations

import math

import numpy as np
import torch as th
from torch import nn


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _np(t: th.Tensor) -> np.ndarray:
    return t.detach().numpy()


class _LSTM(th.autograd.Function):
    @staticmethod
    def forward(ctx, x, h0, c0, w_ih, w_hh, b_ih, b_hh):  # x: (T, B, I), time first
        X, Whh = _np(x), _np(w_hh)
        T, B, _ = X.shape
        H = Whh.shape[1]
        XW = (X.reshape(T * B, -1) @ _np(w_ih).T + (_np(b_ih) + _np(b_hh))).reshape(T, B, 4 * H)
        gates = np.empty_like(XW)
        c = np.empty((T + 1, B, H), X.dtype)
        h = np.empty((T + 1, B, H), X.dtype)
        c[0], h[0] = _np(c0), _np(h0)
        WhhT = Whh.T
        for t in range(T):
            g = gates[t]
            np.add(XW[t], h[t] @ WhhT, out=g)
            g[:, : 2 * H] = _sigmoid(g[:, : 2 * H])
            g[:, 3 * H :] = _sigmoid(g[:, 3 * H :])
            np.tanh(g[:, 2 * H : 3 * H], out=g[:, 2 * H : 3 * H])
            c[t + 1] = g[:, H : 2 * H] * c[t] + g[:, :H] * g[:, 2 * H : 3 * H]
            h[t + 1] = g[:, 3 * H :] * np.tanh(c[t + 1])
        ctx.save_for_backward(x, w_ih, w_hh)
        ctx.kept = gates, c, h
        return tuple(th.from_numpy(a.copy()) for a in (h[1:], h[-1], c[-1]))

    @staticmethod
    def backward(ctx, dy, dh_last, dc_last):
        x, w_ih, w_hh = ctx.saved_tensors
        gates, c, h = ctx.kept
        X, Whh = _np(x), _np(w_hh)
        T, B, _ = X.shape
        H = Whh.shape[1]
        dY = dy.numpy()
        dh, dc = dh_last.numpy().copy(), dc_last.numpy().copy()
        dG = np.empty_like(gates)
        for t in reversed(range(T)):
            dh += dY[t]
            i, f, g, o = (gates[t][:, k * H : (k + 1) * H] for k in range(4))
            tc = np.tanh(c[t + 1])
            dc += dh * o * (1.0 - tc * tc)
            d = dG[t]
            d[:, :H] = dc * g * i * (1.0 - i)
            d[:, H : 2 * H] = dc * c[t] * f * (1.0 - f)
            d[:, 2 * H : 3 * H] = dc * i * (1.0 - g * g)
            d[:, 3 * H :] = dh * tc * o * (1.0 - o)
            dc = dc * f
            dh = d @ Whh
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
        for t in range(T):
            HW = h[t] @ WhhT + bhh
            rz[t] = _sigmoid(XW[t][:, : 2 * H] + HW[:, : 2 * H])
            hn[t] = HW[:, 2 * H :]
            n[t] = np.tanh(XW[t][:, 2 * H :] + rz[t][:, :H] * hn[t])
            h[t + 1] = n[t] + rz[t][:, H:] * (h[t] - n[t])
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
        for t in reversed(range(T)):
            dh += dY[t]
            r, z = rz[t][:, :H], rz[t][:, H:]
            dn = dh * (1.0 - z) * (1.0 - n[t] * n[t])
            dXW[t][:, :H] = dHW[t][:, :H] = dn * hn[t] * r * (1.0 - r)
            dXW[t][:, H : 2 * H] = dHW[t][:, H : 2 * H] = dh * (h[t] - n[t]) * z * (1.0 - z)
            dXW[t][:, 2 * H :] = dn
            dHW[t][:, 2 * H :] = dn * r
            dh = dh * z + dHW[t] @ Whh
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
    """One batch-first layer with torch's parameters: ``weight_ih_l0`` (G·H, in),
    ``weight_hh_l0`` (G·H, H), ``bias_ih_l0``, ``bias_hh_l0``, drawn as torch draws them."""

    gates = 0
    torch_layer: type[nn.RNNBase] = nn.RNNBase

    def __init__(self, input_size: int, hidden_size: int, batch_first: bool = True) -> None:
        super().__init__()
        if not batch_first:
            raise ValueError("BlasLSTM / BlasGRU are batch first")
        self.input_size, self.hidden_size = input_size, hidden_size
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
        layer = self.torch_layer(self.input_size, self.hidden_size, batch_first=True)
        weights = dict(
            zip(
                ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"),
                self._params(),
                strict=True,
            )
        )
        return th.func.functional_call(layer.to(x.device), weights, (x, state))


class BlasLSTM(_BlasRNN):
    """``nn.LSTM(input_size, hidden_size, batch_first=True)``, products on OpenBLAS; state
    ``(h, c)``, each (1, batch, hidden)."""

    gates = 4
    torch_layer = nn.LSTM

    def forward(self, x: th.Tensor, state: tuple[th.Tensor, th.Tensor]):
        if x.device.type != "cpu":
            return self._torch(x, state)
        y, h, c = _LSTM.apply(
            x.transpose(0, 1).contiguous(), state[0][0], state[1][0], *self._params()
        )
        return y.transpose(0, 1), (h[None], c[None])


class BlasGRU(_BlasRNN):
    """``nn.GRU(input_size, hidden_size, batch_first=True)``, products on OpenBLAS; state
    (1, batch, hidden)."""

    gates = 3
    torch_layer = nn.GRU

    def forward(self, x: th.Tensor, state: th.Tensor):
        if x.device.type != "cpu":
            return self._torch(x, state)
        y, h = _GRU.apply(x.transpose(0, 1).contiguous(), state[0], *self._params())
        return y.transpose(0, 1), h[None]
