"""What routing the language model's linear layers through OpenBLAS is worth, measured in
this run on this machine (one thread, the pinned kernel set, :mod:`memrl.isa`).

The same REMEMBERER decisions (SmolLM2-135M by default; ``llm_scoring.decisions``) are
scored by :class:`memrl.llm.scoring.LLMScorer` with its caches, as the jobs score them, once
with torch's own products (MKL's ``COMPATIBLE`` branch under the pin) and once with
:class:`memrl.llm.models.BlasLinear` (numpy's OpenBLAS, Haswell kernels), in interleaved
rounds. Printed per round: CPU seconds per decision each way and the ratio; then the largest
difference between the two ways' scores and how often they choose the same action (the
arithmetic differs: other kernels, another order of sums).

    python benchmarks/llm_linear.py [--model smollm2] [--decisions 12] [--rounds 3]
"""

from __future__ import annotations

import argparse
import time

import memrl  # noqa: F401  (first: importing it pins the kernels, memrl.isa)

# isort: split
import numpy as np
from llm_scoring import decisions

from memrl.agents.rlem import PREFIX
from memrl.families import load_family
from memrl.llm.models import BlasLinear, blas_products, load_model
from memrl.llm.scoring import LLMScorer
from memrl.runtime import set_torch_threads


def torch_products(model) -> None:
    """Undo :func:`blas_products`: every wrapped layer runs its module's own forward."""
    for module in model.modules():
        if isinstance(module.__dict__.get("forward"), BlasLinear):
            del module.forward


def score_all(loaded, batch) -> tuple[float, list[np.ndarray]]:
    """CPU seconds per decision and each decision's scores, by a fresh scorer (its caches
    filled as it goes)."""
    scorer = LLMScorer(loaded)
    t = time.process_time()
    scores = [scorer.score(PREFIX, prompt, cands, ctx) for ctx, prompt, cands in batch]
    return (time.process_time() - t) / len(batch), scores


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--decisions", type=int, default=12)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    set_torch_threads(1)
    loaded = load_model(args.model)
    batch = decisions(load_family("llm_memory_rl", "default"), args.decisions)
    print(f"{len(batch)} decisions, model {args.model}, 1 thread, CPU seconds per decision")
    score_all(loaded, batch[:2])  # warm: files, caches, first-call allocations
    for r in range(args.rounds):
        torch_products(loaded.model)
        t_torch, s_torch = score_all(loaded, batch)
        blas_products(loaded.model)
        t_blas, s_blas = score_all(loaded, batch)
        print(
            f"round {r + 1}: torch (MKL) {t_torch:.3f} s, OpenBLAS {t_blas:.3f} s, "
            f"ratio {t_torch / t_blas:.2f}x"
        )
    same = sum(int(np.argmax(a) == np.argmax(b)) for a, b in zip(s_torch, s_blas, strict=True))
    diff = max(np.abs(a - b).max() for a, b in zip(s_torch, s_blas, strict=True))
    print(f"scores: largest difference {diff:.1e}; same choice in {same} of {len(batch)} decisions")


if __name__ == "__main__":
    main()
