"""Jobs: the unit of work.

A :class:`JobSpec` is one run — a top-level function named ``"module:function"``, its
keyword arguments (one configuration and one seed, JSON values only) and its expected cost.
Its :attr:`~JobSpec.key` is a stable hash of the function, the arguments, the fingerprint of
the code the job runs and the pinned instruction set, so a result is reused exactly when
rerunning it would compute the same thing.

Running, storing and loading jobs is :mod:`memrl.runs`; the fingerprint is
:mod:`memrl.fingerprint`. Nothing here knows about claims, plots or any family.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from memrl import isa


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


ENGINES = ("", "xla")  # "" = the torch/numpy agents; "xla" = memrl.engines (JAX)


@functools.cache
def _device() -> str:
    """Where this machine's jobs run their torch work (:func:`memrl.runtime.get_device`),
    asked once a process."""
    from memrl.runtime import get_device

    return get_device()


@dataclass(frozen=True)
class JobSpec:
    """One run: ``fn(**kwargs)`` with its expected cost.

    :param fn: ``"package.module:function"``, a top-level function returning a dict of JSON
        values (optionally with ``"files": {name: str | bytes}``, artefacts kept beside it)
    :param kwargs: its keyword arguments, JSON values only (checked here, before any run)
    :param cost: expected core-seconds; the executor starts the most expensive jobs first
    :param code: fingerprint of the source the job runs (see :func:`memrl.fingerprint.job_code`)
    :param label: a short human-readable name for progress bars and error reports
    :param gpu: ask the executor for a GPU when the machine or cluster has one
    :param alone: a wall-clock measurement: the executor runs it after every other job, with
        no job beside it (two jobs on two cores would time each other's contention)
    :param engine: ``"xla"`` when the job trains on the accelerated engine
        (:mod:`memrl.engines`: pinned before it runs, its pin in the key); ``""`` otherwise
    """

    fn: str
    kwargs: Mapping[str, Any] = field(default_factory=dict, hash=False)
    cost: float = 1.0
    code: str = ""
    label: str = ""
    gpu: bool = False
    alone: bool = False
    engine: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.fn, str) or ":" not in self.fn:
            raise ValueError(f"fn must be 'module:function', got {self.fn!r}")
        if not isinstance(self.kwargs, Mapping):
            raise TypeError(f"kwargs must be a mapping, got {type(self.kwargs).__name__}")
        if self.engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}, got {self.engine!r}")
        _check_json(dict(self.kwargs), f"{self.fn} kwargs")
        # a frozen, canonical copy: later changes to the caller's dict cannot alter the key
        object.__setattr__(self, "kwargs", json.loads(_canonical(dict(self.kwargs))))

    @property
    def key(self) -> str:
        """A stable hash of the function, its arguments, the code fingerprint and the pinned
        instruction set (:mod:`memrl.isa`: other kernels compute other numbers); on a machine
        with a GPU, its device too (the jobs' torch work runs there); for an engine job, the
        engine's pin (:data:`memrl.engines.pin.KEY`: XLA's flags, one core, the versions)."""
        payload = {"fn": self.fn, "kwargs": self.kwargs, "code": self.code, "isa": isa.KEY}
        device = _device()
        if device != "cpu":  # a GPU computes other numbers; the CPU's keys stay as they were
            payload["device"] = device
        if self.engine:  # other jobs' keys stay as they were
            from memrl.engines import pin

            payload["engine"] = pin.KEY
        return hashlib.sha256(_canonical(payload).encode()).hexdigest()[:20]

    @property
    def name(self) -> str:
        return self.label or f"{self.fn.rsplit(':', 1)[1]}({_canonical(self.kwargs)[:80]})"

    def to_json(self) -> dict[str, Any]:
        return {
            "fn": self.fn,
            "kwargs": self.kwargs,
            "code": self.code,
            "cost": self.cost,
            "label": self.label,
            "gpu": self.gpu,
            "alone": self.alone,
            **({"engine": self.engine} if self.engine else {}),
        }


def resolve(fn: str) -> Callable[..., dict[str, Any]]:
    """The function a spec names (``"module:function"``)."""
    module, _, name = fn.partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as err:
        raise ValueError(f"cannot find job function {fn!r}: {err}") from None
