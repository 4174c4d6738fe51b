"""Same parameters and seed, same numbers on any x86-64 CPU (:mod:`memrl.isa`).

One machine cannot be two CPUs, but each library can be told to use fewer instructions than
the CPU has, as a lesser CPU would make it: torch (``ATEN_CPU_CAPABILITY``), numpy
(``NPY_DISABLE_CPU_FEATURES``), OpenBLAS (``OPENBLAS_CORETYPE``) and MKL (``MKL_CBWR``).
Unpinned, those settings change a smoke job's result (so the comparison can fail); pinned,
the same job gives the same bytes under every one of them.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from memrl import isa
from memrl.runs import RunStore

# what a machine with fewer (or other) instructions makes each library choose
LESSER_CPU = {
    "ATEN_CPU_CAPABILITY": "default",
    "NPY_DISABLE_CPU_FEATURES": "X86_V3 X86_V4 AVX512_ICL AVX512_SPR",
    "OPENBLAS_CORETYPE": "Nehalem",
    "MKL_CBWR": "AUTO",
}
THIS_CPU = {"ATEN_CPU_CAPABILITY": "avx2"}
JOBS = [  # recurrent SAC: an LSTM on numpy's OpenBLAS (memrl.memory.blas_rnn), its heads'
    # products routed there too (memrl.openblas); other vendors: `memrl verify` in make test
    ("recurrent_off_policy", "RSAC-LSTM · Pendulum-V"),
]


def _computed(result: dict) -> dict:
    """A result less what it timed (``lookup_seconds``, ``*_ms``): clocks are not kernels."""
    return {k: v for k, v in result.items() if not k.endswith(("seconds", "_ms"))}


def _run(tmp_path, family: str, job: str, level: str, outer: dict[str, str]) -> dict:
    store = tmp_path / f"{level}-{'lesser' if outer == LESSER_CPU else 'this'}"
    env = {k: v for k, v in os.environ.items() if k not in {*LESSER_CPU, *isa.LEVELS[isa.DEFAULT]}}
    env.update(MEMRL_ISA=level, MEMRL_PROGRESS="0", **outer)
    cmd = [sys.executable, "-m", "memrl", "run", family, job, "--seed", "0", "--profile", "smoke"]
    out = subprocess.run([*cmd, "--store", str(store)], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    (path,) = [p for p in store.glob("*.json")]
    return json.loads(path.read_text())


@pytest.mark.parametrize(("family", "job"), JOBS)
def test_a_pinned_job_gives_the_same_bytes_whatever_the_cpu_would_choose(tmp_path, family, job):
    runs = [(level, cpu) for level in (isa.DEFAULT, "native") for cpu in (THIS_CPU, LESSER_CPU)]
    with ThreadPoolExecutor(2) as pool:  # four single-threaded processes, two at a time
        out = list(pool.map(lambda r: _run(tmp_path, family, job, *r), runs))
    pinned, native = out[:2], out[2:]
    assert _computed(pinned[0]["result"]) == _computed(pinned[1]["result"])
    assert pinned[0]["isa"] == pinned[1]["isa"] and pinned[0]["isa"]["level"] == isa.DEFAULT
    assert _computed(native[0]["result"]) != _computed(native[1]["result"]), "insensitive job"
    assert native[1]["isa"]["torch"] == "DEFAULT"  # the run records what it computed with


def _child(code: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, **env}, capture_output=True, text=True
    )


def test_numpy_loaded_before_the_pin_is_one_clear_error():
    late = "import numpy\nimport memrl\nfrom memrl.executors import run_spec\n"
    late += "run_spec({'fn': 'memrl.isa:level', 'kwargs': {}})"
    out = _child(late, MEMRL_ISA="x86-64-v2", NPY_DISABLE_CPU_FEATURES="")
    assert out.returncode != 0 and "import memrl before numpy" in out.stderr
    fine = _child("import memrl, numpy\nfrom memrl.isa import check\nprint(check()['numpy'])")
    assert fine.returncode == 0 and fine.stdout.strip() == "['X86_V3']", fine.stderr


def test_a_cpu_without_the_level_is_told_the_fix(monkeypatch):
    monkeypatch.setattr(isa, "_cpu_flags", lambda: {"sse4_2", "popcnt"})
    with pytest.raises(isa.ISAError, match="MEMRL_ISA=x86-64-v2"):
        isa.check()
    monkeypatch.setenv("MEMRL_ISA", "AVX-9000")
    with pytest.raises(isa.ISAError, match="x86-64-v3, x86-64-v2, native"):
        isa.level()


def test_this_process_and_its_children_are_pinned():
    """pytest loads memrl first (pyproject's ``-p memrl``): notebook kernels and workers
    started from here inherit the pin."""
    for var, value in isa.LEVELS[isa.level()].items():
        assert os.environ[var] == value
    out = _child("import os; print(os.environ['ATEN_CPU_CAPABILITY'])")
    assert out.stdout.strip() == isa.LEVELS[isa.level()].get("ATEN_CPU_CAPABILITY", "")
    assert isa.check()["level"] == isa.level()


def test_the_store_keeps_the_kernels_apart_from_the_result(tmp_path):
    from memrl.jobs import JobSpec
    from memrl.runs import ISA_FIELD

    store, spec = RunStore(tmp_path), JobSpec("m:f", {"x": 1})
    store.save(spec, {"y": 2, ISA_FIELD: {"level": "x86-64-v3"}}, 1.0)
    rec = store.load(spec)
    assert rec["result"] == {"y": 2} and rec["isa"] == {"level": "x86-64-v3"}


def test_a_run_names_its_cpu_by_generation_not_only_by_line():
    # a virtual machine names Zen 1 and Zen 4 alike ("AMD EPYC"); prices differ ~2x
    info = "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\n"
    info += "model name\t: AMD EPYC\n\nprocessor\t: 1\ncpu family\t: 99\n"
    assert isa.cpu_model(info) == "AMD EPYC (family 25, model 17)"
    assert isa.cpu_model("model name\t: Some CPU\n") == "Some CPU"
    assert isa.cpu_model("") == "unknown"


BENCHMARKS = sorted((Path(__file__).resolve().parents[1] / "benchmarks").glob("*.py"))


@pytest.mark.parametrize("script", BENCHMARKS, ids=lambda p: p.name)
def test_each_benchmark_pins_the_kernels_before_numpy_or_torch_load(script):
    """A benchmark measures what the jobs run: its first import beyond the standard library
    is memrl (which pins the kernels, :func:`memrl.isa.pin`), never numpy or torch, whose
    kernels would then follow this CPU (OpenBLAS's, read once when numpy loads)."""
    for node in ast.parse(script.read_text()).body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            name = node.names[0].name if isinstance(node, ast.Import) else node.module or ""
            top = name.split(".")[0]
            if top == "__future__" or top in sys.stdlib_module_names:
                continue
            assert top == "memrl", f"{script.name} imports {top} before memrl"
            return


@pytest.mark.parametrize("script", BENCHMARKS, ids=lambda p: p.name)
def test_each_benchmark_imports_what_memrl_has(script):
    """Every ``from memrl... import name`` of a benchmark, in its functions too, names
    something the package has: a benchmark is run by hand, so nothing else would tell
    when an agent's API moved under it (``recurrent_sac.py`` imported a ``train`` that had
    gone to :mod:`memrl.agents.recurrent_loop`)."""
    import importlib
    import importlib.util

    for node in ast.walk(ast.parse(script.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "memrl":
            module = importlib.import_module(node.module)
            for alias in node.names:
                assert hasattr(module, alias.name) or importlib.util.find_spec(
                    f"{node.module}.{alias.name}"
                ), f"{script.name}: {node.module} has no {alias.name}"
