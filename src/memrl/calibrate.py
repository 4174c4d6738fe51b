"""This machine's speed against the machine that published the timings, measured now.

On a fresh clone there is no run store, so ``memrl estimate`` prices every job from the
published timings: another machine's seconds. ``memrl estimate --calibrate`` first runs a
few smoke jobs here (the same ones on every machine: spread over the families and their job
functions by hashes of their keys, as ``memrl verify`` picks, each priced at >= 2 s by the
published smoke timings so that a clock's grain does not decide), ``workers`` at a time in
a pool of processes, as the published ones ran, and divides each one's core-seconds by what
the published smoke timings price it at. The median of those ratios scales every published
price; their range is said beside it.

Smoke and default jobs run the same code at other sizes, so the ratio carries over as far
as the two machines' caches and start-up costs allow: the estimate says it is this ratio,
over how many jobs, measured now.
"""

from __future__ import annotations

import statistics
import tempfile
from dataclasses import dataclass
from pathlib import Path

from memrl.jobs import JobSpec
from memrl.runs import RunStore, core_seconds, job_group, machines, read_cpus, read_timings

PROFILE = "smoke"  # the calibration's jobs: seconds each, and their timings are published


@dataclass(frozen=True)
class Calibration:
    """``ratio``: this machine's core-seconds over the published ones (> 1: slower here),
    the median over ``jobs`` smoke jobs; ``published_on``: the CPU the smoke timings record."""

    ratio: float
    jobs: int
    low: float
    high: float
    published_on: str = ""

    @classmethod
    def of(cls, ratios: list[float], published_on: str = "") -> Calibration:
        return cls(statistics.median(ratios), len(ratios), min(ratios), max(ratios), published_on)

    @property
    def text(self) -> str:
        on = f" on {self.published_on}" if self.published_on else ""
        return (
            f"x {self.ratio:.2f}, this machine's time over the published timings'{on}, the "
            f"median of {self.jobs} smoke jobs run now ({self.low:.2f}-{self.high:.2f})"
        )


def calibration_jobs(n: int = 6, min_seconds: float = 2.0) -> list[tuple[JobSpec, float]]:
    """(job, its published core-seconds) for ``n`` smoke jobs priced at >= ``min_seconds``,
    spread over the families as :func:`memrl.verify.sample` spreads them."""
    from memrl import families
    from memrl.runtime import repo_root
    from memrl.verify import sample

    root = repo_root()
    grids, price = [], {}
    for name in families.NAMES:
        fam = families.get(name)
        rates = read_timings(root / fam.timings_path(PROFILE))
        specs = fam.grid(families.load_family(name, PROFILE))
        for s in specs:
            if rates.get(job_group(s.name)):
                price[s.key] = statistics.median(rates[job_group(s.name)]) * s.cost
        grids.append([s for s in specs if price.get(s.key, 0.0) >= min_seconds])
    picked = sample(grids, n)
    return [(s, price[s.key]) for s in picked]


def published_cpus() -> str:
    """The CPU models the published smoke timings were measured on, as a phrase."""
    from memrl import families
    from memrl.runtime import repo_root

    counts: dict[str, int] = {}
    for name in families.NAMES:
        for model, k in read_cpus(repo_root() / families.get(name).timings_path(PROFILE)).items():
            counts[model] = counts.get(model, 0) + k
    return machines(counts) if counts else ""


def calibrate(n: int = 6, workers: int = 2) -> Calibration:
    """Run :func:`calibration_jobs` here and compare their seconds with the published."""
    from memrl.executors import execute

    jobs = calibration_jobs(n)
    if not jobs:
        raise ValueError("no published smoke timings to calibrate against (results/smoke/*)")
    with tempfile.TemporaryDirectory(prefix="memrl-calibrate-") as tmp:
        store = RunStore(Path(tmp))
        specs = [s for s, _ in jobs]
        execute(specs, store, "process", workers, desc="calibrating")
        ratios = [(core_seconds(store.load(s)) or 0.0) / expected for s, expected in jobs]
    return Calibration.of(ratios, published_cpus())
