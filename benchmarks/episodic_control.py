"""Episodic-control speed, all measured in this run on this machine.

1. Episodic memory: one kNN lookup + one insert at 10^4 and 10^5 stored keys —
   memrl's EpisodicMemory (hash for exact matches, cached norms, one matrix
   product + argpartition; nothing rebuilt on insert) against the common public
   MFEC approach of rebuilding a KD-tree on every insert (scipy's cKDTree).
2. Agents: environment steps per second of MFEC and NEC against SB3 DQN on
   MinAtar Breakout (default-profile hyperparameters, one thread each).

    python benchmarks/episodic_control.py [--dim 64] [--k 11] [--reps 300] [--steps 20000]
"""

from __future__ import annotations

import argparse
import time
from functools import partial

import memrl  # noqa: F401  (first: importing it pins the kernels, memrl.isa)

# isort: split
import numpy as np
from scipy.spatial import cKDTree

from memrl.memory.episodic import EpisodicMemory


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--k", type=int, default=11)
    ap.add_argument("--reps", type=int, default=300)
    ap.add_argument("--steps", type=int, default=20_000, help="env steps per agent")
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    print(f"one lookup (k={a.k}) + one insert, {a.dim}-dim keys")
    for n in (10_000, 100_000):
        keys = rng.normal(size=(n, a.dim)).astype(np.float32)
        vals = rng.normal(size=n)
        mem = EpisodicMemory(n + a.reps + 1, a.dim, k=a.k)
        for key, v in zip(keys, vals, strict=True):
            mem.write(key, v)
        queries = rng.normal(size=(a.reps, a.dim)).astype(np.float32)

        mem.estimate(queries[:1])  # warm-up (first BLAS call)
        t = time.perf_counter()
        for q in queries:
            mem.estimate(q[None])
            mem.write(q, 1.0)
        ours = (time.perf_counter() - t) / a.reps

        stored = keys
        reps_tree = max(3, a.reps // 10)
        t = time.perf_counter()
        for q in queries[:reps_tree]:
            tree = cKDTree(stored)
            tree.query(q, k=a.k)
            stored = np.vstack([stored, q[None]])  # insert, then the next lookup rebuilds
        kd = (time.perf_counter() - t) / reps_tree
        print(
            f"  n={n:>7,}: EpisodicMemory {ours * 1e3:8.2f} ms   "
            f"KD-tree rebuilt per insert {kd * 1e3:8.2f} ms   ratio {kd / ours:6.1f}x"
        )
    agents(a.steps)


def agents(steps: int) -> None:
    """Env steps/s of MFEC and NEC vs SB3 DQN (MinAtar network), default hyperparameters."""
    from memrl.agents import mfec, nec
    from memrl.agents.sb3_dqn import dqn_train
    from memrl.envs.registry import make
    from memrl.families import load_family
    from memrl.runtime import set_torch_threads

    set_torch_threads(1)
    cfg = load_family("episodic_control", "default")
    env_id = "MinAtar/Breakout-v1"
    runs = {
        "SB3 DQN": lambda: dqn_train(partial(make, env_id), cfg.dqn_for(env_id), steps, 0),
        "MFEC": lambda: mfec.train(partial(make, env_id), cfg.mfec, steps, 0),
        "NEC": lambda: nec.train(partial(make, env_id), cfg.nec, steps, 0),
    }
    print(f"\nagents on {env_id}, {steps:,} env steps each (1 thread)")
    rate = {}
    for name, fn in runs.items():
        t = time.perf_counter()
        fn()
        rate[name] = steps / (time.perf_counter() - t)
        print(f"  {name:<8} {rate[name]:8.0f} steps/s   {rate[name] / rate['SB3 DQN']:5.2f}x DQN")


if __name__ == "__main__":
    main()
