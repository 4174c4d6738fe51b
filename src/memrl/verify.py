"""``memrl verify``: rerun a sample of stored jobs here and compare them byte for byte.

How a user checks that published runs reproduce on their machine: :func:`sample` picks
jobs spread over the families and their job functions, the same ones on every machine (the
order is a hash of each job's key), :func:`verify` reruns each in a fresh process and
compares every stored field of its result with the store's, less what a clock measured
(fields ending in ``seconds`` or ``_ms``). Its verdict per job:

- ``identical``: every field equal (floats as their JSON text: the same bytes);
- ``differs``: the first field that differs, with both values and both runs' CPUs;
- ``stale``: the stored run was made by other code or kernels than this checkout's (its key
  is not the job's key here), so a difference would say nothing; rerun the profile first.

Jobs that time themselves alone (``JobSpec.alone``) are not sampled: their results are
clocks.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import zip_longest
from pathlib import Path
from typing import Any

from memrl.executors import execute
from memrl.jobs import JobSpec
from memrl.runs import RunStore, record_cpu


@dataclass
class Checked:
    """One job's outcome: ``status`` is identical, differs or stale."""

    spec: JobSpec
    status: str
    detail: str = ""

    def line(self) -> str:
        return f"{self.status:9s} {self.spec.name}" + (f": {self.detail}" if self.detail else "")


def computed(result: dict[str, Any]) -> dict[str, Any]:
    """A result less what a clock measured."""
    return {k: v for k, v in result.items() if not k.endswith(("seconds", "_ms"))}


def first_difference(a: Any, b: Any, where: str = "") -> str | None:
    """The path and values of the first place ``a`` and ``b`` differ, compared as canonical
    JSON (so 0.1 and 0.1000000001 differ, 1 and 1.0 do not), or None."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{where}.{k}: only in {'the store' if k in a else 'this run'}"
            if d := first_difference(a[k], b[k], f"{where}.{k}"):
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip_longest(a, b)):
            if d := first_difference(x, y, f"{where}[{i}]"):
                return d
        return None
    if json.dumps(a) != json.dumps(b):
        return f"{where.lstrip('.')}: {a!r} stored, {b!r} here"
    return None


def _rank(spec: JobSpec) -> str:
    return hashlib.sha256(f"verify:{spec.key}".encode()).hexdigest()


def _fn_rank(fn: str) -> str:
    return hashlib.sha256(f"verify:{fn}".encode()).hexdigest()


def sample(groups: Sequence[Sequence[JobSpec]], n: int) -> list[JobSpec]:
    """``n`` jobs spread over ``groups`` (one per family): within a family, round-robin over
    its job functions (in the order of their names' hashes); across families, round-robin;
    in each function, jobs by the hash of their key. The same jobs on every machine."""
    queues = []
    for specs in groups:
        by_fn: dict[str, list[JobSpec]] = {}
        for s in sorted((s for s in specs if not s.alone), key=_rank):
            by_fn.setdefault(s.fn, []).append(s)
        fns = [by_fn[f] for f in sorted(by_fn, key=_fn_rank)]
        queues.append([s for row in zip_longest(*fns) for s in row if s is not None])
    picked = [s for row in zip_longest(*queues) for s in row if s is not None]
    return picked[:n]


def verify(
    picked: Sequence[tuple[JobSpec, dict[str, Any]]], workers: int, progress: str = "verify"
) -> list[Checked]:
    """Rerun each (spec, stored record) whose key matches in a fresh process and compare."""
    out: dict[str, Checked] = {}
    fresh = []
    for spec, rec in picked:
        if rec.get("key") != spec.key:
            out[spec.key] = Checked(spec, "stale", "stored by other code or kernels")
        else:
            fresh.append(spec)
    with tempfile.TemporaryDirectory(prefix="memrl-verify-") as tmp:
        here = RunStore(Path(tmp))
        execute(fresh, here, "process", workers, desc=progress, raise_on_failure=True, fresh=True)
        for spec, rec in picked:
            if spec.key in out:
                continue
            new = here.load(spec) or {}
            diff = first_difference(computed(rec["result"]), computed(new.get("result", {})))
            if diff is None:
                out[spec.key] = Checked(spec, "identical", f"stored on {record_cpu(rec)}")
            else:
                where = f"store: {record_cpu(rec)}; here: {record_cpu(new)}"
                out[spec.key] = Checked(spec, "differs", f"{diff} ({where})")
    return [out[s.key] for s, _ in picked]


# =========================================================================== the verb
def stored(family: Any, profile: str) -> dict[str, dict[str, Any]]:
    """Every stored record of a family's profile, by the job's identity (function and
    arguments: a record stored by other code still names its job): the pipeline's store
    (the default and smoke profiles' are pulled from the in-repo DVC remote when absent)."""
    from memrl.runner import pipeline_store
    from memrl.runs import read_records

    store, _ = pipeline_store(family, profile)
    out: dict[str, dict[str, Any]] = {}
    for rec in read_records(store.root):
        out[identity(rec.get("spec") or {})] = rec
    return out


def identity(spec: dict[str, Any]) -> str:
    return json.dumps([spec.get("fn"), spec.get("kwargs")], sort_keys=True)


def compare_cached(
    picked: Sequence[tuple[JobSpec, dict[str, Any], dict[str, Any]]],
) -> list[Checked]:
    """Compare runs this machine already computed (the cache's) with the stored ones."""
    out = []
    for spec, rec, mine in picked:
        if rec.get("key") != spec.key:
            out.append(Checked(spec, "stale", "stored by other code or kernels"))
            continue
        diff = first_difference(computed(rec["result"]), computed(mine["result"]))
        where = f"store: {record_cpu(rec)}; here: {record_cpu(mine)}"
        detail = f"{diff} ({where})" if diff else f"stored on {record_cpu(rec)}"
        out.append(Checked(spec, "differs" if diff else "identical", detail))
    return out


def matching(specs: Sequence[JobSpec], jobs: Sequence[str]) -> list[JobSpec]:
    """The specs whose label contains any of ``jobs`` (case-insensitive); all if none."""
    if not jobs:
        return list(specs)
    wanted = [j.lower() for j in jobs]
    return [s for s in specs if any(w in s.name.lower() for w in wanted)]


def run(
    profile: str,
    names: Sequence[str],
    n: int,
    workers: int,
    cached: bool = False,
    jobs: Sequence[str] = (),
) -> int:
    """The verb: sample, rerun, print a line a job and a summary; 0 only if all identical.

    ``cached``: rerun nothing; compare every job this machine has already computed for the
    profile (the cache JupyterLab and nbval fill) with the store. ``jobs``: sample only the
    stored jobs whose label contains one of these (e.g. ``PPO-FFM``, ``stream Q``)."""
    from memrl import families, isa, runner
    from memrl.runner import PUBLISHED

    groups, records, mine = [], {}, {}
    any_stored = False
    for name in names or families.NAMES:
        fam = families.get(name)
        recs = stored(fam, profile)
        specs = fam.grid(families.load_family(fam.name, profile))
        specs = [s for s in specs if identity(s.to_json()) in recs]
        any_stored = any_stored or bool(specs)
        specs = matching(specs, jobs)
        records.update({s.key: recs[identity(s.to_json())] for s in specs})
        if cached:
            cache = runner.open_store(fam, profile)
            mine.update({s.key: r for s in specs if not s.alone and (r := cache.load(s))})
        groups.append(specs)
    if cached:
        picked = [s for specs in groups for s in specs if s.key in mine]
    else:
        picked = sample(groups, n)
    if any_stored and not records:
        print(
            f"memrl verify: no stored job of profile '{profile}' has a label containing "
            f"{' or '.join(repr(j) for j in jobs)}: `memrl list <family> --profile {profile}` "
            "lists the labels"
        )
        return 2
    if not records:
        pulled = " (pulled from the in-repo DVC remote when absent)" if profile in PUBLISHED else ""
        print(
            f"memrl verify: no stored runs of profile '{profile}' in results/{profile}/*/runs"
            f"{pulled} to compare with: `make repro PROFILE={profile}` makes them"
        )
        return 2
    if not picked and cached:
        where = ", ".join(f".cache/runs/{n}/{profile}/" for n in names or families.NAMES)
        print(
            f"memrl verify: nothing of profile '{profile}' computed here yet: --cached reads "
            f"the cache ({where}), which the family notebooks fill when they run on their "
            f"own and compute their jobs: `make nbval` (as `make test` does) or "
            f"`MEMRL_RECOMPUTE=1 make lab`; `make repro` fills the pipeline's store instead, "
            f"which `memrl verify --profile {profile}` (without --cached) reruns a sample of"
        )
        return 2
    cpu = isa.cpu_model()
    if cached:
        print(
            f"verify: {len(picked)} jobs of profile '{profile}' computed on {cpu}, against the store"
        )
        checked = compare_cached([(s, records[s.key], mine[s.key]) for s in picked])
    else:
        print(
            f"verify: {len(picked)} stored jobs of profile '{profile}', rerun here on {cpu}, "
            "each in a fresh process"
        )
        checked = verify([(s, records[s.key]) for s in picked], workers)
    for c in checked:
        print(c.line())
    counts = {k: sum(c.status == k for c in checked) for k in ("identical", "differs", "stale")}
    print(", ".join(f"{v} {k}" for k, v in counts.items()))
    if counts["stale"]:
        print(
            f"stale runs were made by other code or kernels: `make repro PROFILE={profile}` "
            "reruns them"
        )
    return 0 if counts["identical"] == len(checked) else 1
