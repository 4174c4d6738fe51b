"""MFEC's kNN estimate over every action's table: one matrix-vector product over a shared key
buffer (:class:`memrl.memory.episodic.TableSet`, what MFEC runs) against one search per table
(the path before it), both measured in this run on this machine, one thread.

1. ``q_values`` of one state at 3k, 6k and 12.5k keys per table (MinAtar Breakout's 3
   actions, the default profile's 64-dim keys and k = 11): the ratio per size.
2. A whole MFEC run on the default's first MinAtar env, both ways from the same seed: its
   episode returns must be identical (the arithmetic is the same), and the ratio of the run's
   wall time.

    python benchmarks/mfec_lookup.py [--reps 300] [--steps 20000]
"""

from __future__ import annotations

import argparse
import time
from functools import partial

import numpy as np

from memrl.agents import mfec
from memrl.envs.registry import make
from memrl.families import load_family
from memrl.memory.episodic import EpisodicMemory, TableSet
from memrl.runtime import set_torch_threads


class Alone(list):
    """The path before TableSet: one :class:`EpisodicMemory` per action, each with its own
    key array, searched one after another."""

    def __init__(self, n: int, capacity: int, dim: int, k: int = 11, merge_radius: float = 0.0):
        super().__init__(EpisodicMemory(capacity, dim, k, merge_radius) for _ in range(n))

    def estimate(self, key: np.ndarray) -> np.ndarray:
        return np.array([m.estimate(key[None])[0] for m in self])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reps", type=int, default=300)
    ap.add_argument("--steps", type=int, default=20_000, help="env steps of the whole run")
    a = ap.parse_args()
    set_torch_threads(1)  # torch and numpy's BLAS on one thread, as every job runs
    cfg = load_family("episodic_control", "default")
    p = cfg.mfec
    rng = np.random.default_rng(0)
    print(f"q_values of one state, 3 tables of {p.key_dim}-dim keys, k = {p.k}")
    for n in (3_000, 6_000, 12_500):
        ways = {"per table": Alone(3, n + 1, p.key_dim, k=p.k), "one product": None}
        ways["one product"] = TableSet(3, n + 1, p.key_dim, k=p.k)
        for a_ in range(3):
            for key in rng.normal(size=(n, p.key_dim)).astype(np.float32):
                value = float(rng.normal())
                for tables in ways.values():
                    tables[a_].write(key, value)
        queries = rng.normal(size=(a.reps, p.key_dim)).astype(np.float32)
        timed = {}
        for name, tables in ways.items():
            start = time.perf_counter()
            for q in queries:
                tables.estimate(q)
            timed[name] = (time.perf_counter() - start) / a.reps * 1e6
        print(
            f"  {n:>6,} keys per table: per table {timed['per table']:7.1f} us, one product "
            f"{timed['one product']:7.1f} us: {timed['per table'] / timed['one product']:.2f}x"
        )

    env_id = next(e.env_id for e in cfg.envs if "MFEC" in e.methods)
    runs = {}
    for name in ("per table", "one product"):
        original = mfec.TableSet
        if name == "per table":
            mfec.TableSet = Alone  # type: ignore[misc]
        try:
            start = time.perf_counter()
            runs[name] = (
                mfec.train(partial(make, env_id), p, a.steps, seed=0),
                time.perf_counter() - start,
            )
        finally:
            mfec.TableSet = original  # type: ignore[misc]
    (old, t_old), (new, t_new) = runs["per table"], runs["one product"]
    same = (
        old["episode_returns"] == new["episode_returns"]
        and old["memory_size"] == new["memory_size"]
    )
    print(
        f"MFEC on {env_id}, {a.steps:,} steps: per table {t_old:.1f} s, one product {t_new:.1f} s: "
        f"{t_old / t_new:.2f}x; episode returns identical: {same}"
    )


if __name__ == "__main__":
    main()
