"""Device, threads, cores, seeding, caches and atomic writes."""

from __future__ import annotations

import functools
import json
import os
import random
import shutil
import tempfile
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from memrl import isa

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


def cache_dir() -> Path:
    """Where models, converted weights and interactive runs are kept: ``$MEMRL_CACHE``, else
    ``<repo>/.cache`` (the repo root is looked up only when the variable is unset)."""
    env = os.environ.get("MEMRL_CACHE")
    return Path(env) if env else repo_root() / ".cache"


def available_cores() -> int:
    """The cores this process may use (its CPU affinity where the OS tells it, else the
    machine's count): what ``runtime.workers: auto`` runs that many jobs at a time on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


def get_device(device: str = "auto") -> str:
    """``cuda`` when present (or asked for), else ``cpu``."""
    import torch as th

    if device == "auto":
        return "cuda" if th.cuda.is_available() else "cpu"
    return device


def set_torch_threads(n: int = 1) -> None:
    """Limit torch and numpy's BLAS to ``n`` threads in this process, with the pinned
    instruction set's convolutions (:mod:`memrl.isa`).

    Small networks and kNN searches on CPU run several times faster on one
    thread per process, with the other core running another seed.
    """
    import torch as th
    from threadpoolctl import threadpool_limits

    th.set_num_threads(n)
    threadpool_limits(limits=n)  # stays in effect: no context manager
    # oneDNN and NNPACK pick kernels and blocks by the CPU (its caches); off, convolutions
    # run as matrix products on MKL's pinned branch, like every linear layer (memrl.isa)
    native = isa.level() == "native"
    th.backends.mkldnn.enabled = native
    th.backends.nnpack.set_flags(native)
    if isa.products() == "openblas":  # products off MKL: one code path on every vendor
        from memrl.openblas import route

        route()


@functools.cache
def warm_up_blas() -> None:
    """One product of inner dimension 300 on numpy's OpenBLAS: in a fresh process OpenBLAS
    runs products of inner dimension >= 256 (a weight gradient over 512 rows among them)
    1.2-3.6x slower until one above 256 has run, with the same bytes before and after
    (``benchmarks/rnn_cells.py``, ``tests/test_runtime.py``). The executors call it before
    each job, and it runs once a process; jobs do not (it changes no result, so it is in no
    job's key)."""
    np.ones((256, 300), np.float32) @ np.ones((300, 256), np.float32)


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


@contextmanager
def atomic_dir(path: str | Path):
    """Yield an empty temporary folder beside ``path``; on success it replaces ``path``
    whole, so an interrupted build leaves the old folder or none, never half of one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}."))
    tmp.chmod(0o777 & ~_umask())
    try:
        yield tmp
        if path.exists():
            shutil.rmtree(path)
        tmp.rename(path)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)


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


def publish(staging: Path, out: Path) -> None:
    """Move every entry of ``staging`` over its namesake in ``out`` (folders swapped whole):
    readers see the old outputs or the new ones, never half of each."""
    for src in sorted(staging.iterdir()):
        dst = out / src.name
        if src.is_dir():
            old = out / f".{src.name}.old"
            shutil.rmtree(old, ignore_errors=True)
            if dst.exists():
                dst.rename(old)
            src.rename(dst)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(src, dst)
