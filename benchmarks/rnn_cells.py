"""Two levers for the recurrent family's cost (issue 55), measured in this run, before they
enter a job (both move every job key: they wait for the round's republish).

1. **OpenBLAS warmed.** Products whose inner dimension is 256 or more run 1.3-3.6x slower
   until the process's first product with an inner dimension above 256, with the same
   bytes before and after (the script prints both). Jobs never make such a product, so they
   run cold throughout.
2. **The LSTM cell compiled** (numba, pinned to Haswell): the per-step elementwise work of
   :class:`memrl.memory.blas_rnn.BlasLSTM` (~20 numpy calls a step; numpy's float32 ``exp``
   and ``tanh`` run scalar here) as one vectorised call a step, ``exp`` computed in float32
   (``x = m ln2 + r``, Taylor to ``r^7``, ``2^m`` from its exponent bits). Printed: forward
   and backward's time and largest difference from ``BlasLSTM``'s, the sigmoid's largest
   error in ulp. Measured values: ``docs/history.md`` (2026-11-28).

    pip install numba    # the `bench` extra
    python benchmarks/rnn_cells.py [--batch 16] [--seq-len 32] [--hidden 64] [--reps 50]
"""

from __future__ import annotations

import argparse
import hashlib
import math
import time
import timeit

from memrl.memory.blas_rnn import _LSTM
from memrl.runtime import set_torch_threads


def openblas_warm_up() -> None:
    import numpy as np

    rng = np.random.default_rng(0)
    shapes = [(512, 256, 64), (16, 256, 64), (256, 256, 256), (512, 64, 256), (16, 64, 256)]
    mats = [
        (rng.standard_normal((m, k), np.float32), rng.standard_normal((k, n), np.float32))
        for m, k, n in shapes
    ]

    def measure():
        out = []
        for a, b in mats:
            s = min(timeit.repeat(lambda a=a, b=b: a @ b, number=10, repeat=3)) / 10
            out.append((s, hashlib.sha256((a @ b).tobytes()).hexdigest()))
        return out

    cold = measure()
    np.ones((256, 300), np.float32) @ np.ones((300, 256), np.float32)  # inner dimension 300
    warm = measure()
    print("OpenBLAS products (one thread), before and after one product of inner dimension 300")
    for (m, k, n), (c, hc), (w, hw) in zip(shapes, cold, warm, strict=True):
        same = "same bytes" if hc == hw else "BYTES DIFFER"
        print(f"  {m}x{k}x{n:<6} {c * 1e6:8.1f} -> {w * 1e6:8.1f} us  {c / w:4.2f}x  {same}")


def compiled_cells():
    import numpy as np
    from llvmlite import ir
    from numba import njit, types
    from numba.extending import intrinsic

    f = np.float32
    log2e, ln2_hi, ln2_lo = f(1 / math.log(2)), f(0.693145751953125), f(1.4286068e-06)
    lo, hi, one, two, half = f(-87.0), f(88.0), f(1.0), f(2.0), f(0.5)
    c2, c3, c4, c5, c6, c7 = (f(1.0 / math.factorial(k)) for k in range(2, 8))
    jit = njit(nogil=True, error_model="numpy")  # numpy's error model: no branch per division
    inline = njit(inline="always", error_model="numpy")

    @intrinsic
    def float32_from_bits(typingctx, bits):
        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], ir.FloatType())

        return types.float32(types.int32), codegen

    @inline
    def exp32(x):
        x = min(max(x, lo), hi)
        m = np.floor(x * log2e + half)  # np.floor: math.floor would return an int64
        r = (x - m * ln2_hi) - m * ln2_lo
        p = one + r * (one + r * (c2 + r * (c3 + r * (c4 + r * (c5 + r * (c6 + r * c7))))))
        return p * float32_from_bits((np.int32(m) + np.int32(127)) << np.int32(23))

    @inline
    def sigmoid(x):
        return one / (one + exp32(-x))

    @inline
    def tanh(x):
        return two / (one + exp32(-two * x)) - one

    @jit
    def step(xw, hw, c0, gates, c1, h1, tc):  # one pass per nonlinearity: each vectorises
        B, H = c0.shape
        for b in range(B):
            for j in range(4 * H):
                gates[b, j] = xw[b, j] + hw[b, j]
            for j in range(2 * H):
                gates[b, j] = sigmoid(gates[b, j])
            for j in range(2 * H, 3 * H):
                gates[b, j] = tanh(gates[b, j])
            for j in range(3 * H, 4 * H):
                gates[b, j] = sigmoid(gates[b, j])
            for k in range(H):
                c1[b, k] = gates[b, H + k] * c0[b, k] + gates[b, k] * gates[b, 2 * H + k]
            for k in range(H):
                tc[b, k] = tanh(c1[b, k])
                h1[b, k] = gates[b, 3 * H + k] * tc[b, k]

    @jit
    def step_back(gates, c0, tc, dh, dc, dg):
        B, H = c0.shape
        for b in range(B):
            for k in range(H):
                i, fo = gates[b, k], gates[b, H + k]
                g, o = gates[b, 2 * H + k], gates[b, 3 * H + k]
                t = tc[b, k]
                d = dc[b, k] + dh[b, k] * o * (one - t * t)
                dg[b, k] = d * g * i * (one - i)
                dg[b, H + k] = d * c0[b, k] * fo * (one - fo)
                dg[b, 2 * H + k] = d * i * (one - g * g)
                dg[b, 3 * H + k] = dh[b, k] * t * o * (one - o)
                dc[b, k] = d * fo

    @jit
    def sigmoid_(a):
        for j in range(a.size):
            a[j] = sigmoid(a[j])

    return step, step_back, sigmoid_


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq-len", type=int, default=32)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--reps", type=int, default=50)
    a = ap.parse_args()
    set_torch_threads(1)
    from memrl.isa import cpu_model

    print(f"on {cpu_model()}, one thread")
    openblas_warm_up()  # from here on, both LSTMs below run warm

    import numpy as np
    import torch as th

    try:
        step, step_back, sigmoid_ = compiled_cells()
    except ImportError:
        print("numba is not installed (pip install numba): the compiled cell not measured")
        return
    T, B, H = a.seq_len, a.batch, a.hidden
    rng = np.random.default_rng(0)
    x = rng.standard_normal((T, B, H), np.float32)
    w_ih = rng.uniform(-1 / H**0.5, 1 / H**0.5, (4 * H, H)).astype(np.float32)
    w_hh = rng.uniform(-1 / H**0.5, 1 / H**0.5, (4 * H, H)).astype(np.float32)
    bias = np.zeros(4 * H, np.float32)
    dy = rng.standard_normal((T, B, H), np.float32)

    def compiled():
        xw = (x.reshape(T * B, -1) @ w_ih.T + bias).reshape(T, B, 4 * H)
        gates, tc = np.empty_like(xw), np.empty((T, B, H), np.float32)
        c, h = np.zeros((T + 1, B, H), np.float32), np.zeros((T + 1, B, H), np.float32)
        hw = np.empty((B, 4 * H), np.float32)
        for t in range(T):
            np.matmul(h[t], w_hh.T, out=hw)
            step(xw[t], hw, c[t], gates[t], c[t + 1], h[t + 1], tc[t])
        dh, dc, dg = (
            np.zeros((B, H), np.float32),
            np.zeros((B, H), np.float32),
            np.empty_like(gates),
        )
        for t in reversed(range(T)):
            dh += dy[t]
            step_back(gates[t], c[t], tc[t], dh, dc, dg[t])
            np.matmul(dg[t], w_hh, out=dh)
        d = dg.reshape(T * B, 4 * H)
        return h[1:], d @ w_ih, d.T @ x.reshape(T * B, -1), d.T @ h[:-1].reshape(T * B, H)

    params = [th.from_numpy(p).requires_grad_() for p in (w_ih, w_hh, bias, bias.copy())]
    xt = th.from_numpy(x).requires_grad_()

    def numpy_cells():
        for p in (xt, *params):
            p.grad = None
        zeros = th.zeros(B, H)
        y, _, _ = _LSTM.apply(xt, zeros, zeros, *params)
        y.backward(th.from_numpy(dy))
        return y, xt.grad, params[0].grad, params[1].grad

    ours, ref = compiled(), numpy_cells()
    diffs = [
        float(np.abs(o - r.detach().numpy().reshape(o.shape)).max())
        for o, r in zip(ours, ref, strict=True)
    ]
    z = (rng.standard_normal(1 << 16) * 8).astype(np.float32)
    s = z.copy()
    sigmoid_(s)
    exact = 1 / (1 + np.exp(-z.astype(np.float64)))
    ulps = float((np.abs(s - exact) / exact).max() / np.finfo(np.float32).eps)
    times = {}
    for name, fn in (("numpy cells (BlasLSTM)", numpy_cells), ("compiled cells", compiled)):
        fn()
        t = time.perf_counter()
        for _ in range(a.reps):
            fn()
        times[name] = (time.perf_counter() - t) / a.reps
    print(f"\nLSTM forward + backward, batch {B} x {T} steps, hidden {H}, float32")
    for name, secs in times.items():
        print(f"  {name:<24} {secs * 1e3:7.2f} ms")
    print(f"  ratio {times['compiled cells'] / times['numpy cells (BlasLSTM)']:.2f}")
    print(
        f"  max |difference|: output {diffs[0]:.1e}, grad x {diffs[1]:.1e}, "
        f"grad W_ih {diffs[2]:.1e}, grad W_hh {diffs[3]:.1e}; sigmoid {ulps:.2f} ulp at most"
    )


if __name__ == "__main__":
    main()
