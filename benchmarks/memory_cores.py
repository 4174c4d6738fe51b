"""Memory cores' training-step time, measured in this run (the FFM paper's and popjaxrl's
benchmark shape), as ratios to the fused GRU timed in the same run.

One Adam step (forward over the whole sequence, backward, update) on a batch of
8 sequences x 1024 steps x 128 inputs, width 256, for:

- a ``GRUCell`` stepped in a Python loop (the baseline of FFM's ~100x and S5's > 5x claims),
- the fused ``nn.GRU`` and ``nn.LSTM`` (what one would actually use),
- memrl's ``FFMCore`` (closed-form recurrence, chunked),
- memrl's ``S5Core``, one layer and four (as popjaxrl's POPGym agent stacks it).

    python benchmarks/memory_cores.py [--batch 8] [--time 1024] [--reps 5] [--threads 1]
"""

from __future__ import annotations

import argparse
import time

import memrl  # noqa: F401  (first: importing it pins the kernels, memrl.isa)

# isort: split
import torch as th
from torch import nn

from memrl.memory.cores import FFMCore, GRUCore, LSTMCore, S5Core
from memrl.runtime import set_torch_threads


class GRUCellLoop(nn.Module):
    def __init__(self, input_size: int, hidden_size: int) -> None:
        super().__init__()
        self.cell = nn.GRUCell(input_size, hidden_size)
        self.hidden_size = hidden_size

    def initial_state(self, batch: int) -> th.Tensor:
        return th.zeros(batch, self.hidden_size)

    def forward(self, x: th.Tensor, h: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        ys = []
        for t in range(x.shape[1]):
            h = self.cell(x[:, t], h)
            ys.append(h)
        return th.stack(ys, 1), h


def time_step(core: nn.Module, x: th.Tensor, reps: int) -> float:
    opt = th.optim.Adam(core.parameters(), lr=1e-4)

    def one() -> None:
        y, _ = core(x, core.initial_state(x.shape[0]))
        loss = y.pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()

    one()  # warm-up
    t = time.perf_counter()
    for _ in range(reps):
        one()
    return (time.perf_counter() - t) / reps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--time", type=int, default=1024)
    ap.add_argument("--inputs", type=int, default=128)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    set_torch_threads(a.threads)  # torch and numpy's BLAS alike
    th.manual_seed(0)
    x = th.randn(a.batch, a.time, a.inputs)
    print(
        f"one Adam step, batch {a.batch} x {a.time} steps x {a.inputs} inputs, hidden {a.hidden}, {a.threads} thread(s)"
    )
    cores = {
        "GRUCell loop": GRUCellLoop(a.inputs, a.hidden),
        "nn.GRU (fused)": GRUCore(a.inputs, a.hidden),
        "LSTM (fused)": LSTMCore(a.inputs, a.hidden),
        "FFM (memrl)": FFMCore(a.inputs, a.hidden),
        "S5 (memrl)": S5Core(a.inputs, a.hidden),
        "S5 x 4 layers": S5Core(a.inputs, a.hidden, layers=4),
    }
    secs = {name: time_step(core, x, a.reps) for name, core in cores.items()}
    gru = secs["nn.GRU (fused)"]
    for name, s in secs.items():
        print(f"  {name:<15} {s * 1e3:9.1f} ms   time / fused GRU's: {s / gru:6.2f}x")


if __name__ == "__main__":
    main()
