"""The two levers of issue 55 that the recurrent jobs use, measured in this run.

1. **OpenBLAS warmed** (:func:`memrl.runtime.warm_up_blas`, before each job). Products whose
   inner dimension is 256 or more run 1.3-3.6x slower until the process's first product
   with an inner dimension above 256, with the same bytes before and after (printed).
2. **The cells compiled** (:mod:`memrl.memory.rnn_cells`): :class:`BlasLSTM`'s per-step
   gates as one numba call a step each way, against the same layer doing them with ~20
   numpy calls a step (its code before, kept here as the baseline). Printed: forward +
   backward time of each and their largest differences (outputs and gradients), float32.

Measured values: ``docs/history.md`` (2026-11-28).

    python benchmarks/rnn_cells.py [--batch 16] [--seq-len 32] [--hidden 64] [--reps 50]
"""

from __future__ import annotations

import argparse
import hashlib
import time
import timeit

from memrl.runtime import set_torch_threads, warm_up_blas


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
    warm_up_blas()
    warm = measure()
    print("OpenBLAS products (one thread), before and after memrl.runtime.warm_up_blas")
    for (m, k, n), (c, hc), (w, hw) in zip(shapes, cold, warm, strict=True):
        same = "same bytes" if hc == hw else "BYTES DIFFER"
        print(f"  {m}x{k}x{n:<6} {c * 1e6:8.1f} -> {w * 1e6:8.1f} us  {c / w:4.2f}x  {same}")


def numpy_lstm(x, w_ih, w_hh, bias, dy):
    """The LSTM's forward and backward with numpy calls per gate (BlasLSTM's loop before its
    cells were compiled): ``(h, grad x, grad W_ih, grad W_hh)``, time first."""
    import numpy as np

    def sigmoid(v):
        return 1.0 / (1.0 + np.exp(-v))

    T, B, _ = x.shape
    H = w_hh.shape[1]
    xw = (x.reshape(T * B, -1) @ w_ih.T + bias).reshape(T, B, 4 * H)
    gates = np.empty_like(xw)
    c, h = np.zeros((T + 1, B, H), x.dtype), np.zeros((T + 1, B, H), x.dtype)
    for t in range(T):
        g = gates[t]
        np.add(xw[t], h[t] @ w_hh.T, out=g)
        g[:, : 2 * H] = sigmoid(g[:, : 2 * H])
        g[:, 3 * H :] = sigmoid(g[:, 3 * H :])
        np.tanh(g[:, 2 * H : 3 * H], out=g[:, 2 * H : 3 * H])
        c[t + 1] = g[:, H : 2 * H] * c[t] + g[:, :H] * g[:, 2 * H : 3 * H]
        h[t + 1] = g[:, 3 * H :] * np.tanh(c[t + 1])
    dh, dc = np.zeros((B, H), x.dtype), np.zeros((B, H), x.dtype)
    dg = np.empty_like(gates)
    for t in reversed(range(T)):
        dh += dy[t]
        i, f, g, o = (gates[t][:, k * H : (k + 1) * H] for k in range(4))
        tc = np.tanh(c[t + 1])
        dc += dh * o * (1.0 - tc * tc)
        d = dg[t]
        d[:, :H] = dc * g * i * (1.0 - i)
        d[:, H : 2 * H] = dc * c[t] * f * (1.0 - f)
        d[:, 2 * H : 3 * H] = dc * i * (1.0 - g * g)
        d[:, 3 * H :] = dh * tc * o * (1.0 - o)
        dc = dc * f
        dh = d @ w_hh
    D = dg.reshape(T * B, 4 * H)
    return h[1:], D @ w_ih, D.T @ x.reshape(T * B, -1), D.T @ h[:-1].reshape(T * B, H)


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

    from memrl.memory.blas_rnn import _LSTM

    T, B, H = a.seq_len, a.batch, a.hidden
    rng = np.random.default_rng(0)
    x = rng.standard_normal((T, B, H), np.float32)
    w_ih = rng.uniform(-1 / H**0.5, 1 / H**0.5, (4 * H, H)).astype(np.float32)
    w_hh = rng.uniform(-1 / H**0.5, 1 / H**0.5, (4 * H, H)).astype(np.float32)
    bias = np.zeros(4 * H, np.float32)
    dy = rng.standard_normal((T, B, H), np.float32)
    params = [th.from_numpy(p).requires_grad_() for p in (w_ih, w_hh, bias, bias.copy())]
    xt = th.from_numpy(x).requires_grad_()

    def compiled():
        for p in (xt, *params):
            p.grad = None
        zeros = th.zeros(B, H)
        y, _, _ = _LSTM.apply(xt, zeros, zeros, *params)
        y.backward(th.from_numpy(dy))
        return [t.detach().numpy() for t in (y, xt.grad, params[0].grad, params[1].grad)]

    def before():
        return numpy_lstm(x, w_ih, w_hh, bias, dy)

    diffs = [
        float(np.abs(o - r.reshape(o.shape)).max())
        for o, r in zip(compiled(), before(), strict=True)
    ]
    times = {}
    for name, fn in (("numpy cells (before)", before), ("compiled cells (BlasLSTM)", compiled)):
        fn()
        t = time.perf_counter()
        for _ in range(a.reps):
            fn()
        times[name] = (time.perf_counter() - t) / a.reps
    print(f"\nLSTM forward + backward, batch {B} x {T} steps, hidden {H}, float32")
    for name, secs in times.items():
        print(f"  {name:<26} {secs * 1e3:7.2f} ms")
    print(f"  ratio {times['compiled cells (BlasLSTM)'] / times['numpy cells (before)']:.2f}")
    print(
        f"  max |difference|: output {diffs[0]:.1e}, grad x {diffs[1]:.1e}, "
        f"grad W_ih {diffs[2]:.1e}, grad W_hh {diffs[3]:.1e}"
    )


if __name__ == "__main__":
    main()
