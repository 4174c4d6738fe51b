"""Job functions for tests/test_jobs.py (top-level, so spawned workers can import them)."""

import os
import time
from pathlib import Path


def square(x: int) -> dict:
    return {"x": x, "y": x * x}


def fail_on(x: int, bad: int) -> dict:
    if x == bad:
        raise ValueError(f"job {x} is broken")
    return {"x": x}


def with_files(x: int) -> dict:
    return {"x": x, "files": {"note.txt": f"job {x}", "raw.bin": bytes([x, 0, 255])}}


def slow(x: int, seconds: float, log_dir: str) -> dict:
    """Sleeps; leaves ``<x>-<pid>.pid`` in ``log_dir`` (the interrupt test reads it)."""
    Path(log_dir, f"{x}-{os.getpid()}.pid").write_text(str(x))
    time.sleep(seconds)
    return {"x": x}


def window(x: int, seconds: float) -> dict:
    """Sleeps; returns when it ran and in which process (the ``alone`` test reads them)."""
    start = time.time()
    time.sleep(seconds)
    return {"x": x, "start": start, "end": time.time(), "pid": os.getpid()}


def noisy(x: int) -> dict:
    """A product on the routed kernels, a float result and a clock (what verify skips)."""
    import torch

    g = torch.Generator().manual_seed(x)
    a = torch.randn(32, 17, generator=g)
    return {"x": x, "value": float((a @ a.T).sum()), "lookup_seconds": time.perf_counter()}


def pid(x: int) -> dict:
    return {"x": x, "pid": os.getpid()}
