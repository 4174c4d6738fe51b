"""Run jobs, store their results, load them back.

A :class:`RunStore` keeps one file per finished job, ``<key>.json`` holding the spec, the
result and its wall time, written atomically (plus the job's artefact files, if any, in
``<key>/``): an interrupted run leaves only whole results, and the next run skips them.

:func:`execute` runs the jobs a store lacks on a local process pool (default; one torch
thread per process, ``runtime.workers`` processes: the machine's cores unless set) or on a
Ray cluster (``executor="ray"``, ``RAY_ADDRESS`` to join one). A job that raises is reported
with its spec and traceback after the others have finished and been stored. SIGINT/SIGTERM
stop every worker this process started.

:func:`run_family` runs one family's grid for a profile into a store; :func:`load_results`
is what notebooks and the site read runs through. Nothing here knows about claims or plots,
and nothing here imports the pipeline.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing as mp
import os
import shutil
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memrl import families, isa
from memrl.config import ConfigError, load_family, load_runtime, parse_overrides
from memrl.jobs import JobSpec, _canonical, resolve
from memrl.runtime import (
    atomic_write_json,
    cache_dir,
    progress_enabled,
    repo_root,
    set_torch_threads,
)

STORE_VERSION = 1
ISA_FIELD = "_isa"  # run_spec's note of the kernels a job ran with; the store files it apart


# =========================================================================== running one job
def run_spec(spec: Mapping[str, Any], threads: int = 1) -> tuple[dict[str, Any], float]:
    """Run one job (a spec as JSON) in this process: (its result, seconds). Used by every
    executor, so a job runs the same way on a pool worker and on a Ray worker. The kernels it
    computes with are checked first (:func:`memrl.isa.check`) and kept with the result."""
    set_torch_threads(threads)  # torch and numpy are loaded: check() sees both
    kernels = isa.check()
    fn = resolve(spec["fn"])
    start = time.perf_counter()
    result = fn(**spec["kwargs"])
    seconds = time.perf_counter() - start
    if not isinstance(result, dict):
        raise TypeError(f"{spec['fn']} returned {type(result).__name__}, not a dict")
    return {**result, ISA_FIELD: kernels}, seconds


# =========================================================================== the store
class MissingRunsError(FileNotFoundError):
    """Raised when results a caller needs are not in the store."""


class JobsFailed(RuntimeError):
    """Some jobs raised; the others' results are stored. ``failures``: (spec, traceback)."""

    def __init__(self, failures: Sequence[tuple[JobSpec, str]], total: int) -> None:
        self.failures = list(failures)
        lines = [f"{len(failures)} of {total} jobs failed (the other results are stored):"]
        for spec, tb in failures:
            lines += [
                f"--- {spec.name}",
                f"    fn={spec.fn} key={spec.key}",
                f"    kwargs={_canonical(spec.kwargs)[:400]}",
                tb.rstrip(),
            ]
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
        result = dict(result)
        kernels = result.pop(ISA_FIELD, None)
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
    corrupt = [s for s in todo if store.path(s).exists()]  # there, but not a whole record
    if corrupt:
        print(
            f"{desc}: {len(corrupt)} stored result(s) unreadable or from another store version "
            f"(e.g. {store.path(corrupt[0]).name}): rerunning them",
            file=sys.stderr,
        )
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
    # Ray's workers may load numpy before a job imports memrl: they start pinned instead
    pinned = {"env_vars": isa.environment()}
    session = None  # a local instance's session folder: ours, removed when it stops
    if started:
        address = os.environ.get("RAY_ADDRESS")
        if address:
            ray.init(address=address, log_to_driver=False, runtime_env=pinned)
        else:
            session = tempfile.mkdtemp(prefix="memrl-ray-")
            ray.init(
                num_cpus=workers,
                include_dashboard=False,
                log_to_driver=False,
                _temp_dir=session,
                runtime_env=pinned,
            )
    gpus = ray.cluster_resources().get("GPU", 0) > 0

    remote = ray.remote(_in_process)
    refs = {}
    try:
        for spec in todo:
            opts = {
                "num_cpus": threads,
                "num_gpus": 1 if spec.gpu and gpus else 0,
                "max_retries": 0,
            }
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
        if session is not None:
            shutil.rmtree(session, ignore_errors=True)


EXECUTORS: dict[str, Callable[..., None]] = {"process": _local, "ray": _ray}


# =========================================================================== clean interrupts
def raise_on_sigterm() -> None:
    """Turn SIGTERM into KeyboardInterrupt in this process, so ``kill`` cleans up like Ctrl-C:
    the executors stop their workers and no half-written result is left."""

    def handler(signum, frame):  # noqa: ARG001
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, handler)


# =========================================================================== a family's runs
def run_family(
    family: str,
    profile: str = "default",
    store_dir: str | Path | None = None,
    executor: str | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Report:
    """Run the family's jobs for ``profile`` (with ``overrides``) into ``store_dir`` (default:
    the profile's run store), skipping stored ones; then prune stale results and write the
    manifest."""
    fam = families.get(family)
    cfg = load_family(family, profile, overrides=overrides)
    rt = load_runtime()
    fam.preflight(cfg)  # e.g. a missing model or data set fails here, before any job
    specs = fam.grid(cfg)
    store = RunStore(store_dir if store_dir is not None else repo_root() / fam.runs_dir(profile))
    store.root.mkdir(parents=True, exist_ok=True)
    (store.root / "manifest.json").unlink(missing_ok=True)  # written again once all are in
    if store_dir is None:  # what this stage is about to run, priced from the stored runs
        from memrl.estimate import estimate_family

        priced = estimate_family(family, profile, specs, rt.processes)
        if priced.todo:  # with nothing to run, the executor's own count says so
            print(priced.summary(), flush=True)
    report = execute(specs, store, executor, rt.processes, rt.torch_threads, desc=family)
    store.prune(specs)
    store.write_manifest(
        specs,
        {"family": family, "profile": profile, "params": families.params_fingerprint(cfg)},
    )
    if store_dir is None:  # the speed of these runs, in git: a fresh clone's estimate
        from memrl.estimate import write_timings

        write_timings(repo_root() / fam.timings_path(profile), store.records(specs))
    return report


def load_results(
    family: str,
    profile: str,
    runs_dir: str = "",
    overrides: Mapping[str, Any] | str | None = None,
) -> list[dict[str, Any]]:
    """The family's stored results for ``profile``.

    With ``runs_dir`` (what the DVC stage passes: the profile's run store), read it and check
    it was made for these parameters. Without it (JupyterLab, nbval), run the jobs into a
    cache store first (one per profile and overrides): stored ones are reused, missing ones run.
    """
    overrides = parse_overrides(overrides)
    if not runs_dir:
        name = profile
        if overrides:
            text = json.dumps(overrides, sort_keys=True, default=str)
            name += "+" + hashlib.sha256(text.encode()).hexdigest()[:8]
        store_dir = cache_dir() / "runs" / family / name
        run_family(family, profile, store_dir, overrides=overrides)
        return RunStore(store_dir).results()
    if overrides:
        raise ConfigError(
            "overrides change the runs made here; stored runs (runs_dir) were made with "
            "params.yaml's values: leave runs_dir empty to run the overridden jobs"
        )
    fam = families.get(family)
    cfg = load_family(family, profile)
    store = RunStore(Path(runs_dir) if Path(runs_dir).is_absolute() else repo_root() / runs_dir)
    man = store.manifest()
    if man.get("profile") != profile or man.get("params") != families.params_fingerprint(cfg):
        raise MissingRunsError(
            f"the runs in {store.root} were made for profile '{man.get('profile')}' with other "
            f"parameters than profile '{profile}' has now: run "
            f"`python -m memrl repro --profile {profile}` (or `python -m memrl runs "
            f"{fam.name} --profile {profile}`)"
        )
    try:
        return store.results()
    except MissingRunsError as err:  # a run file lost or corrupt since the runs stage
        raise MissingRunsError(
            f"{err}: `python -m memrl runs {fam.name} --profile {profile}` runs them again"
        ) from None
