"""How many bootstrap resamples a difference needs for its CI ends to be stable: a repeated
:func:`memrl.stats.bootstrap.difference` (the same arms, other bootstrap seeds) should give
the same expanded-percentile tail ends to 2 significant digits. Measured in this run on
this machine: for each resample count, the share of repeats whose ends both round to the
same 2 significant digits as the first repeat's, the Monte-Carlo sd of each end, and the
time per difference (the analysis's price).

    python benchmarks/bootstrap_reps.py [--repeats 20] [--reps 4000,20000,50000,100000]

Measured on this machine (AMD EPYC family 25, 2 cores shared, load ~11), 10 repeats: the
expanded tail is 0.0010 at 5 seeds and 0.0086 at 10. 5 seeds vs 5 (ends -0.59, +2.55): MC sd
of the ends 0.054 / 0.069 at 4,000 resamples, 0.019 / 0.005 at 20,000, 0.007 / 0.004 at
50,000, 0.000 / 0.003 at 100,000; 13, 43, 127, 434 ms per difference. 10 seeds vs 10 (ends
-0.33, +1.51): 0.027 / 0.014, 0.015 / 0.006, 0.006 / 0.006, 0.004 / 0.004; 29, 112, 274, 559
ms. 8 runs x 40 items at 4,000: 0.0035 / 0.0049 (ends -0.106, +0.250), 2.5 s per difference.
"Same 2-significant-digit ends as the first repeat" is 10-70% at every count because ends sit
near rounding boundaries (2.549 vs 2.55); the sd is the measure: at 50,000 it is below half a
unit of the second digit for ends of magnitude >= 0.1. So claims judge at 50,000
(``CLAIM_REPS``), items arms at 10,000 (``ITEM_REPS``: their price).
"""

from __future__ import annotations

import argparse
import time

import memrl  # noqa: F401  (pins the kernels before numpy loads: memrl.isa)

# isort: split
import numpy as np

from memrl.stats.bootstrap import ITEM_REPS, _tail, arm, difference


def two_sig(x: float) -> float:
    return float(f"{x:.2g}")


def designs(rng: np.random.Generator) -> dict:
    """Arms as the published claims have them: 5 and 10 seeds of normal scores an effect
    of one seed-sd apart; 8 runs of 40 binary items (the shop's tasks)."""
    out = {}
    for n in (5, 10):
        a, b = rng.normal(1.0, 1.0, n), rng.normal(0.0, 1.0, n)
        out[f"{n} seeds vs {n}"] = (a, b)
    items = [(rng.random(40) < 0.6).astype(float) for _ in range(8)]
    other = [(rng.random(40) < 0.5).astype(float) for _ in range(8)]
    out["8 runs x 40 items"] = (
        arm(None, "BR", "a", items=items, reps=4000),
        arm(None, "BR", "b", items=other, reps=4000),
    )
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--reps", default="4000,20000,50000,100000")
    a = ap.parse_args()
    counts = [int(x) for x in a.reps.split(",")]
    rng = np.random.default_rng(0)
    print(f"expanded tail at 5 seeds: {_tail(5):.4f}, at 10: {_tail(10):.4f}")
    for name, (x, y) in designs(rng).items():
        for reps in counts:
            if reps > ITEM_REPS and "items" in name:  # ~8 runs x 40 x reps draws: memory
                continue
            t = time.perf_counter()
            ends = np.array(
                [
                    (d.ci_low, d.ci_high)
                    for d in (difference(x, y, True, s, reps) for s in range(a.repeats))
                ]
            )
            per = (time.perf_counter() - t) / a.repeats
            same = np.mean(
                [
                    two_sig(lo) == two_sig(ends[0, 0]) and two_sig(hi) == two_sig(ends[0, 1])
                    for lo, hi in ends
                ]
            )
            sd = ends.std(axis=0, ddof=1)
            print(
                f"{name:<18} {reps:>7} resamples: same 2-s.f. ends {same:>4.0%}, MC sd "
                f"{sd[0]:.4f} / {sd[1]:.4f} (ends {ends[0, 0]:+.3f}, {ends[0, 1]:+.3f}), "
                f"{1e3 * per:.1f} ms per difference"
            )


if __name__ == "__main__":
    main()
