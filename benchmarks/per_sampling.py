"""PER speed: one sample(256) + priority update on a full 1M-transition buffer.

Prints, measured in this run on this machine:
  - memrl's SumTree alone, and memrl's SB3 PrioritizedReplayBuffer (sample incl. tensors),
  - the naive baseline: np.random.choice(p=...) over a flat priority array,
  - cpprb's C++ PrioritizedReplayBuffer (the speed anchor), if installed (`make bench`),
and the ratios between them. Timings only; correctness lives in tests/.

    python benchmarks/per_sampling.py [--capacity 1000000] [--batch 256] [--reps 200]
"""

from __future__ import annotations

import argparse
import time

import memrl  # noqa: F401  (first: importing it pins the kernels, memrl.isa)

# isort: split
import numpy as np


def timeit(fn, reps: int) -> float:
    fn()  # warm-up
    t = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t) / reps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--capacity", type=int, default=1_000_000)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--reps", type=int, default=200)
    a = ap.parse_args()
    n, b = a.capacity, a.batch
    rng = np.random.default_rng(0)
    prios = rng.random(n) + 1e-3
    results: dict[str, float] = {}

    from memrl.memory.sum_tree import SumTree

    tree = SumTree(n)
    tree.update(np.arange(n), prios)

    def tree_step():
        idx = tree.sample(b, rng)
        tree.update(idx, rng.random(b) + 1e-3)

    results["memrl SumTree"] = timeit(tree_step, a.reps)

    from gymnasium import spaces

    from memrl.memory.prioritized import PrioritizedReplayBuffer

    buf = PrioritizedReplayBuffer(
        n, spaces.Box(-1, 1, (4,), np.float32), spaces.Discrete(2), device="cpu"
    )
    buf.observations[:] = rng.random(buf.observations.shape, dtype=np.float32)
    buf.next_observations[:] = buf.observations
    buf.full, buf.pos = True, 0
    buf.tree.update(np.arange(n), prios**buf.alpha)

    def buffer_step():
        s = buf.sample(b)
        buf.update_priorities(s.indices, rng.random(b))

    results["memrl PrioritizedReplayBuffer (SB3)"] = timeit(buffer_step, a.reps)

    flat = prios.copy()

    def choice_step():
        idx = np.random.choice(n, b, p=flat / flat.sum())
        flat[idx] = rng.random(b) + 1e-3

    results["np.random.choice(p=...)"] = timeit(choice_step, max(5, a.reps // 20))

    try:
        import cpprb
    except ImportError:
        print("cpprb not installed (make bench installs it): skipping the C++ anchor")
    else:
        cb = cpprb.PrioritizedReplayBuffer(n, {"obs": {"shape": 4}, "act": {}}, alpha=0.6)
        for start in range(0, n, 100_000):
            cb.add(
                obs=rng.random((100_000, 4)),
                act=np.zeros(100_000),
                priorities=prios[start : start + 100_000],
            )

        def cpprb_step():
            s = cb.sample(b, beta=0.4)
            cb.update_priorities(s["indexes"], rng.random(b) + 1e-3)

        results["cpprb PrioritizedReplayBuffer (C++)"] = timeit(cpprb_step, a.reps)

    print(f"PER sample({b}) + update on a full buffer of {n:,} transitions")
    for k, v in results.items():
        print(f"  {k:40s} {v * 1e6:10.1f} us/step")
    base = results["memrl SumTree"]
    print("ratios (time of X / time of memrl SumTree):")
    for k, v in results.items():
        print(f"  {k:40s} {v / base:10.2f}x")


if __name__ == "__main__":
    main()
