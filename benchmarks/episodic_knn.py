"""Episodic-memory speed: one kNN lookup + one insert, at 10^4 and 10^5 stored keys.

Compares memrl's EpisodicMemory (cached norms, one matrix product, argpartition; no
rebuild on insert) with the common public MFEC approach of rebuilding a KD-tree on
every insert (scipy's cKDTree here), measured in this run. Prints the ratio.

    python benchmarks/episodic_knn.py [--dim 64] [--k 11] [--reps 50]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.spatial import cKDTree

from memrl.memory.episodic import EpisodicMemory


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--k", type=int, default=11)
    ap.add_argument("--reps", type=int, default=50)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    print(f"one lookup (k={a.k}) + one insert, {a.dim}-dim keys")
    for n in (10_000, 100_000):
        keys = rng.normal(size=(n, a.dim)).astype(np.float32)
        vals = rng.normal(size=n)
        mem = EpisodicMemory(n + a.reps + 1, a.dim, k=a.k)
        mem.keys[:n], mem.values[:n] = keys, vals
        mem.sq_norms[:n] = (keys * keys).sum(1)
        mem.size = n
        queries = rng.normal(size=(a.reps, a.dim)).astype(np.float32)

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


if __name__ == "__main__":
    main()
