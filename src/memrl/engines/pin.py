"""What the engine computes with, pinned before jax loads: XLA's kernels, its threads and the
exact versions, the way :mod:`memrl.isa` pins torch's.

A jitted JAX run on CPU gives the same bytes run to run and across fresh processes. Its
bytes change with (measured: the research notes' sixth round, issue 73, and
``tests/test_engine.py`` on an Intel Xeon, where unpinned a sum of 2^20 floats differs on one
core and two; ``benchmarks/engine_fingerprints.py`` compares machines):

- **the number of cores the process sees**: XLA sizes its thread pools by the affinity mask
  and partitions small scans and products by them (1 core != 2 cores);
  ``--xla_cpu_multi_thread_eigen=false`` does not remove that, binding the process to one
  core does. :func:`pin` binds this process to one core of those it may use, before jax
  loads (a core of its own where it can: a lock file per core, so two workers of one pool
  take two cores);
- **the instruction set XLA compiles for**: ``--xla_cpu_max_isa=AVX2`` against the default
  on an AVX-512 CPU changed 2 of 3 workloads; capped at the level :mod:`memrl.isa` pins
  (``x86-64-v3``: AVX2, ``x86-64-v2``: SSE4_2, ``native``: the CPU's own);
- ``--xla_cpu_enable_platform_dependent_math``: off, so transcendental functions take XLA's
  portable expansions rather than ones chosen for the platform;
- the jax version: jax, jaxlib and optax are pinned exactly (``requirements.lock``) and
  part of :data:`KEY`.

XNNPACK (``--xla_cpu_use_xnnpack``, on by default) chooses its micro-kernels by the CPU it
runs on, which the ISA cap is not documented to reach; it is turned off (it changed no
measured byte here, and the engine's small products do not need it). **YNNPACK**, the
library XLA:CPU hands products and reductions to in this jaxlib (``__ynn_fusion`` in the
compiled HLO: the convolution's patch products and the traces' L1 sum in stream Q(lambda)),
does the same, and the cap does not reach it: under ``--xla_cpu_max_isa=AVX2`` on an Intel
Xeon (family 6 model 207) a debugger stopped in ``ynn::dot_fp32_4x64x1_1x16x1_avx512``, so
an AVX2-only CPU (an AMD EPYC before Zen 4) would run other kernels, with other tiles and
partial sums. Every YNN fusion type is turned off (``_YNN_OFF``), so those ops take XLA's own
code, compiled under the cap (the bytes moved; the compiled step's cost did not, within this
VM's noise). ``tests/test_engine.py`` checks that a compiled engine step has no library
fusion. oneDNN is off by default in this jaxlib. 32-bit floats (``JAX_ENABLE_X64=0``).

On a GPU (``MEMRL_ENGINE_DEVICE=cuda``, or ``auto`` with a CUDA plugin and a device
present) the pin is XLA's deterministic GPU ops instead of a core; those runs' keys are
their own (:data:`KEY` starts ``xla-cuda``). Unmeasured: no GPU in this project's machines.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from memrl import isa

PACKAGES = ("jax", "jaxlib", "optax")  # their versions are in the key
_MAX_ISA = {"x86-64-v3": "AVX2", "x86-64-v2": "SSE4_2"}  # memrl.isa's level -> XLA's cap
# YNNPACK's fusion types (xla.proto's LibraryFusionType), each removed from XLA's default
_YNN_OFF = "-dot,-eltwise,-reduce,-individual_dot,-individual_convolution"
_CPU_FLAGS = (
    "--xla_cpu_enable_platform_dependent_math=false",
    "--xla_cpu_use_xnnpack=false",
    f"--xla_cpu_experimental_ynn_fusion_type={_YNN_OFF}",
)
_CUDA_FLAGS = ("--xla_gpu_deterministic_ops=true",)  # unmeasured (no GPU here)
_HELD: list[Any] = []  # the lock file of the core this process took (open while it lives)


class PinError(RuntimeError):
    """jax loaded before the pin, or the process computes with other settings than it."""


def device() -> str:
    """``cuda`` or ``cpu``: ``$MEMRL_ENGINE_DEVICE`` (``auto`` unless set: ``cuda`` when a
    jax CUDA plugin is installed and an NVIDIA device is present)."""
    want = os.environ.get("MEMRL_ENGINE_DEVICE", "auto")
    if want not in ("auto", "cpu", "cuda"):
        raise PinError(f"MEMRL_ENGINE_DEVICE={want!r}: use auto, cpu or cuda")
    if want != "auto":
        return want
    plugin = any(_installed(p) for p in ("jax-cuda12-plugin", "jax-cuda13-plugin"))
    return "cuda" if plugin and Path("/dev/nvidia0").exists() else "cpu"


def _installed(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def versions() -> dict[str, str | None]:
    return {p: _installed(p) for p in PACKAGES}


def environment(dev: str | None = None) -> dict[str, str]:
    """The variables the pin sets (XLA's flags replace any already set: an outer flag must
    not change a result)."""
    dev = dev or device()
    if dev == "cuda":
        return {"XLA_FLAGS": " ".join(_CUDA_FLAGS), "JAX_PLATFORMS": "cuda", "JAX_ENABLE_X64": "0"}
    cap = _MAX_ISA.get(isa.level())
    flags = ([f"--xla_cpu_max_isa={cap}"] if cap else []) + list(_CPU_FLAGS)
    return {"XLA_FLAGS": " ".join(flags), "JAX_PLATFORMS": "cpu", "JAX_ENABLE_X64": "0"}


def _key(dev: str) -> str:
    parts = sorted(environment(dev).items()) + sorted(versions().items())
    if dev == "cpu":
        parts.append(("cores", "1"))
    text = ",".join(f"{k}={v}" for k, v in parts)
    return f"xla-{dev}:{hashlib.sha256(text.encode()).hexdigest()[:8]}"


def key() -> str:
    """What an engine job's key carries (:attr:`memrl.jobs.JobSpec.key`): the device, the
    flags, one core and the versions."""
    return _key(device())


def _take_core(allowed: set[int]) -> int:
    """A core of ``allowed`` no other pinned process holds (a lock file per core), else one
    chosen by this process's id."""
    import fcntl

    for core in sorted(allowed):
        f = open(Path(tempfile.gettempdir()) / f"memrl-engine-core-{core}.lock", "a")  # noqa: SIM115
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.close()
            continue
        _HELD.append(f)
        return core
    return sorted(allowed)[os.getpid() % len(allowed)]


def _jax_started() -> bool:
    if "jax" not in sys.modules:
        return False
    from jax._src import xla_bridge

    return xla_bridge.backends_are_initialized()


def pin() -> str:
    """Pin this process for the engine (once; idempotent) and return the device: XLA's
    variables set, and on CPU the process bound to one core. Raises :class:`PinError` when
    jax's backend started before (its threads and flags are fixed by then)."""
    dev = device()
    env = environment(dev)
    pinned = all(os.environ.get(k) == v for k, v in env.items())
    if _jax_started():
        if not pinned or (dev == "cpu" and len(os.sched_getaffinity(0)) != 1):
            raise PinError(
                "jax started before memrl.engines.pin.pin(): its flags and threads are fixed; "
                "run the engine in a fresh process (the executors' workers are)"
            )
        return dev
    os.environ.update(env)
    if dev == "cpu" and hasattr(os, "sched_setaffinity"):
        allowed = os.sched_getaffinity(0)
        if len(allowed) != 1:
            os.sched_setaffinity(0, {_take_core(allowed)})
    return dev


def check() -> dict[str, Any]:
    """What the engine computes with in this process, as a run records it (after
    :func:`pin`); raises :class:`PinError` when it is not the pin."""
    import jax

    dev = device()
    want = environment(dev)
    wrong = {k: os.environ.get(k) for k, v in want.items() if os.environ.get(k) != v}
    got = {"jax": jax.__version__, "jaxlib": jax.lib.__version__}
    if any(versions()[k] != v for k, v in got.items()):
        wrong["versions"] = f"{got} loaded, {versions()} installed"
    if dev == "cpu" and len(os.sched_getaffinity(0)) != 1:
        wrong["cores"] = str(len(os.sched_getaffinity(0)))
    if jax.default_backend() != dev.replace("cuda", "gpu"):
        wrong["backend"] = jax.default_backend()
    if wrong:
        raise PinError(f"the engine computes with {wrong}, not its pin {want}: call pin() first")
    return {"key": key(), "device": dev, **want, **versions()}


KEY = key()  # this machine's engine pin (`python -m memrl isa` shows it)
