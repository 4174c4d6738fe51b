"""The LSTM's and GRU's per-step elementwise work, compiled: one call a step each way.

:mod:`memrl.memory.blas_rnn` does a step's recurrent product on OpenBLAS and its gates with
numpy: ~20 numpy calls a step, and numpy's float32 ``tanh`` runs scalar here. These kernels
do a step's gates in one call (numba, no ``fastmath``: the float operations as written, in
order), ``benchmarks/rnn_cells.py`` measures the two (LSTM forward + backward 0.47x).

Same code on every x86-64 CPU: numba compiles for the CPU that :mod:`memrl.isa` names
(``NUMBA_CPU_NAME``, ``NUMBA_CPU_FEATURES``), not the host's, and float32's ``exp`` is
computed here rather than by the platform's libm, whose kernels follow the CPU::

    exp(x) = 2^m e^r,  m = floor(x log2(e) + 1/2),  r = (x - m ln2_hi) - m ln2_lo   (|r| <= ln2 / 2)
    e^r    = sum_{k<=7} r^k / k!                 (error < 2^-27 relative: float32's rounding)
    2^m    = the float32 whose exponent bits are m + 127      (x clamped to [-87, 88])

    sigmoid(x) = 1 / (1 + exp(-x))     tanh(x) = 2 / (1 + exp(-2x)) - 1

(sigmoid within 1.3 ulp of float64's where that is a normal float32, within float32's
smallest normal below; ``tanh``'s absolute error ~1e-7 near 0, where the subtraction
cancels). Float64 (the tests) takes ``math.exp`` and ``math.tanh``. The kernels take the
arrays' own dtype; ``one`` is 1 in it (a literal 1 would promote float32 to 64). Each
nonlinearity has its own loop, so LLVM vectorises it (one loop doing every gate stays
scalar); numpy's error model keeps divisions free of a branch each.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic, overload

from memrl import isa

isa.check_numba()  # compiled for the pinned CPU, whatever this one is

_jit = njit(nogil=True, error_model="numpy", cache=True)
_inline = njit(inline="always", error_model="numpy", cache=True)


@intrinsic
def _float32_from_bits(typingctx, bits):
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.FloatType())

    return types.float32(types.int32), codegen


_f = np.float32
_LOG2E, _LN2_HI, _LN2_LO = _f(1 / math.log(2)), _f(0.693145751953125), _f(1.4286068e-06)
_LO, _HI, _HALF, _ONE, _TWO = _f(-87.0), _f(88.0), _f(0.5), _f(1.0), _f(2.0)
_C2, _C3, _C4, _C5, _C6, _C7 = (_f(1 / math.factorial(k)) for k in range(2, 8))


@_inline
def _exp32(x):
    x = min(max(x, _LO), _HI)
    m = np.floor(x * _LOG2E + _HALF)  # np.floor keeps float32 (math.floor: an int64)
    r = (x - m * _LN2_HI) - m * _LN2_LO
    p = _ONE + r * (_ONE + r * (_C2 + r * (_C3 + r * (_C4 + r * (_C5 + r * (_C6 + r * _C7))))))
    return p * _float32_from_bits((np.int32(m) + np.int32(127)) << np.int32(23))


def _sigmoid32(x):
    return _ONE / (_ONE + _exp32(-x))


def _tanh32(x):
    return _TWO / (_ONE + _exp32(-_TWO * x)) - _ONE


def _sigmoid64(x):
    return 1.0 / (1.0 + math.exp(-x))


def _tanh64(x):
    return math.tanh(x)


def _by_type(f32: Callable, f64: Callable) -> Callable:
    """A stub that kernels call, compiled as ``f32`` for float32 and ``f64`` otherwise
    (numba's overload, inlined; both named here, so a job's key covers them)."""

    def register(stub: Callable) -> Callable:
        @overload(stub, inline="always")
        def choose(x):
            return f32 if x == types.float32 else f64

        return stub

    return register


@_by_type(_sigmoid32, _sigmoid64)
def _sigmoid(x):
    raise NotImplementedError("compiled only (numba)")


@_by_type(_tanh32, _tanh64)
def _tanh(x):
    raise NotImplementedError("compiled only (numba)")


@_jit
def lstm_step(xw, hw, c0, gates, c1, h1, tc):
    """gates = [s, s, tanh, s](xw + hw); c1 = f c0 + i g; tc = tanh(c1); h1 = o tc."""
    B, H = c0.shape
    for b in range(B):
        for j in range(4 * H):
            gates[b, j] = xw[b, j] + hw[b, j]
        for j in range(2 * H):
            gates[b, j] = _sigmoid(gates[b, j])
        for j in range(2 * H, 3 * H):
            gates[b, j] = _tanh(gates[b, j])
        for j in range(3 * H, 4 * H):
            gates[b, j] = _sigmoid(gates[b, j])
        for k in range(H):
            c1[b, k] = gates[b, H + k] * c0[b, k] + gates[b, k] * gates[b, 2 * H + k]
        for k in range(H):
            tc[b, k] = _tanh(c1[b, k])
            h1[b, k] = gates[b, 3 * H + k] * tc[b, k]


@_jit
def lstm_step_back(gates, c0, tc, dh, dc, dg, one):
    """dg = the pre-activations' gradients from dh (all of h's) and dc (c's from t+1);
    dc becomes c_{t-1}'s (the caller adds dg W_hh to h_{t-1}'s)."""
    B, H = c0.shape
    for b in range(B):
        for k in range(H):
            i, f = gates[b, k], gates[b, H + k]
            g, o = gates[b, 2 * H + k], gates[b, 3 * H + k]
            t = tc[b, k]
            d = dc[b, k] + dh[b, k] * o * (one - t * t)
            dg[b, k] = d * g * i * (one - i)
            dg[b, H + k] = d * c0[b, k] * f * (one - f)
            dg[b, 2 * H + k] = d * i * (one - g * g)
            dg[b, 3 * H + k] = dh[b, k] * t * o * (one - o)
            dc[b, k] = d * f


@_jit
def gru_step(xw, hw, h0, rz, n, hn, h1):
    """[r, z] = s(xw + hw) (first 2H); n = tanh(xw_n + r hn), hn = hw's last H (with
    b_hn); h1 = n + z (h0 - n)."""
    B, H = h0.shape
    for b in range(B):
        for j in range(2 * H):
            rz[b, j] = _sigmoid(xw[b, j] + hw[b, j])
        for k in range(H):
            hn[b, k] = hw[b, 2 * H + k]
            n[b, k] = _tanh(xw[b, 2 * H + k] + rz[b, k] * hn[b, k])
        for k in range(H):
            h1[b, k] = n[b, k] + rz[b, H + k] * (h0[b, k] - n[b, k])


@_jit
def gru_step_back(rz, n, hn, h0, dh, dxw, dhw, one):
    """dxw, dhw = the input and recurrent pre-activations' gradients from dh (all of
    h's); dh becomes z dh (the caller adds dhw W_hh)."""
    B, H = h0.shape
    for b in range(B):
        for k in range(H):
            r, z, nk = rz[b, k], rz[b, H + k], n[b, k]
            dn = dh[b, k] * (one - z) * (one - nk * nk)
            dr = dn * hn[b, k] * r * (one - r)
            dz = dh[b, k] * (h0[b, k] - nk) * z * (one - z)
            dxw[b, k] = dhw[b, k] = dr
            dxw[b, H + k] = dhw[b, H + k] = dz
            dxw[b, 2 * H + k] = dn
            dhw[b, 2 * H + k] = dn * r
            dh[b, k] = dh[b, k] * z
