"""What default jobs cost at this checkout against another revision, measured in one run.

Prices published by different machines do not compare (issue 55: most of the default's rise
from 27,213 to 52,395 core-s was the machine that published). This script prices a change
the way the house states prices: a sample of the default profile's jobs, the same ones
``memrl verify`` picks (spread over every family, or the ``--family`` named, and over job
functions; fixed by hashes), run at this checkout and at ``--baseline`` (a git revision in a
temporary worktree reading this checkout's ``data/``) on this machine, each job in a fresh
process, the two revisions' jobs interleaved and ``--workers`` at a time so a busy machine
weighs on both alike, ``--repeats`` times. Printed first: the sample and its price (this
checkout's estimate, doubled for the baseline); then each job's core-seconds at both, and
the ratio per family and in all (with its range over the repeats when there are several).
A job the baseline does not have (added since) is named and left out of both sides.

    python benchmarks/price_ratio.py [--baseline 6e0b23e] [--sample 12] [--family F ...]
                                     [--repeats 1] [--workers 2] [--dry-run]

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
    tree's default job ``label`` of ``family``; print the CPU seconds its process used (or
    ``null`` when that tree has no such job)."""
    import time

    from memrl import families
    from memrl.cli import family_params
    from memrl.executors import run_spec

    specs = families.get(family).grid(family_params(family, "default", []))
    hits = [s for s in specs if s.label == label]
    if not hits:
        print(json.dumps({"core_seconds": None}))
        return
    cpu = time.process_time()
    run_spec(hits[0].to_json())
    print(json.dumps({"core_seconds": time.process_time() - cpu}))


def picked(n: int, names: list[str] | None = None) -> list[tuple[str, str, float]]:
    """(family, label, estimated core-s) of the ``n`` jobs ``memrl verify --sample n``
    reruns, over ``names`` (default: every family)."""
    from memrl import families
    from memrl.cli import family_params
    from memrl.estimate import estimate_family
    from memrl.verify import sample

    names = names or list(families.NAMES)
    grids = {f: families.get(f).grid(family_params(f, "default", [])) for f in names}
    family_of = {s.key: f for f, specs in grids.items() for s in specs}
    jobs = sample(list(grids.values()), n)
    price = {}
    for f in names:
        mine = [s for s in jobs if family_of[s.key] == f]
        if mine:
            est = estimate_family(f, "default", mine, 1, fresh=True)
            price |= {s.key: p.seconds or 0.0 for s, p in zip(mine, est.predictions, strict=True)}
    return [(family_of[s.key], s.label, price[s.key]) for s in jobs]


def spread(values: list[float]) -> str:
    """``0.83x`` for one repeat; ``0.83x (0.80-0.86)``: the ratio of the summed seconds and
    the range of the repeats' own ratios."""
    return "" if len(values) < 2 else f" ({min(values):.2f}-{max(values):.2f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", default="6e0b23e", help="git revision to price against")
    ap.add_argument("--sample", type=int, default=12)
    ap.add_argument("--family", action="append", help="sample only this family (repeatable)")
    ap.add_argument("--repeats", type=int, default=1, help="runs of each job per revision")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--dry-run", action="store_true", help="print the sample and its price only")
    a = ap.parse_args()

    sys.path.insert(0, str(ROOT / "src"))
    from memrl import isa

    jobs = picked(a.sample, a.family)
    total = sum(s for *_, s in jobs)
    print(f"{len(jobs)} default jobs, {a.repeats} repeat(s), at this checkout and {a.baseline}:")
    for f, label, s in jobs:
        print(f"  {f:<22} {label:<48} ~{s:7.0f} core-s")
    hours = 2 * a.repeats * total / a.workers / 3600
    print(f"price: ~{2 * a.repeats * total:,.0f} core-s, ~{hours:.1f} h on {a.workers} workers\n")
    if a.dry_run:
        return
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
            order = [  # interleaved: each job at both revisions, side by side
                (r, name, f, label)
                for r in range(a.repeats)
                for f, label, _ in jobs
                for name in trees
            ]

            def one(job: tuple[int, str, str, str]) -> tuple[int, str, str, str, float | None]:
                r, name, family, label = job
                out = subprocess.run(
                    [sys.executable, __file__, "--child", family, label],
                    env=envs[name],
                    check=True,
                    capture_output=True,
                    text=True,
                )
                seconds = json.loads(out.stdout.strip().splitlines()[-1])["core_seconds"]
                shown = "not in this revision" if seconds is None else f"{seconds:8.1f} core-s"
                print(f"  {r}  {name:>14}  {label:<48} {shown}", flush=True)
                return r, name, family, label, seconds

            with ThreadPoolExecutor(a.workers) as pool:
                done = list(pool.map(one, order))
        finally:
            subprocess.run([*git, "remove", "--force", str(old)], check=False)

    missing = {(f, label) for _, _, f, label, s in done if s is None}
    for f, label in sorted(missing):
        print(f"left out (one revision lacks it): {f}: {label}")
    per: dict[tuple[int, str], dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for r, name, family, label, seconds in done:
        if (family, label) not in missing:
            per[r, name][family] += seconds
    names, fams = list(trees), sorted({f for f, _, _ in jobs})

    def row(title: str, of) -> str:
        sums = {n: sum(of(per[r, n]) for r in range(a.repeats)) for n in names}
        ratios = [of(per[r, names[0]]) / of(per[r, names[1]]) for r in range(a.repeats)]
        cells = "".join(f"{sums[n] / a.repeats:>11.1f} core-s" for n in names)
        return f"{title:<22}{cells}{sums[names[0]] / sums[names[1]]:>7.2f}x{spread(ratios)}"

    print(f"\non {isa.cpu_model()}, {len(jobs) - len(missing)} default jobs, one run, interleaved")
    print(f"{'family':<22}" + "".join(f"{n:>18}" for n in names) + f"{'ratio':>8}")
    for f in fams:
        if any(per[0, n].get(f) for n in names):
            print(row(f, lambda p, f=f: p[f]))
    print(row("all", lambda p: sum(p.values())))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], sys.argv[3])
    else:
        main()
