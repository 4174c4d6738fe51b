"""MFEC's kNN estimate over every action's table, two ways, measured in this run on this
machine (one thread): one search per table (:class:`memrl.memory.episodic.EpisodicMemory`,
what MFEC runs) against one matrix-vector product over all the tables' keys kept slot by slot
in one buffer (``OneProduct`` below: the lever issue 40 proposed, which MFEC ran for one
round, then dropped).

``q_values`` of one state, best of interleaved rounds, at equal table sizes (3k, 6k, 12.5k
keys per table, MinAtar Breakout's 3 actions) and at the sizes a default SpaceInvaders run
(100k steps, exact MFEC, seed 0) ends with: 11,097 / 10,560 / 11,407 / 17,143 keys. The
product covers the fullest table's rows for every action (68,572 rows there for 50,207 keys)
in one block; each table's search reads only its own keys. Measured on the 2-core EPYC
beside two busy workers (2026-11-26), the ratio swings with the load: per table 1.24-1.47x
faster at the run's end sizes, 0.7-1.17x at equal sizes. What decides is the whole run: MFEC
on SpaceInvaders, 100k steps, seed 0, both at once beside the two workers: per table 175.5 s
of CPU, one product 206.5 s (1.18x), the same returns and memory; the default profile's jobs,
paired by seed (6 seeds, CPU time, only the two workers running): per table 1.06x. MFEC
searches per table again. (Both ways ran their lookups at ~100-120 s a SpaceInvaders job
against the published 39 s: the publishing machine, not the product or the pin.)

    python benchmarks/mfec_lookup.py [--reps 200] [--rounds 4]
"""

from __future__ import annotations

import argparse
import time
from functools import partial

import memrl  # noqa: F401  (first: importing it pins the kernels, memrl.isa)

# isort: split
import numpy as np

from memrl.families import load_family
from memrl.memory.episodic import EpisodicMemory
from memrl.runtime import set_torch_threads

RUN_END = (11_097, 10_560, 11_407, 17_143)  # a default SpaceInvaders run's tables at 100k steps


class OneProduct:
    """The dropped lever: every table's keys in one buffer, slot by slot (``keys[slot, a]``),
    and one product of a state against the block up to the fullest table (no exact-match
    check: the benchmark's random states never match)."""

    def __init__(self, tables: list[EpisodicMemory]) -> None:
        top, dim = max(t.size for t in tables), tables[0].dim
        self.tables = tables
        self.keys = np.zeros((top, len(tables), dim), dtype=np.float32)
        for a, t in enumerate(tables):
            self.keys[: t.size, a] = t.keys[: t.size]

    def estimate(self, q: np.ndarray) -> np.ndarray:
        q = q[None]
        block = self.keys.reshape(-1, q.shape[1])
        dots = (q @ block.T).reshape(len(self.keys), len(self.tables))
        qq = (q * q).sum(1)[:, None]
        out = np.empty(len(self.tables))
        for a, t in enumerate(self.tables):
            now = t.slots.tick()
            d = qq + t.sq_norms[None, : t.size] - 2.0 * dots[: t.size, a][None]
            nbrs = np.argpartition(np.maximum(d, 0.0), t.k - 1, axis=1)[:, : t.k]
            out[a] = t.values[nbrs].mean(1)[0]
            t.slots.touch(nbrs.ravel(), now)
        return out


def per_table(tables: list[EpisodicMemory], q: np.ndarray) -> np.ndarray:
    """What MFEC's ``q_values`` does."""
    return np.array([t.estimate(q[None])[0] for t in tables])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=4)
    a = ap.parse_args()
    set_torch_threads(1)  # numpy's BLAS on one thread, as every job runs
    p = load_family("episodic_control", "default").mfec
    rng = np.random.default_rng(0)
    print(f"q_values of one state, {p.key_dim}-dim keys, k = {p.k}, best of {a.rounds} rounds")
    for label, sizes in [
        *((f"{n:,} keys in each of 3 tables", (n,) * 3) for n in (3_000, 6_000, 12_500)),
        ("a SpaceInvaders run's end " + " / ".join(f"{n:,}" for n in RUN_END), RUN_END),
    ]:
        tables = [EpisodicMemory(n + 1, p.key_dim, k=p.k) for n in sizes]
        for t, n in zip(tables, sizes, strict=True):
            for key, value in zip(
                rng.normal(size=(n, p.key_dim)).astype(np.float32), rng.normal(size=n), strict=True
            ):
                t.write(key, float(value))
        one = OneProduct(tables)
        queries = rng.normal(size=(a.reps, p.key_dim)).astype(np.float32)
        ways = {"per table": partial(per_table, tables), "one product": one.estimate}
        best = dict.fromkeys(ways, float("inf"))
        for r in range(a.rounds):
            for name in list(ways)[:: 1 if r % 2 == 0 else -1]:
                start = time.perf_counter()
                for q in queries:
                    ways[name](q)
                best[name] = min(best[name], (time.perf_counter() - start) / a.reps * 1e6)
        print(
            f"  {label}: per table {best['per table']:7.1f} us, one product "
            f"{best['one product']:7.1f} us: per table {best['one product'] / best['per table']:.2f}x",
            flush=True,
        )


if __name__ == "__main__":
    main()
