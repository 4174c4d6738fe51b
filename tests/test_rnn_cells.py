"""The compiled cells (:mod:`memrl.memory.rnn_cells`): float32 arithmetic to its rounding,
torch's float32 layers to float32's precision, and one target on every CPU.

(Float64 equality with torch's layers, through the same kernels: ``test_blas_rnn.py``.)
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import torch as th
from numba import njit
from torch import nn

from memrl import isa
from memrl.memory import rnn_cells
from memrl.memory.blas_rnn import BlasGRU, BlasLSTM

EPS32, TINY32 = float(np.finfo(np.float32).eps), float(np.finfo(np.float32).tiny)


@njit
def _map(f, a):
    out = np.empty_like(a)
    for j in range(a.size):
        out[j] = f(a[j])
    return out


@njit
def _sigmoid(x):
    return rnn_cells._sigmoid(x)


@njit
def _tanh(x):
    return rnn_cells._tanh(x)


def _inputs() -> np.ndarray:
    g = np.random.default_rng(0)
    x = np.concatenate([g.standard_normal(1 << 15) * 10, np.linspace(-100, 100, 4001)])
    return x.astype(np.float32)


def test_float32_sigmoid_and_tanh_are_float32s_rounding():
    x = _inputs()
    s, t = _map(_sigmoid, x), _map(_tanh, x)
    assert s.dtype == t.dtype == np.float32  # no silent float64 on the way
    exact_s = 1 / (1 + np.exp(-x.astype(np.float64)))
    exact_t = np.tanh(x.astype(np.float64))
    normal = exact_s >= TINY32  # below, exp's argument is clamped to -87: off by < TINY32
    assert np.max(np.abs(s - exact_s)[normal] / exact_s[normal]) < 1.5 * EPS32  # 1.5 ulp
    assert np.max(np.abs(s - exact_s)[~normal]) < TINY32
    assert np.max(np.abs(t - exact_t)) < 2 * EPS32  # absolute: the subtraction near 0
    assert s.min() >= 0 and s.max() <= 1 and np.abs(t).max() <= 1
    assert np.all(np.diff(s[np.argsort(x)]) >= 0)  # monotone, as the functions


def test_float64_keeps_float64s_precision():
    x = _inputs().astype(np.float64)
    assert np.allclose(_map(_tanh, x), np.tanh(x), rtol=1e-15, atol=1e-300)
    assert np.allclose(_map(_sigmoid, x), 1 / (1 + np.exp(-x)), rtol=1e-15, atol=1e-300)


@pytest.mark.parametrize(("ours", "theirs"), [(BlasLSTM, nn.LSTM), (BlasGRU, nn.GRU)])
def test_a_float32_layer_is_torchs_to_float32s_precision(ours, theirs):
    th.manual_seed(1)
    mine, ref = ours(8, 64), theirs(8, 64, batch_first=True)
    ref.load_state_dict(mine.state_dict())
    x = th.randn(16, 32, 8)
    z = th.zeros(1, 16, 64)
    state = (z, z) if ours is BlasLSTM else z
    outs = []
    for layer in (mine, ref):
        xi = x.clone().requires_grad_()
        y, _ = layer(xi, state)
        y.square().sum().backward()
        outs.append([y.detach(), xi.grad, *(p.grad for p in layer.parameters())])
    assert outs[0][0].dtype == th.float32
    for a, b in zip(*outs, strict=True):
        assert th.allclose(a, b, atol=1e-5 * float(b.abs().max()) + 1e-6, rtol=0)


def test_numba_compiles_for_the_pinned_cpu_not_this_one():
    """The target is named (an unset feature list would be the host's: AVX-512 on a Xeon),
    in this process and in a child."""
    code = "import memrl, numba.core.config as c; print(c.CPU_NAME, c.CPU_FEATURES)"
    out = subprocess.run(
        [sys.executable, "-c", code], env=dict(os.environ), capture_output=True, text=True
    )
    want = {k: v for k, v in isa.LEVELS[isa.level()].items() if k.startswith("NUMBA_")}
    if not want:
        pytest.skip("this level lets numba pick")
    assert out.stdout.split() == [want["NUMBA_CPU_NAME"], want["NUMBA_CPU_FEATURES"]]
    assert all(want.values())  # no empty value: shells would drop it
    assert isa.check()["numba"] == want["NUMBA_CPU_NAME"]
    isa.check_numba()
