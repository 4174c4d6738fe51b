"""Device, threads, seeding, atomic writes and parallel seeds."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import random
import tempfile
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@cache
def repo_root() -> Path:
    """The project root: the nearest parent holding ``params.yaml`` and ``dvc.yaml``.

    Notebooks run from ``notebooks/`` (nbval) or the root (papermill); both find it.
    """
    env = os.environ.get("MEMRL_ROOT")
    if env:
        return Path(env).resolve()
    for start in (Path.cwd(), Path(__file__).resolve().parent):
        for cand in (start, *start.parents):
            if (cand / "params.yaml").is_file() and (cand / "dvc.yaml").is_file():
                return cand
    raise FileNotFoundError("cannot find the memrl project root (params.yaml + dvc.yaml)")


def get_device(device: str = "auto") -> str:
    """``cuda`` when present (or asked for), else ``cpu``."""
    import torch as th

    if device == "auto":
        return "cuda" if th.cuda.is_available() else "cpu"
    return device


def set_torch_threads(n: int = 1) -> None:
    """Limit torch and numpy's BLAS to ``n`` threads in this process.

    Small networks and kNN searches on CPU run several times faster on one
    thread per process, with the other core running another seed.
    """
    import torch as th
    from threadpoolctl import threadpool_limits

    th.set_num_threads(n)
    threadpool_limits(limits=n)  # stays in effect: no context manager


def seed_everything(seed: int) -> None:
    import torch as th

    random.seed(seed)
    np.random.seed(seed)
    th.manual_seed(seed)


def progress_enabled() -> bool:
    """Progress bars unless ``MEMRL_PROGRESS=0`` (set under nbval and CI)."""
    return os.environ.get("MEMRL_PROGRESS", "1") not in ("0", "false", "False")


# --------------------------------------------------------------------------- atomic output
@contextmanager
def atomic_path(path: str | Path):
    """Yield a temporary path beside ``path``; rename it over ``path`` only on success."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    os.chmod(tmp, 0o666 & ~_umask())
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_text(path: str | Path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def atomic_write_json(path: str | Path, obj: Any) -> None:
    atomic_write_text(
        path, json.dumps(obj, indent=2, sort_keys=False, default=_json_default) + "\n"
    )


def _json_default(o: Any) -> Any:
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o)}")


# --------------------------------------------------------------------------- parallel seeds
def _init_worker(threads: int) -> None:
    set_torch_threads(threads)


def _call(job: tuple[Callable[..., Any], dict[str, Any]]) -> Any:
    fn, kwargs = job
    return fn(**kwargs)


def run_jobs(
    fn: Callable[..., Any],
    jobs: Iterable[dict[str, Any]],
    workers: int = 2,
    threads: int = 1,
    desc: str = "runs",
) -> list[Any]:
    """Run ``fn(**kw)`` for each ``kw`` in ``jobs``, ``workers`` processes at once.

    Results come back in job order, so the outcome never depends on scheduling;
    each job seeds itself from its own arguments.
    """
    from tqdm.auto import tqdm

    jobs = list(jobs)
    bar = tqdm(total=len(jobs), desc=desc, disable=not progress_enabled(), leave=False)
    results: list[Any] = [None] * len(jobs)
    if workers <= 1 or len(jobs) <= 1:
        _init_worker(threads)
        for i, kw in enumerate(jobs):
            results[i] = fn(**kw)
            bar.update()
    else:
        ctx = mp.get_context("spawn")
        with ProcessPoolExecutor(
            max_workers=min(workers, len(jobs)),
            mp_context=ctx,
            initializer=_init_worker,
            initargs=(threads,),
        ) as pool:
            futures = {pool.submit(_call, (fn, kw)): i for i, kw in enumerate(jobs)}
            for fut in as_completed(futures):
                results[futures[fut]] = fut.result()
                bar.update()
    bar.close()
    return results
