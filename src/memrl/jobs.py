"""Jobs: the unit of work, the run store that keeps each job's result, and the executors.

A :class:`JobSpec` is one run — a top-level function named ``"module:function"``, its
keyword arguments (one configuration and one seed, JSON values only) and its expected cost.
Its :attr:`~JobSpec.key` is a stable hash of the function, the arguments and the
fingerprint of the code the job runs, so a result is reused exactly when rerunning it
would compute the same thing.

A :class:`RunStore` keeps one file per finished job, ``<key>.json`` holding the spec, the
result and its wall time, written atomically (plus the job's artefact files, if any, in
``<key>/``): an interrupted run leaves only whole results, and the next run skips them.

:func:`execute` runs the jobs a store lacks on a local process pool (default; one torch
thread per process) or on a Ray cluster (``executor="ray"``, ``RAY_ADDRESS`` to join one).
A job that raises is reported with its spec and traceback after the others have finished
and been stored. SIGINT/SIGTERM stop every worker this process started.

Nothing here knows about claims, plots or any family.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import math
import multiprocessing as mp
import os
import shutil
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memrl.runtime import atomic_write_json, progress_enabled, set_torch_threads

STORE_VERSION = 1


# =========================================================================== the spec
def _canonical(obj: Any) -> str:
    """Canonical JSON: sorted keys, no spaces, floats as Python writes them (round-trips)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=True)


def _check_json(value: Any, where: str) -> None:
    if value is None or isinstance(value, bool | int | str):
        return
    if isinstance(value, float):
        if math.isnan(value):
            raise TypeError(f"{where}: NaN is not a stable argument")
        return
    if isinstance(value, list | tuple):
        for i, v in enumerate(value):
            _check_json(v, f"{where}[{i}]")
        return
    if isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(f"{where}: keys must be strings, got {k!r}")
            _check_json(v, f"{where}.{k}")
        return
    raise TypeError(
        f"{where}: job arguments must be JSON values (None, bool, int, float, str, list, "
        f"dict), got {type(value).__name__}; pass a pydantic block as .model_dump()"
    )


@dataclass(frozen=True)
class JobSpec:
    """One run: ``fn(**kwargs)`` with its expected cost.

    :param fn: ``"package.module:function"``, a top-level function returning a dict of JSON
        values (optionally with ``"files": {name: str | bytes}``, artefacts kept beside it)
    :param kwargs: its keyword arguments, JSON values only (checked here, before any run)
    :param cost: expected core-seconds; the executor starts the most expensive jobs first
    :param code: fingerprint of the source the job runs (see :func:`code_fingerprint`)
    :param label: a short human-readable name for progress bars and error reports
    :param gpu: ask the executor for a GPU when the machine or cluster has one
    """

    fn: str
    kwargs: Mapping[str, Any] = field(default_factory=dict, hash=False)
    cost: float = 1.0
    code: str = ""
    label: str = ""
    gpu: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.fn, str) or ":" not in self.fn:
            raise ValueError(f"fn must be 'module:function', got {self.fn!r}")
        if not isinstance(self.kwargs, Mapping):
            raise TypeError(f"kwargs must be a mapping, got {type(self.kwargs).__name__}")
        _check_json(dict(self.kwargs), f"{self.fn} kwargs")
        # a frozen, canonical copy: later changes to the caller's dict cannot alter the key
        object.__setattr__(self, "kwargs", json.loads(_canonical(dict(self.kwargs))))

    @property
    def key(self) -> str:
        """A stable hash of the function, its arguments and the code fingerprint."""
        payload = _canonical({"fn": self.fn, "kwargs": self.kwargs, "code": self.code})
        return hashlib.sha256(payload.encode()).hexdigest()[:20]

    @property
    def name(self) -> str:
        return self.label or f"{self.fn.rsplit(':', 1)[1]}({_canonical(self.kwargs)[:80]})"

    def to_json(self) -> dict[str, Any]:
        return {"fn": self.fn, "kwargs": self.kwargs, "code": self.code, "cost": self.cost,
                "label": self.label, "gpu": self.gpu}  # fmt: skip


def resolve(fn: str) -> Callable[..., dict[str, Any]]:
    """The function a spec names (``"module:function"``)."""
    module, _, name = fn.partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as err:
        raise ValueError(f"cannot find job function {fn!r}: {err}") from None


def code_fingerprint(paths: Iterable[str | Path], root: str | Path) -> str:
    """A hash of the files' contents (sorted by path): a job's result is reused only while
    the code it runs is unchanged."""
    h = hashlib.sha256()
    root = Path(root)
    for rel in sorted(str(p) for p in paths):
        h.update(rel.encode() + b"\0" + (root / rel).read_bytes() + b"\0")
    return h.hexdigest()[:16]


# =========================================================================== running one job
def run_spec(spec: Mapping[str, Any], threads: int = 1) -> tuple[dict[str, Any], float]:
    """Run one job (a spec as JSON) in this process: (its result, seconds). Used by every
    executor, so a job runs the same way on a pool worker and on a Ray worker."""
    set_torch_threads(threads)
    fn = resolve(spec["fn"])
    start = time.perf_counter()
    result = fn(**spec["kwargs"])
    seconds = time.perf_counter() - start
    if not isinstance(result, dict):
        raise TypeError(f"{spec['fn']} returned {type(result).__name__}, not a dict")
    return result, seconds


# =========================================================================== the store
class MissingRunsError(FileNotFoundError):
    """Raised when results a caller needs are not in the store."""


class JobsFailed(RuntimeError):
    """Some jobs raised; the others' results are stored. ``failures``: (spec, traceback)."""

    def __init__(self, failures: Sequence[tuple[JobSpec, str]], total: int) -> None:
        self.failures = list(failures)
        lines = [f"{len(failures)} of {total} jobs failed (the other results are stored):"]
        for spec, tb in failures:
            lines += [f"--- {spec.name}", f"    fn={spec.fn} key={spec.key}",
                      f"    kwargs={_canonical(spec.kwargs)[:400]}", tb.rstrip()]  # fmt: skip
        super().__init__("\n".join(lines))


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
            "files": sorted(files),
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
        and the folder of its files (``files_dir``)."""
        return [
            {**r["result"], "seconds": r["seconds"], "files_dir": str(self.root / r["key"])}
            for r in self.records(specs)
        ]


# =========================================================================== executors
@dataclass
class Report:
    """What :func:`execute` did."""

    total: int
    skipped: int = 0
    ran: int = 0
    seconds: float = 0.0
    failures: list[tuple[JobSpec, str]] = field(default_factory=list)

    def __str__(self) -> str:
        return (
            f"{self.total} jobs: {self.skipped} already stored, {self.ran} run "
            f"({self.seconds:,.0f} core-s), {len(self.failures)} failed"
        )


def execute(
    specs: Sequence[JobSpec],
    store: RunStore,
    executor: str | None = None,
    workers: int = 2,
    threads: int = 1,
    desc: str = "jobs",
    raise_on_failure: bool = True,
) -> Report:
    """Run every job of ``specs`` whose result ``store`` lacks; store each as it finishes.

    :param executor: ``"process"`` (a local pool of ``workers`` processes) or ``"ray"``;
        default: ``$MEMRL_EXECUTOR`` or ``"process"``
    :param threads: torch/BLAS threads per job (1: small nets run fastest that way)
    """
    executor = executor or os.environ.get("MEMRL_EXECUTOR", "process")
    if executor not in EXECUTORS:
        raise ValueError(f"unknown executor {executor!r}; choose one of {sorted(EXECUTORS)}")
    keys = [s.key for s in specs]
    if len(set(keys)) != len(keys):
        raise ValueError("two jobs have the same spec (the grid repeats a configuration)")
    todo = sorted((s for s in specs if not store.has(s)), key=lambda s: -s.cost)
    report = Report(total=len(specs), skipped=len(specs) - len(todo))
    if todo:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(todo), desc=desc, disable=not progress_enabled())

        def done(spec: JobSpec, outcome: tuple[dict, float] | str) -> None:
            if isinstance(outcome, str):
                report.failures.append((spec, outcome))
            else:
                result, seconds = outcome
                store.save(spec, result, seconds)
                report.ran += 1
                report.seconds += seconds
            bar.update()

        try:
            EXECUTORS[executor](todo, done, workers, threads)
        finally:
            bar.close()
    if report.failures and raise_on_failure:
        raise JobsFailed(report.failures, len(specs))
    return report


def _in_process(spec: dict[str, Any], threads: int) -> tuple[dict, float] | str:
    try:
        return run_spec(spec, threads)
    except Exception:  # reported with its spec, the other jobs go on
        return traceback.format_exc()


def _worker_init() -> None:
    """Pool workers die with the parent (Linux: PR_SET_PDEATHSIG); each job sets its threads."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides; it then kills us
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        except OSError:
            pass
        if os.getppid() == 1:  # the parent died before we got here
            os._exit(1)


def _local(todo: list[JobSpec], done, workers: int, threads: int) -> None:
    if workers <= 1 or len(todo) == 1:
        for spec in todo:
            done(spec, _in_process(spec.to_json(), threads))
        return
    pool = ProcessPoolExecutor(
        max_workers=min(workers, len(todo)),
        mp_context=mp.get_context("spawn"),
        initializer=_worker_init,
    )
    pending = {}
    try:
        for spec in todo:
            pending[pool.submit(_in_process, spec.to_json(), threads)] = spec
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in finished:
                spec = pending.pop(fut)
                try:
                    outcome = fut.result()
                except Exception:  # the worker itself died (e.g. out of memory)
                    outcome = traceback.format_exc()
                done(spec, outcome)
    except BaseException:
        _kill_pool(pool)
        raise
    pool.shutdown(wait=True)


def _kill_pool(pool: ProcessPoolExecutor) -> None:
    """Stop a pool at once: cancel what has not started, terminate the running workers."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        if p.is_alive():
            p.terminate()
    for p in procs:
        p.join(timeout=5)
        if p.is_alive():
            p.kill()


def _ray(todo: list[JobSpec], done, workers: int, threads: int) -> None:
    """Run on Ray: ``RAY_ADDRESS`` joins an existing cluster, else a local instance with
    ``workers`` CPUs. Results come back to this process, which stores them."""
    try:
        import ray
    except ImportError:
        raise ImportError(
            "MEMRL_EXECUTOR=ray needs the ray package: pip install -e '.[ray]'"
        ) from None

    started = not ray.is_initialized()
    if started:
        address = os.environ.get("RAY_ADDRESS")
        if address:
            ray.init(address=address, log_to_driver=False)
        else:
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
    gpus = ray.cluster_resources().get("GPU", 0) > 0

    remote = ray.remote(_in_process)
    refs = {}
    try:
        for spec in todo:
            opts = {"num_cpus": threads, "num_gpus": 1 if spec.gpu and gpus else 0,
                    "max_retries": 0}  # fmt: skip
            refs[remote.options(**opts).remote(spec.to_json(), threads)] = spec
        while refs:
            ready, _ = ray.wait(list(refs), num_returns=1)
            spec = refs.pop(ready[0])
            try:
                outcome = ray.get(ready[0])
            except Exception:  # the task's worker died
                outcome = traceback.format_exc()
            done(spec, outcome)
    except BaseException:
        for ref in refs:
            ray.cancel(ref, force=True)
        raise
    finally:
        if started:
            ray.shutdown()


EXECUTORS: dict[str, Callable[..., None]] = {"process": _local, "ray": _ray}


# =========================================================================== clean interrupts
def raise_on_sigterm() -> None:
    """Turn SIGTERM into KeyboardInterrupt in this process, so ``kill`` cleans up like Ctrl-C:
    the executors stop their workers and no half-written result is left."""

    def handler(signum, frame):  # noqa: ARG001
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, handler)
