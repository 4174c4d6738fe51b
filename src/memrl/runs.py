"""The run store: one file per finished job, and the speed of what it holds.

A :class:`RunStore` keeps one file per finished job, ``<key>.json`` holding the spec, the
result, its wall time and the CPU time its process used (what prices it:
:func:`core_seconds`), written atomically (plus the job's artefact files, if any, in
``<key>/``): an interrupted run leaves only whole results, and the next run skips them.
:func:`timings` is a store's speed in the form kept in git (``timings.json``), what a fresh
clone's estimate prices from.

Running jobs is :mod:`memrl.executors`'s; which jobs a family has is :mod:`memrl.families`'s.
This module knows neither.
"""

from __future__ import annotations

import json
import re
import shutil
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from memrl.jobs import JobSpec
from memrl.runtime import atomic_write_json, atomic_write_text, repo_root

STORE_VERSION = 1
ISA_FIELD = "_isa"  # run_spec's note of the kernels a job ran with; the store files it apart
CPU_FIELD = "_cpu_seconds"  # run_spec's CPU time of the job's process; filed apart too


# =========================================================================== the store
class MissingRunsError(FileNotFoundError):
    """Raised when results a caller needs are not in the store."""


class RunStore:
    """One folder, one ``<key>.json`` per finished job (+ ``<key>/`` for its files).

    :param root: the folder (created on first write)
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def path(self, spec: JobSpec) -> Path:
        return self.root / f"{spec.key}.json"

    def has(self, spec: JobSpec) -> bool:
        return self.load(spec) is not None

    def load(self, spec: JobSpec) -> dict[str, Any] | None:
        """The stored record ({spec, result, seconds, ...}) or None (missing or unreadable)."""
        try:
            rec = json.loads(self.path(spec).read_text())
        except (OSError, ValueError):
            return None
        if rec.get("version") != STORE_VERSION or rec.get("key") != spec.key:
            return None
        return rec

    def save(self, spec: JobSpec, result: dict[str, Any], seconds: float) -> Path:
        """Store a result atomically: its files first, the record last (the commit mark)."""
        result = dict(result)
        kernels = result.pop(ISA_FIELD, None)
        cpu = result.pop(CPU_FIELD, None)
        files = result.pop("files", None) or {}
        if files:
            tmp_dir = self.root / f".{spec.key}.files.tmp"
            shutil.rmtree(tmp_dir, ignore_errors=True)
            tmp_dir.mkdir(parents=True)
            for name, content in files.items():
                target = tmp_dir / name
                target.write_bytes(content if isinstance(content, bytes) else content.encode())
            final = self.root / spec.key
            shutil.rmtree(final, ignore_errors=True)
            tmp_dir.rename(final)
        record = {
            "version": STORE_VERSION,
            "key": spec.key,
            "spec": spec.to_json(),
            "seconds": seconds,
            **({"cpu_seconds": cpu} if cpu is not None else {}),
            "files": sorted(files),
            "isa": kernels,
            "result": result,
        }
        path = self.path(spec)
        atomic_write_json(path, record)
        return path

    def keys(self) -> set[str]:
        """Keys of the stored results (the manifest is not one)."""
        return {p.stem for p in self.root.glob("[!.]*.json")} - {"manifest"}

    def prune(self, keep: Iterable[JobSpec]) -> list[str]:
        """Remove results not in ``keep`` and leftovers of interrupted writes (``.*``)."""
        wanted = {s.key for s in keep}
        gone = []
        for p in sorted(self.root.iterdir()) if self.root.is_dir() else []:
            key = p.name.split(".")[0]
            if p.name == "manifest.json" or (key in wanted and not p.name.startswith(".")):
                continue
            if p.is_dir():
                shutil.rmtree(p)
            else:
                p.unlink()
            gone.append(p.name)
        return gone

    def write_manifest(self, specs: Sequence[JobSpec], meta: Mapping[str, Any]) -> None:
        """``manifest.json``: the jobs of the grid, in order, and what they were run for."""
        atomic_write_json(
            self.root / "manifest.json",
            {**meta, "jobs": [{"key": s.key, "label": s.label} for s in specs]},
        )

    def manifest(self) -> dict[str, Any]:
        path = self.root / "manifest.json"
        if not path.is_file():
            raise MissingRunsError(f"no stored runs in {self.root} (no manifest.json)")
        return json.loads(path.read_text())

    def records(self, specs: Sequence[JobSpec] | None = None) -> list[dict[str, Any]]:
        """Every record of ``specs`` (default: the manifest's jobs), in order; a clear error
        names the missing ones."""
        if specs is None:
            keys = [j["key"] for j in self.manifest()["jobs"]]
            labels = [j["label"] for j in self.manifest()["jobs"]]
        else:
            keys, labels = [s.key for s in specs], [s.name for s in specs]
        out, missing = [], []
        for key, label in zip(keys, labels, strict=True):
            try:
                out.append(json.loads((self.root / f"{key}.json").read_text()))
            except (OSError, ValueError):
                missing.append(label)
        if missing:
            raise MissingRunsError(
                f"{len(missing)} of {len(keys)} runs missing in {self.root}: "
                + ", ".join(missing[:5])
                + (" ..." if len(missing) > 5 else "")
            )
        return out

    def results(self, specs: Sequence[JobSpec] | None = None) -> list[dict[str, Any]]:
        """The results of ``specs`` (default: the manifest's), each with its wall ``seconds``
        and the folder of its files (``files_dir``: relative to the project root when the
        store is in it, so published tables hold no machine's paths)."""
        return [
            {**r["result"], "seconds": r["seconds"], "files_dir": _portable(self.root / r["key"])}
            for r in self.records(specs)
        ]


def _portable(path: Path) -> str:
    """``path`` relative to the project root if it lies in it, else as given."""
    try:
        return str(path.resolve().relative_to(repo_root()))
    except (ValueError, FileNotFoundError):  # outside the project, or no project
        return str(path)


# =========================================================================== timings
_SEED = re.compile(r" · (seed|run) \d+$")


def job_group(label: str) -> str:
    """A job's label without its seed or run number: the unit its speed is calibrated on."""
    return _SEED.sub("", label)


def core_seconds(rec: Mapping[str, Any]) -> float | None:
    """What a stored job cost a core: the CPU time its process used (``cpu_seconds``), else,
    in records older than that field, its wall ``seconds``.

    Wall time counts whatever else shared the cores: measured here, MFEC on SpaceInvaders
    took 165-187 s a job while a third process ran beside the two workers and 74-95 s on an
    otherwise idle machine (``docs/history.md``, 2026-11-26). CPU time does not count another
    process's work either, such as a served LLM's: a served job is priced by its decisions
    (:func:`decision_rates`), not by this."""
    for field in ("cpu_seconds", "seconds"):
        value = rec.get(field)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return None


def rates(records: Iterable[dict[str, Any]]) -> dict[str, list[float]]:
    """Core-seconds (:func:`core_seconds`) per unit of declared cost, by job group, of stored
    records."""
    out: dict[str, list[float]] = defaultdict(list)
    for rec in records:
        spec, seconds = rec.get("spec") or {}, core_seconds(rec)
        cost, label = spec.get("cost"), spec.get("label")
        if not label or seconds is None or not cost or cost <= 0:
            continue
        out[job_group(label)].append(seconds / float(cost))
    return out


def decision_rates(records: Iterable[dict[str, Any]]) -> dict[str, list[float]]:
    """LLM decisions per unit of declared cost, by job group, of the records whose result
    says how many decisions the job made (``result["llm"]["decisions"]``)."""
    out: dict[str, list[float]] = defaultdict(list)
    for rec in records:
        spec, used = rec.get("spec") or {}, (rec.get("result") or {}).get("llm") or {}
        cost, label, n = spec.get("cost"), spec.get("label"), used.get("decisions")
        if label and cost and cost > 0 and isinstance(n, int) and n > 0:
            out[job_group(label)].append(n / float(cost))
    return out


def timings(records: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """A store's speed in the form kept in git: per job group, its jobs, their core-seconds
    and the median seconds per unit of declared cost (what :func:`predict` prices from), and
    for LLM jobs the median decisions per unit of cost (what a served model is priced by)."""
    records = list(records)
    seconds: dict[str, float] = defaultdict(float)
    for rec in records:
        label, used = (rec.get("spec") or {}).get("label"), core_seconds(rec)
        if label and used is not None:
            seconds[job_group(label)] += used
    decisions = decision_rates(records)
    groups = {
        g: {
            "jobs": len(r),
            "core_seconds": round(seconds[g], 1),
            "seconds_per_cost": float(f"{statistics.median(r):.4g}"),
        }
        | (
            {"decisions_per_cost": float(f"{statistics.median(decisions[g]):.4g}")}
            if decisions.get(g)
            else {}
        )
        for g, r in sorted(rates(records).items())
    }
    return {"groups": groups, "cpus": cpus(records)}


def record_cpu(rec: Mapping[str, Any]) -> str:
    """The CPU model a stored record was computed on (its ``isa.cpu``), or "an unrecorded
    CPU" for a record older than that field."""
    return (rec.get("isa") or {}).get("cpu") or "an unrecorded CPU"


def cpus(records: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """``{CPU model: jobs}`` of stored records (:func:`record_cpu`): prices from different
    machines do not compare, so a price names the machine its seconds were measured on."""
    seen = Counter(record_cpu(rec) for rec in records)
    return dict(sorted(seen.items()))


def machines(cpus: Mapping[str, int]) -> str:
    """``{model: jobs}`` as a phrase: ``AMD EPYC 7B13`` or ``AMD EPYC (40 jobs), ... (3)``."""
    if len(cpus) == 1:
        return next(iter(cpus))
    return ", ".join(f"{m} ({n} jobs)" for m, n in sorted(cpus.items(), key=lambda x: -x[1]))


def write_timings(path: str | Path, records: Sequence[dict[str, Any]]) -> None:
    """Write :func:`timings` of ``records`` to ``path`` (atomically, stable bytes)."""
    atomic_write_text(
        path, json.dumps(timings(records), indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    )


def read_timings(path: str | Path, field: str = "seconds_per_cost") -> dict[str, list[float]]:
    """Published rates (:func:`write_timings`) as :func:`rates` gives them (``field``:
    ``"decisions_per_cost"`` as :func:`decision_rates` gives them, for the groups that have
    it); ``{}`` when the file is missing or unreadable (the estimate then falls back, it
    never fails)."""
    try:
        groups = json.loads(Path(path).read_text())["groups"]
        return {g: [float(v[field])] for g, v in groups.items() if field in v}
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def read_cpus(path: str | Path) -> dict[str, int]:
    """The CPU models the published timings (:func:`write_timings`) were measured on, with
    their jobs; ``{}`` when the file is missing, unreadable or older than that field."""
    try:
        return {str(k): int(v) for k, v in json.loads(Path(path).read_text())["cpus"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def read_records(folder: str | Path) -> list[dict[str, Any]]:
    """Every readable run record in a store folder (stale ones too: their speed still counts)."""
    store, out = RunStore(folder), []
    for key in sorted(store.keys()):
        try:
            out.append(json.loads((store.root / f"{key}.json").read_text()))
        except (OSError, ValueError):
            continue
    return out
