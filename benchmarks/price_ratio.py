"""What default jobs cost at this checkout against another revision, measured in one run.

Prices published by different machines do not compare (issue 55: most of the default's rise
from 27,213 to 52,395 core-s was the machine that published). This script prices a change
the way the house states prices: a sample of the default profile's jobs, the same ones
``memrl verify`` picks (spread over every family and job function, fixed by hashes), run at
this checkout and at ``--baseline`` (a git revision in a temporary worktree reading this
checkout's ``data/``) on this machine, each job in a fresh process, the two revisions' jobs
interleaved and ``--workers`` at a time so a busy machine weighs on both alike. Printed: the
CPU, each job's core-seconds at both, the ratio per family and in all.

    python benchmarks/price_ratio.py [--baseline 6e0b23e] [--sample 12] [--workers 2]

The default baseline is the default profile published on 2026-11-27 (6e0b23e).
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


def child(family: str, label: str) -> None:
    """In a fresh process whose ``PYTHONPATH`` and ``MEMRL_ROOT`` name one tree: run that
    tree's default job ``label`` of ``family``; print the CPU seconds its process used."""
    import time

    from memrl import families
    from memrl.cli import family_params
    from memrl.executors import run_spec

    specs = families.get(family).grid(family_params(family, "default", []))
    (spec,) = [s for s in specs if s.label == label]
    cpu = time.process_time()
    run_spec(spec.to_json())
    print(json.dumps({"core_seconds": time.process_time() - cpu}))


def picked(n: int) -> list[tuple[str, str]]:
    """(family, label) of the ``n`` jobs ``memrl verify --sample n`` reruns."""
    from memrl import families
    from memrl.cli import family_params
    from memrl.verify import sample

    grids = {f: families.get(f).grid(family_params(f, "default", [])) for f in families.NAMES}
    family_of = {s.key: f for f, specs in grids.items() for s in specs}
    return [(family_of[s.key], s.label) for s in sample(list(grids.values()), n)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", default="6e0b23e", help="git revision to price against")
    ap.add_argument("--sample", type=int, default=12)
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()

    sys.path.insert(0, str(ROOT / "src"))
    from memrl import isa

    jobs = picked(a.sample)
    with tempfile.TemporaryDirectory() as tmp:
        old = Path(tmp) / "baseline"
        git = ["git", "-C", str(ROOT), "worktree"]
        subprocess.run([*git, "add", "--detach", "-q", str(old), a.baseline], check=True)
        try:
            if (old / "data").is_dir():  # git's empty folder, if any: DVC keeps the files
                (old / "data").rmdir()
            (old / "data").symlink_to(ROOT / "data")
            trees = {"this checkout": ROOT, a.baseline: old}
            base = {k: v for k, v in os.environ.items() if k not in isa.LEVELS[isa.DEFAULT]}
            envs = {
                name: {
                    **base,
                    "MEMRL_PROGRESS": "0",
                    "MEMRL_ROOT": str(tree),
                    "PYTHONPATH": str(tree / "src"),
                }
                for name, tree in trees.items()
            }
            order = [(name, f, label) for f, label in jobs for name in trees]  # interleaved

            def one(job: tuple[str, str, str]) -> tuple[str, str, str, float]:
                name, family, label = job
                out = subprocess.run(
                    [sys.executable, __file__, "--child", family, label],
                    env=envs[name],
                    check=True,
                    capture_output=True,
                    text=True,
                )
                seconds = json.loads(out.stdout.strip().splitlines()[-1])["core_seconds"]
                print(f"  {name:>14}  {label:<44} {seconds:8.1f} core-s", flush=True)
                return name, family, label, seconds

            with ThreadPoolExecutor(a.workers) as pool:
                done = list(pool.map(one, order))
        finally:
            subprocess.run([*git, "remove", "--force", str(old)], check=False)

    per: dict[str, dict[str, float]] = {name: defaultdict(float) for name in trees}
    for name, family, _, seconds in done:
        per[name][family] += seconds
    print(f"\non {isa.cpu_model()}, {len(jobs)} default jobs, one run, interleaved")
    print(f"{'family':<22}" + "".join(f"{n:>18}" for n in trees) + f"{'ratio':>8}")
    for f in sorted(per["this checkout"]):
        cells = "".join(f"{per[n][f]:>11.1f} core-s" for n in trees)
        print(f"{f:<22}{cells}{per['this checkout'][f] / per[a.baseline][f]:>7.2f}x")
    totals = {n: sum(p.values()) for n, p in per.items()}
    cells = "".join(f"{totals[n]:>11.1f} core-s" for n in trees)
    print(f"{'all':<22}{cells}{totals['this checkout'] / totals[a.baseline]:>7.2f}x")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], sys.argv[3])
    else:
        main()
