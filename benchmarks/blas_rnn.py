"""What the OpenBLAS recurrent layers (memrl.memory.blas_rnn) are worth, measured in this
run on this machine (one thread, the pinned kernel set): a forward and backward pass of
torch's ``nn.LSTM`` / ``nn.GRU`` and of ``BlasLSTM`` / ``BlasGRU`` at the sizes the jobs use,
best of interleaved rounds; printed: ms per pass and the ratio. Their arithmetic differs
(other kernels, other order), so runs with them are other runs: the float64 equality is
``tests/test_blas_rnn.py``'s.

    python benchmarks/blas_rnn.py [--rounds 3] [--reps 50]
"""

from __future__ import annotations

import argparse
import time

# memrl first: importing it pins the kernel set (memrl.isa) before torch loads
from memrl.memory.blas_rnn import BlasGRU, BlasLSTM, nn, th
from memrl.runtime import set_torch_threads

# (label, batch, steps, inputs, hidden): recurrent SAC/TD3 on Pendulum (default profile),
# SAC-discrete on POPGym, the memory card's cores
SIZES = [
    ("recurrent SAC, Pendulum", 16, 32, 8, 64),
    ("SAC-discrete, POPGym", 16, 64, 8, 128),
    ("memory card", 128, 8, 4, 32),
]


def timed(layer: nn.Module, x: th.Tensor, state, reps: int) -> float:
    def once():
        y, _ = layer(x, state)
        y.square().mean().backward()

    for _ in range(3):
        once()
    start = time.perf_counter()
    for _ in range(reps):
        once()
    return (time.perf_counter() - start) / reps * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=50)
    a = ap.parse_args()
    set_torch_threads(1)
    for label, batch, steps, inputs, hidden in SIZES:
        x = th.randn(batch, steps, inputs)
        z = th.zeros(1, batch, hidden)
        for name, theirs, ours, state in (
            ("LSTM", nn.LSTM, BlasLSTM, (z, z)),
            ("GRU", nn.GRU, BlasGRU, z),
        ):
            layers = {
                "torch": theirs(inputs, hidden, batch_first=True),
                "OpenBLAS": ours(inputs, hidden),
            }
            best = dict.fromkeys(layers, float("inf"))
            for r in range(a.rounds):
                for k in list(layers)[:: 1 if r % 2 == 0 else -1]:
                    best[k] = min(best[k], timed(layers[k], x, state, a.reps))
            print(
                f"{name} {hidden} · {label} (batch {batch}, {steps} steps): torch "
                f"{best['torch']:.2f} ms, OpenBLAS {best['OpenBLAS']:.2f} ms per forward and "
                f"backward: {best['torch'] / best['OpenBLAS']:.2f}x",
                flush=True,
            )


if __name__ == "__main__":
    main()
