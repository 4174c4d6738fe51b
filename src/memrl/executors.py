"""Run the jobs a store lacks: on a local process pool or on a Ray cluster.

:func:`execute` runs the jobs a :class:`~memrl.runs.RunStore` lacks on a local process pool
(default; one torch thread per process, ``runtime.workers`` processes: the machine's cores
unless set) or on a Ray cluster (``executor="ray"``, ``RAY_ADDRESS`` to join one), storing
each as it finishes. A job that raises is reported with its spec and traceback after the
others have finished and been stored. A job marked ``alone`` (a wall-clock measurement) runs
last, in this process, with no job beside it. SIGINT/SIGTERM stop every worker this process
started (:func:`raise_on_sigterm`).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import shutil
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from memrl import isa
from memrl.jobs import JobSpec, _canonical, resolve
from memrl.runs import CPU_FIELD, ISA_FIELD, RunStore
from memrl.runtime import progress_enabled, set_torch_threads, warm_up_blas


# =========================================================================== the terminal
class _Both:
    """A text stream writing to two: a kernel's stderr (the notebook) and its terminal."""

    def __init__(self, first: Any, second: Any) -> None:
        self.streams = (first, second)

    def write(self, text: str) -> int:
        for s in self.streams:
            s.write(text)
        return len(text)

    def flush(self) -> None:
        for s in self.streams:
            s.flush()


class _Fd:
    """Unbuffered text to a file descriptor: a kernel stopped at the end of a notebook keeps
    nothing back."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def write(self, text: str) -> int:
        os.write(self.fd, text.encode("utf-8", "replace"))
        return len(text)

    def flush(self) -> None:
        pass


_TERMINAL: list[Any] = []


def terminal() -> Any:
    """Where progress goes: stderr, and in a Jupyter kernel (papermill, JupyterLab, nbconvert)
    also the terminal that started it, where ipykernel keeps the process's own stderr (its
    ``fileno()``): a notebook's cell shows the last state of a bar, the terminal its every
    update, instead of papermill's cell counter alone."""
    err = sys.stderr
    if not type(err).__module__.startswith("ipykernel"):
        return err
    if not _TERMINAL:
        try:  # ipykernel's copy of the terminal's stderr, when it captures fd 2 (its default)
            _TERMINAL.append(_Fd(err.fileno()))
        except (OSError, ValueError, AttributeError):  # else fd 2 is the terminal still
            if sys.__stderr__ is None:
                return err
            _TERMINAL.append(_Fd(sys.__stderr__.fileno()))
    return _Both(err, _TERMINAL[0])


def say(text: str) -> None:
    """Print ``text`` (a notebook's output) and, in a kernel, in its terminal too."""
    print(text, file=sys.stdout, flush=True)
    out = terminal()
    if isinstance(out, _Both):
        out.streams[1].write(text + "\n")


# =========================================================================== running one job
def run_spec(spec: Mapping[str, Any], threads: int = 1) -> tuple[dict[str, Any], float]:
    """Run one job (a spec as JSON) in this process: (its result, wall seconds). Used by every
    executor, so a job runs the same way on a pool worker and on a Ray worker. The kernels it
    computes with are checked first (:func:`memrl.isa.check`) and kept with the result, as is
    the CPU time the job's process used (what prices it: :func:`memrl.runs.core_seconds`)."""
    set_torch_threads(threads)  # torch and numpy are loaded: check() sees both
    warm_up_blas()
    kernels = isa.check()
    if spec.get("engine"):  # XLA pinned before jax loads (memrl.engines.pin)
        from memrl.engines import pin

        pin.pin()
    fn = resolve(spec["fn"])
    start, cpu = time.perf_counter(), time.process_time()
    result = fn(**spec["kwargs"])
    if spec.get("engine"):
        kernels["engine"] = pin.check()
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    if not isinstance(result, dict):
        raise TypeError(f"{spec['fn']} returned {type(result).__name__}, not a dict")
    return {**result, ISA_FIELD: kernels, CPU_FIELD: round(cpu, 3)}, seconds


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


# =========================================================================== executors
@dataclass
class Executed:
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
    fresh: bool = False,
) -> Executed:
    """Run every job of ``specs`` whose result ``store`` lacks; store each as it finishes.

    :param executor: ``"process"`` (a local pool of ``workers`` processes) or ``"ray"``;
        default: ``$MEMRL_EXECUTOR`` or ``"process"``
    :param threads: torch/BLAS threads per job (1: small nets run fastest that way)
    :param fresh: each job in a process of its own (local pool; ``memrl verify``)
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
    report = Executed(total=len(specs), skipped=len(specs) - len(todo))
    if todo:
        # a text bar, also in a notebook: a saved notebook keeps its last state (a widget
        # would keep the "0/N" it was first drawn with)
        from tqdm.std import tqdm

        bar = tqdm(total=len(todo), desc=desc, disable=not progress_enabled(), file=terminal())

        def done(spec: JobSpec, outcome: tuple[dict, float] | str) -> None:
            if isinstance(outcome, str):
                report.failures.append((spec, outcome))
            else:
                result, seconds = outcome
                report.seconds += result.get(CPU_FIELD, seconds)
                store.save(spec, result, seconds)
                report.ran += 1
            bar.update()

        try:
            if shared := [s for s in todo if not s.alone]:
                extra = {"fresh": True} if fresh and executor == "process" else {}
                EXECUTORS[executor](shared, done, workers, threads, **extra)
            for spec in (s for s in todo if s.alone):  # timings: here, once the others are done
                done(spec, _in_process(spec.to_json(), threads))
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


def _local(todo: list[JobSpec], done, workers: int, threads: int, fresh: bool = False) -> None:
    if (workers <= 1 or len(todo) == 1) and not fresh:
        for spec in todo:
            done(spec, _in_process(spec.to_json(), threads))
        return
    pool = ProcessPoolExecutor(
        max_workers=max(1, min(workers, len(todo))),
        mp_context=mp.get_context("spawn"),
        initializer=_worker_init,
        max_tasks_per_child=1 if fresh else None,
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
