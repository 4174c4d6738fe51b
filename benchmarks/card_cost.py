"""What the memory card's training jobs cost against another revision's card, measured in
this run.

The card's price is the sum of its jobs' seconds (one torch thread each). Prices published
by different machines, or before a change of kernels, do not compare; this script runs the
default profile's card jobs of this checkout and of ``--baseline`` (a git revision, checked
out into a temporary worktree that reads this checkout's ``data/``) on this machine, under
the same pinned kernels (:mod:`memrl.isa`'s ``x86-64-v3``, oneDNN and NNPACK off in both),
each job in a fresh process, the two cards' jobs interleaved and ``--workers`` at a time so
a busy machine weighs on both alike. Printed: each model's seconds per card and the ratio
of the totals.

    python benchmarks/card_cost.py [--baseline 9e32a14] [--seeds 5] [--workers 2]

The default baseline is the card published on 2026-11-25 (7 models, full backpropagation
through the trajectory; 35 jobs, 301.4 core-s on the machine that published it).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FAMILY = "recurrent_off_policy"


def card_specs() -> list:
    """The default profile's card jobs of the tree this process imports memrl from."""
    from memrl import families
    from memrl.cli import family_params

    specs = families.get(FAMILY).grid(family_params(FAMILY, "default", []))
    return [s for s in specs if s.label.startswith("card ")]


def child(label: str) -> None:
    """In a fresh process whose ``PYTHONPATH`` and ``MEMRL_ROOT`` name one tree: run the
    default profile's card job ``label`` and print its wall seconds (for ``--labels``, print
    every card job's label instead)."""
    if label == "--labels":
        print(json.dumps([s.label for s in card_specs()]))
        return
    import importlib

    import torch as th

    try:
        where = importlib.import_module("memrl.executors")
    except ImportError:  # revisions before the executors module kept run_spec in runs
        where = importlib.import_module("memrl.runs")
    threads = where.set_torch_threads

    def same_kernels(n: int = 1) -> None:  # older revisions left oneDNN on
        threads(n)
        th.backends.mkldnn.enabled = False
        th.backends.nnpack.set_flags(False)

    where.set_torch_threads = same_kernels
    (spec,) = [s for s in card_specs() if s.label == label]
    _, seconds = where.run_spec(spec.to_json())
    print(json.dumps({"seconds": seconds}))


def in_child(env: dict[str, str], arg: str) -> str:
    """This script's ``--child arg`` in a fresh process under ``env``: its last line."""
    out = subprocess.run(
        [sys.executable, __file__, "--child", arg],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout.strip().splitlines()[-1]


def labels(env: dict[str, str], seeds: int) -> list[str]:
    """The labels of the default profile's card jobs in the tree ``env`` names, for the
    first ``seeds`` seeds."""
    keep = {f"seed {s}" for s in range(seeds)}
    return [x for x in json.loads(in_child(env, "--labels")) if x.split(" · ")[-1] in keep]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", default="9e32a14", help="git revision of the other card")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()

    sys.path.insert(0, str(ROOT / "src"))
    from memrl import isa

    pinned = isa.LEVELS[isa.DEFAULT]
    with tempfile.TemporaryDirectory() as tmp:
        old = Path(tmp) / "baseline"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(old), a.baseline],
            check=True,
        )
        try:
            if (old / "data").is_dir():  # git's empty folder, if any: DVC keeps the files
                (old / "data").rmdir()
            (old / "data").symlink_to(ROOT / "data")
            trees = {"this checkout": ROOT, a.baseline: old}
            envs = {
                name: {
                    **os.environ,
                    **pinned,
                    "MEMRL_ISA": isa.DEFAULT,
                    "MEMRL_PROGRESS": "0",
                    "MEMRL_ROOT": str(tree),
                    "PYTHONPATH": str(tree / "src"),
                }
                for name, tree in trees.items()
            }
            jobs = {name: labels(envs[name], a.seeds) for name in trees}
            order = [  # interleaved: one job of each card in turn
                (name, jobs[name][i])
                for i in range(max(map(len, jobs.values())))
                for name in trees
                if i < len(jobs[name])
            ]

            def one(job: tuple[str, str]) -> tuple[str, str, float]:
                name, label = job
                seconds = json.loads(in_child(envs[name], label))["seconds"]
                print(f"  {name:>14}  {label:<24} {seconds:7.1f} s", flush=True)
                return name, label, seconds

            with ThreadPoolExecutor(a.workers) as pool:
                done = list(pool.map(one, order))
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old)], check=False
            )

    per: dict[str, dict[str, float]] = {name: defaultdict(float) for name in trees}
    for name, label, seconds in done:
        per[name][label.split(" · ")[0].removeprefix("card ")] += seconds
    models = sorted({m for p in per.values() for m in p})
    print(f"\n{'model':<14}" + "".join(f"{n:>16}" for n in trees))
    for m in models:
        print(f"{m:<14}" + "".join(f"{per[n].get(m, 0.0):>14.1f} s" for n in trees))
    totals = {n: sum(p.values()) for n, p in per.items()}
    print(
        f"{'total':<14}"
        + "".join(f"{totals[n]:>14.1f} s" for n in trees)
        + f"\n{len(jobs['this checkout'])} jobs against {len(jobs[a.baseline])}: this checkout's "
        f"card costs {totals['this checkout'] / totals[a.baseline]:.2f}x the baseline's"
    )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2])
    else:
        main()
