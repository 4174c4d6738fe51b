"""The instruction set every run computes with: one kernel set, whatever the x86-64 CPU.

torch, MKL, oneDNN, numpy and OpenBLAS each pick their kernels by the CPU's instruction set
when they load, and kernels of different widths add in different orders: the same seed then
gives different numbers on an AVX-512 Xeon and an AVX2 EPYC (measured: the smoke job
``DQN+PER`` seed 0 ends at return 222 under torch's AVX2 kernels and at 293 under its
default ones, on one machine). :func:`pin` names one kernel set in this process's
environment before those libraries read it; every process started from here inherits it
(the pool's workers, Ray's through its runtime env, the papermill and nbval kernels).

Levels (``MEMRL_ISA``; ``x86-64-v3`` unless set):

- ``x86-64-v3`` (AVX2 + FMA, every x86-64 CPU since 2015 and every machine of this project's
  kind): torch's AVX2 kernels, numpy's x86-64-v3 dispatch (its AVX-512 paths off), OpenBLAS's
  Haswell kernels, numba compiling for Haswell, oneDNN capped at AVX2; every matrix
  product, convolution and LAPACK call of torch's on that OpenBLAS
  (``MEMRL_PRODUCTS=openblas``: :mod:`memrl.openblas`), since MKL's ``COMPATIBLE`` branch,
  which Intel documents as giving the same results on non-Intel CPUs, was measured not to
  for some product shapes (issue 52), and torch's ``sqrt`` and ``erfinv`` on numpy's and
  scipy's code (MKL's vector-math ``sqrt`` is not correctly rounded on that branch and
  follows the vendor); MKL stays on that branch for ``exp``, ``log`` and ``tanh`` (measured
  equal on both vendors).
- ``x86-64-v2`` (SSE4.2: any x86-64 CPU from 2009): torch's default kernels, numpy's
  baseline, OpenBLAS's Nehalem kernels, numba for Nehalem, oneDNN capped at SSE4.1, MKL
  ``COMPATIBLE``.
- ``native``: nothing pinned, each library picks for the CPU (benchmarks only; results then
  follow the CPU, and a run records so).

What each level costs against ``native``: ``benchmarks/isa.py``. The level is part of every
job's key (:data:`KEY`), so runs computed under another kernel set are never reused as if
they were the same result.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path
from typing import Any

# numpy's dispatch targets above its x86-64-v2 baseline (numpy >= 2.4 names them so), with
# commas: a value without spaces passes through shells and `ipykernel install --env`
_NUMPY_ABOVE_V3 = "X86_V4,AVX512_ICL,AVX512_SPR"
_NUMPY_ABOVE_V2 = f"X86_V3,{_NUMPY_ABOVE_V3}"
# numba's target (memrl.memory.rnn_cells): a CPU name and its level's features, stated (an
# unset feature list means the host's: AVX-512 on a Xeon); no value empty, for the same shells
_NUMBA_V3 = "+avx,+avx2,+bmi,+bmi2,+f16c,+fma,+lzcnt,+movbe,+popcnt,+sse4.2"
_NUMBA_V2 = "+popcnt,+sse4.2"

LEVELS: dict[str, dict[str, str]] = {
    "x86-64-v3": {
        "ATEN_CPU_CAPABILITY": "avx2",
        "MKL_CBWR": "COMPATIBLE,STRICT",
        "ONEDNN_MAX_CPU_ISA": "AVX2",
        "NPY_DISABLE_CPU_FEATURES": _NUMPY_ABOVE_V3,
        "OPENBLAS_CORETYPE": "Haswell",
        "NUMBA_CPU_NAME": "haswell",
        "NUMBA_CPU_FEATURES": _NUMBA_V3,
        "MEMRL_PRODUCTS": "openblas",
    },
    "x86-64-v2": {
        "ATEN_CPU_CAPABILITY": "default",
        "MKL_CBWR": "COMPATIBLE,STRICT",
        "ONEDNN_MAX_CPU_ISA": "SSE41",
        "NPY_DISABLE_CPU_FEATURES": _NUMPY_ABOVE_V2,
        "OPENBLAS_CORETYPE": "Nehalem",
        "NUMBA_CPU_NAME": "nehalem",
        "NUMBA_CPU_FEATURES": _NUMBA_V2,
        "MEMRL_PRODUCTS": "openblas",
    },
    "native": {},
}
DEFAULT = "x86-64-v3"
# what a CPU must have for a level's kernels (/proc/cpuinfo's names)
_NEEDS = {"x86-64-v3": ("avx2", "fma", "bmi2", "f16c"), "x86-64-v2": ("sse4_2", "popcnt")}
# what each library reports once pinned (numpy: its dispatch targets above the baseline)
_EXPECT: dict[str, dict[str, Any]] = {
    "x86-64-v3": {
        "torch": "AVX2",
        "numpy": ["X86_V3"],
        "openblas": "Haswell",
        "products": "openblas",
    },
    "x86-64-v2": {"torch": "DEFAULT", "numpy": [], "openblas": "Nehalem", "products": "openblas"},
}


class ISAError(RuntimeError):
    """The pinned kernels cannot run here, or a library chose its kernels before the pin."""


def level() -> str:
    """The level asked for: ``$MEMRL_ISA``, else :data:`DEFAULT`."""
    name = os.environ.get("MEMRL_ISA", DEFAULT)
    if name not in LEVELS:
        raise ISAError(f"MEMRL_ISA={name!r} is not a level; use one of {', '.join(LEVELS)}")
    return name


def products() -> str:
    """Where torch's matrix products run in this process's level: ``"openblas"``
    (:mod:`memrl.openblas`) or ``"mkl"`` (torch's own choice, the ``native`` level)."""
    return LEVELS[level()].get("MEMRL_PRODUCTS", "mkl")


def _key(name: str) -> str:
    text = ",".join(f"{k}={v}" for k, v in sorted(LEVELS[name].items()))
    if LEVELS[name].get("MEMRL_PRODUCTS") == "openblas":  # the routed kernels' code too
        from memrl.fingerprint import module_fingerprint

        text += module_fingerprint(Path(__file__).parent / "openblas.py")
    return f"{name}:{hashlib.sha256(text.encode()).hexdigest()[:8]}"


KEY = _key(level())  # what job keys carry (memrl.jobs.JobSpec.key): the level and its values


def environment() -> dict[str, str]:
    """The variables that pin the asked level, ``MEMRL_ISA`` with them: what a process
    started elsewhere (a Ray worker, a JupyterLab kernel) must be given."""
    name = level()
    return {"MEMRL_ISA": name, **LEVELS[name]}


def pin() -> str:
    """Set the level's variables in this process's environment (overriding any already
    set: an outer ``ATEN_CPU_CAPABILITY`` must not change a result) and return the level.

    Call it before numpy or torch is imported; :func:`check` tells whether that held.
    """
    os.environ.update(environment())
    return level()


def _cpu_flags() -> set[str] | None:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return None  # not Linux: nothing to check against


def check() -> dict[str, Any]:
    """What this process computes with, as a run records it; raises :class:`ISAError` with
    its fix when the CPU lacks the level or a library picked its kernels before the pin."""
    name = level()
    flags = _cpu_flags()
    missing = [f for f in _NEEDS.get(name, ()) if flags is not None and f not in flags]
    if missing:
        raise ISAError(
            f"this CPU lacks {', '.join(missing)}, which the pinned kernels ({name}) need; "
            "run with MEMRL_ISA=x86-64-v2 (results then differ from the published ones)"
        )
    seen: dict[str, Any] = {}
    if "torch" in sys.modules:
        import torch

        seen["torch"] = torch.backends.cpu.get_cpu_capability()
    if "numpy" in sys.modules:
        from numpy._core._multiarray_umath import __cpu_features__ as feats

        seen["numpy"] = [f for f in ("X86_V3", "X86_V4") if feats.get(f)]
        try:
            from threadpoolctl import threadpool_info

            blas = [i for i in threadpool_info() if i.get("internal_api") == "openblas"]
            seen["openblas"] = blas[0].get("architecture") if blas else None
        except ImportError:
            pass
    if "numba" in sys.modules:  # its target against the level's own values
        from numba.core import config

        check_numba()
        seen["numba"] = config.CPU_NAME
    if "torch" in sys.modules and products() == "openblas":
        from memrl.openblas import routed

        seen["products"] = "openblas" if routed() else "mkl"
    wrong = {k: v for k, v in seen.items() if name in _EXPECT and _EXPECT[name].get(k, v) != v}
    if wrong:
        raise ISAError(
            f"{', '.join(wrong)} chose its kernels ({wrong}) before memrl pinned {name}: "
            "import memrl before numpy and torch, or start with `python -m memrl`"
        )
    return {"level": name, **seen, "cpu": cpu_model()}


def check_numba() -> None:
    """Raise :class:`ISAError` unless numba compiles for the level's target, not this CPU
    (numba read its settings before the pin otherwise); :mod:`memrl.memory.rnn_cells` calls
    it when it loads."""
    want = {k: v for k, v in LEVELS[level()].items() if k.startswith("NUMBA_")}
    if not want:
        return
    from numba.core import config

    got = {"NUMBA_CPU_NAME": config.CPU_NAME, "NUMBA_CPU_FEATURES": config.CPU_FEATURES}
    if got != want:
        raise ISAError(
            f"numba compiles for {got}, not the pinned {want}: import memrl before numba, "
            "or start with `python -m memrl`"
        )


def cpu_model(cpuinfo: str | None = None) -> str:
    """This CPU's model name with its family and model numbers (``/proc/cpuinfo``), kept with
    every run so that a difference between two machines' runs, or their speeds, can be traced
    to their CPUs: a virtual machine may name only the vendor's line (``AMD EPYC``), while
    the numbers tell its generation (family 23 is Zen 1 and 2, 25 Zen 3 and 4)."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            cpuinfo = ""
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        if not sep and fields:  # the first processor's block is enough
            break
        if sep:
            fields.setdefault(key.strip(), value.strip())
    name = fields.get("model name", "unknown")
    if "cpu family" not in fields or "model" not in fields:
        return name
    return f"{name} (family {fields['cpu family']}, model {fields['model']})"
