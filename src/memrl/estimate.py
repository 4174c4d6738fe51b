"""What a profile will cost before it runs: core-seconds and wall time per family, from
the stored runs' measured core-seconds (:func:`memrl.runs.core_seconds`: the CPU time each
job's process used; the wall seconds of records older than that).

Every job declares a rough ``cost`` that scales with its budget (env steps, bits x steps,
...). Each stored record gives the core-seconds one unit of cost took for its *job group* (the
label without its seed or run number, e.g. ``RSAC-LSTM · Pendulum-V``), so a job not yet
stored is predicted as ``cost x`` the median seconds-per-cost of its group — from this
profile's store first, then from another profile's — and failing that from its family's
median (marked *rough*). Where the profile's store holds no run of a group, as on a fresh
clone (run stores are DVC outputs, not in git), the *published timings* price it: the
``timings.json`` each runs stage writes beside the family's results and git keeps. A changed
budget (``--set envs.0.total_timesteps=50000``) is therefore priced from the runs at the old
budget. Only the store's runs made on this CPU (the model each record names) price as this
machine's; runs made on another (a store pulled from the DVC remote, or left part-way by
another machine) price as the published timings do, which they usually are. Where this
machine's runs and the other CPU's rates both price some groups (a stage stopped part-way),
the other's rates are scaled by the median ratio of the two over those groups
(:func:`machine_scale`); with none of its own, by ``--calibrate``'s measured ratio. Measured
here, the recurrent family's first 13 jobs took 2.7x their published seconds, so the rest
would have been priced at 55 min where they took ~2.5 h. Wall time packs the jobs to run on
the profile's ``workers`` processes, longest first, as the executor does; the notebook
stages are not modelled.

    python -m memrl estimate [family ...] [--profile P] [--set key=value ...] [--fresh]

The stored core-seconds were measured with every worker busy, so they include what two
workers sharing the machine's caches and memory cost each other, but not the time a job
waited for a core another process held; they carry the machine's day-to-day noise.
"""

from __future__ import annotations

import heapq
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from memrl.jobs import JobSpec
from memrl.runs import (
    RunStore,
    core_seconds,
    cpus,
    decision_rates,
    job_group,
    machines,
    rates,
    read_cpus,
    read_records,
    read_timings,
    record_cpu,
)

PUBLISHED = "published"  # a calibration source: the timings.json kept in git


@dataclass(frozen=True)
class Prediction:
    """One job's expected seconds and where the figure comes from.

    :param basis: ``"stored"`` (its result is in the store: nothing to run; with
        ``fresh``, ``"measured"``: the stored run's own seconds), ``"group"``
        (measured runs of its group, this profile), ``"group, published"`` (this
        profile's published timings), ``"group, <profile>"`` (of its group in another
        profile; ``"group, <profile>, published"``: its published timings), ``"family"``
        (its family's median rate: rough) or
        ``"unknown"`` (no measured run of the family at all)
    """

    spec: JobSpec
    seconds: float | None
    basis: str


@dataclass(frozen=True)
class Scale:
    """How much slower (> 1) or faster this machine runs than the one that published the
    timings, and how that was measured (said after "from the published timings")."""

    factor: float
    text: str


@dataclass
class FamilyEstimate:
    """A family's jobs and what those not yet stored are expected to cost."""

    family: str
    workers: int
    predictions: list[Prediction] = field(default_factory=list)
    note: str = ""  # said after the summary line (e.g. how a served model was priced)
    scale: Scale | None = None  # the published timings x this machine's measured speed
    # the CPUs the prices were measured on ({model: jobs}): this store's runs made here, the
    # published timings' (or the stored runs' made on another CPU, when there are some)
    cpus: tuple[dict[str, int], dict[str, int]] = ({}, {})
    pulled: int = 0  # stored runs made on another CPU, priced with the published timings

    @property
    def todo(self) -> list[Prediction]:
        return [p for p in self.predictions if p.basis != "stored"]

    @property
    def core_seconds(self) -> float:
        return sum(p.seconds or 0.0 for p in self.todo)

    @property
    def wall_seconds(self) -> float:
        return packed_wall([p.seconds or 0.0 for p in self.todo], self.workers)

    def summary(self) -> str:
        """One line: how many jobs are left to run, what they are expected to cost, and from
        what each was priced (with how many jobs, where the sources are several)."""
        todo = self.todo
        if not todo:
            return f"{self.family}: all {len(self.predictions)} jobs already stored"
        head = f"{self.family}: {len(todo)} of {len(self.predictions)} jobs to run"
        published = sum(p.basis == f"group, {PUBLISHED}" for p in todo)
        own, theirs = (f" on {machines(c)}" if c else "" for c in self.cpus)
        pulled = " and the stored runs of another CPU" if self.pulled else ""
        scaled = f" {self.scale.text}" if self.scale else ", not scaled to this machine"
        sources = [  # how many jobs, priced how
            (sum(p.basis == "group" for p in todo), f"from the stored runs' seconds{own}"),
            (published, f"from the published timings{pulled}{theirs}{scaled}"),
            (
                sum(p.basis.startswith("group, ") for p in todo) - published,
                "from another profile's runs, whose sizes may differ",
            ),
            (
                sum(p.basis == "server" for p in todo),
                "by their recorded LLM decisions x the served model's measured seconds per "
                "decision",
            ),
            (sum(p.basis == "family" for p in todo), "roughly, from the family's median rate"),
        ]
        sources = [(n, how) for n, how in sources if n]
        unknown = sum(p.seconds is None for p in todo)
        if len(sources) == 1 and not unknown:
            basis = f"priced {sources[0][1]}"
        else:
            parts = [f"{n} priced {how}" for n, how in sources]
            basis = "; ".join(parts + [f"{unknown} not priced: no measured run"] * bool(unknown))
        return (
            f"{head}, ~{self.core_seconds:,.0f} core-s, ~{_duration(self.wall_seconds)} on "
            f"{self.workers} workers ({basis})" + (f"; {self.note}" if self.note else "")
        )

    def groups(self) -> list[tuple[str, int, float]]:
        """(job group, jobs to run, predicted core-s), costliest first."""
        acc: dict[str, list[float]] = defaultdict(list)
        for p in self.todo:
            acc[job_group(p.spec.name)].append(p.seconds or 0.0)
        return sorted(((g, len(v), sum(v)) for g, v in acc.items()), key=lambda x: -x[2])


def packed_wall(seconds: Iterable[float], workers: int) -> float:
    """Wall time of running jobs of these durations on ``workers`` processes, longest first,
    each starting on the first free worker (the executor's order)."""
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    free = [0.0] * workers
    for s in sorted(seconds, reverse=True):
        heapq.heapreplace(free, free[0] + s)
    return max(free)


def machine_scale(
    stored: dict[str, list[float]], published: dict[str, list[float]]
) -> Scale | None:
    """This machine's speed from the runs it stored: the median, over the job groups both
    price, of the stored runs' median rate over the published rate; ``None`` when no group
    is in both."""
    medians = [
        (statistics.median(stored[g]), statistics.median(published[g]))
        for g in sorted(stored.keys() & published.keys())
        if stored[g] and published[g]
    ]
    ratios = [mine / theirs for mine, theirs in medians if theirs > 0]
    if not ratios:
        return None
    n, factor = len(ratios), statistics.median(ratios)
    return Scale(
        factor,
        f"x {factor:.2f}, the ratio of this machine's stored runs to them over the {n} "
        f"group{'s' if n > 1 else ''} both price",
    )


def predict(
    specs: Sequence[JobSpec],
    store: RunStore | None,
    sources: Sequence[tuple[str, dict[str, list[float]]]],
    fresh: bool = False,
    per_decision: tuple[float, dict[str, list[float]]] | None = None,
) -> list[Prediction]:
    """Each job's prediction: stored, or ``cost x`` its group's median seconds-per-cost from
    the first of ``sources`` (``(name, rates)``; name ``""`` for this profile)
    that has the group, else the family's median rate over every source (``store`` None:
    nothing stored). ``fresh``: as on
    a fresh clone with no stored runs (a stored job costs its measured seconds).
    ``per_decision``: (seconds one LLM decision takes on a served model, decisions per cost
    by group): a group that has both is priced as ``cost x decisions x seconds`` (the rest
    of an LLM job, retrieval and updates, is not counted)."""
    every = [r for _, src in sources for v in src.values() for r in v]
    family_rate = statistics.median(every) if every else None
    out = []
    for spec in specs:
        rec = store.load(spec) if store is not None else None
        if rec is not None:
            measured = (core_seconds(rec) or 0.0) if fresh else 0.0
            out.append(Prediction(spec, measured, "measured" if fresh else "stored"))
            continue
        group = job_group(spec.name)
        if per_decision is not None and per_decision[1].get(group):
            seconds, by_group = per_decision
            n = statistics.median(by_group[group]) * spec.cost
            out.append(Prediction(spec, n * seconds, "server"))
            continue
        found = next(((name, src[group]) for name, src in sources if src.get(group)), None)
        if found is not None:
            name, group_rates = found
            basis = f"group, {name}" if name else "group"
            out.append(Prediction(spec, statistics.median(group_rates) * spec.cost, basis))
        elif family_rate is not None:
            out.append(Prediction(spec, family_rate * spec.cost, "family"))
        else:
            out.append(Prediction(spec, None, "unknown"))
    return out


def estimate_family(
    family: str,
    profile: str,
    specs: Sequence[JobSpec],
    workers: int,
    fresh: bool = False,
    decision_seconds: float | None = None,
    calibration: Any = None,
    clone: bool = False,
) -> FamilyEstimate:
    """Predictions for ``specs`` (the family's grid for ``profile``; see the module doc);
    ``fresh``: every job, as a fresh clone's ``make repro`` would run them;
    ``decision_seconds``: one LLM decision's time on the served model the profile names,
    measured now (its LLM jobs are then priced by their recorded decisions);
    ``calibration``: a :class:`memrl.calibrate.Calibration`, this machine's speed measured
    now, which scales the published timings where this store's runs do not; ``clone``: as a
    fresh clone prices it, from the timings git keeps alone (no run store read)."""
    from memrl import families
    from memrl.profiles import PROFILES
    from memrl.runtime import repo_root

    root = repo_root()

    fam = families.get(family)

    records = {p: [] if clone else read_records(root / fam.runs_dir(p)) for p in PROFILES}
    mine, elsewhere = on_this_cpu(records[profile])

    def published(p: str, field: str = "seconds_per_cost") -> dict[str, list[float]]:
        return read_timings(root / fam.timings_path(p), field)

    # another CPU's stored runs price as the published timings do (usually they are them)
    own, theirs = rates(mine), published(profile) | rates(elsewhere)
    scale = machine_scale(own, theirs)
    if scale is None and calibration is not None:
        scale = Scale(calibration.ratio, calibration.text)

    def scaled(rates_: dict[str, list[float]]) -> dict[str, list[float]]:
        return {g: [r * scale.factor for r in v] for g, v in rates_.items()} if scale else rates_

    sources = [("", own), (PUBLISHED, scaled(theirs))]
    for p in PROFILES:
        if p != profile:
            sources += [(p, rates(records[p])), (f"{p}, {PUBLISHED}", scaled(published(p)))]
    store = None if clone else RunStore(root / fam.runs_dir(profile))
    served, note = None, ""
    if decision_seconds is not None:
        counts = decision_rates(records[profile])
        for p in PROFILES:
            for g, v in published(p, "decisions_per_cost").items():
                counts.setdefault(g, v)
        served = (decision_seconds, counts)
        note = f"served model: {decision_seconds:.2f} s per decision, measured now" + (
            ""
            if counts
            else "; no run records its decisions yet, so its jobs are priced as in-process"
        )
    preds = predict(specs, store, sources, fresh, served)
    measured_on = (cpus(mine), cpus(elsewhere) or read_cpus(root / fam.timings_path(profile)))
    return FamilyEstimate(family, workers, preds, note, scale, measured_on, len(elsewhere))


def on_this_cpu(
    records: Sequence[dict[str, Any]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``records`` split into those made on this machine's CPU model (as runs record it) and
    the rest (another machine's, or an unrecorded one's)."""
    from memrl.isa import cpu_model

    cpu = cpu_model()
    mine = [r for r in records if record_cpu(r) == cpu]
    return mine, [r for r in records if record_cpu(r) != cpu]


def estimate_families(
    profile: str,
    configs: dict[str, Any],
    fresh: bool = False,
    calibration: Any = None,
    clone: bool = False,
) -> list[FamilyEstimate]:
    """:func:`estimate_family` for each family of ``configs`` (name -> its parameters for
    ``profile``), on the runtime's workers: what the CLI and ``make repro`` print."""
    from memrl import families
    from memrl.config import load_runtime

    workers = load_runtime().processes
    out = []
    for name, cfg in configs.items():
        fam = families.get(name)
        timed = getattr(fam.module("jobs"), "decision_seconds", None)
        seconds = timed(cfg) if timed is not None else None
        out.append(
            estimate_family(
                name,
                profile,
                fam.grid(cfg),
                workers,
                fresh,
                seconds,
                calibration=calibration,
                clone=clone,
            )
        )
    return out


def _duration(seconds: float) -> str:
    minutes = seconds / 60
    return f"{minutes:,.1f} min" if minutes < 120 else f"{minutes / 60:,.1f} h"


def render(
    estimates: Sequence[FamilyEstimate], profile: str, top: int = 6, fresh: bool = False
) -> str:
    """The estimate as text: one line per family, its costliest job groups, and the total."""
    from memrl.isa import cpu_model

    what = "every job (as on a fresh clone)" if fresh else "jobs not yet stored"
    lines = [
        f"profile {profile}: {what}, predicted from measured seconds (the stored runs', "
        f"else the published timings'); this machine: {cpu_model()}"
    ]
    total_cs = total_wall = 0.0
    for e in estimates:
        lines.append(f"\n{e.summary()}")
        for group, n, cs in e.groups()[:top]:
            lines.append(f"  {cs:9,.0f} core-s  {n:3d} x {group}")
        total_cs += e.core_seconds
        total_wall += e.wall_seconds
    lines.append(
        f"\ntotal: {total_cs:,.0f} core-s, {_duration(total_wall)} of job stages "
        "(families run one after another; notebook stages not included)"
    )
    return "\n".join(lines)
