import json
import subprocess
import sys

import pytest

from memrl.runtime import atomic_path, atomic_write_json, cache_dir, get_device


def test_atomic_write_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "out.json"
    atomic_write_json(target, {"a": 1})
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("interrupted")
    assert json.loads(target.read_text()) == {"a": 1}  # old content intact
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]  # no temp file left


def test_cache_dir_needs_no_repo_when_memrl_cache_is_set(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMRL_CACHE", str(tmp_path))
    monkeypatch.setattr("memrl.runtime.repo_root", lambda: pytest.fail("looked up the repo"))
    assert cache_dir() == tmp_path


def test_device_is_picked_automatically():
    import torch as th

    assert get_device() == ("cuda" if th.cuda.is_available() else "cpu")
    assert get_device("cpu") == "cpu"


def test_workers_auto_runs_one_job_per_core(monkeypatch, tmp_path):
    """`runtime.workers: auto` (the default) on a 16-core machine: 16 jobs at a time; an
    explicit number wins; torch_threads > 1 shares the cores."""
    from memrl import families, runner, schema
    from memrl.executors import Executed
    from memrl.runs import RunStore
    from memrl.schema import RuntimeParams

    monkeypatch.setattr(schema, "available_cores", lambda: 16)
    assert RuntimeParams().workers == "auto" and RuntimeParams().processes == 16
    assert RuntimeParams(workers=3).processes == 3
    assert RuntimeParams(torch_threads=4).processes == 4

    seen = {}

    def fake_execute(specs, store, executor, workers, threads, **kw):
        seen["workers"] = workers
        return Executed(len(specs))

    monkeypatch.setattr(runner, "execute", fake_execute)
    monkeypatch.setattr(families.Family, "preflight", lambda self, cfg: None)
    fam = families.get("experience_replay")
    runner.run_jobs(fam, families.load_family(fam.name, "smoke"), "smoke", RunStore(tmp_path))
    assert seen["workers"] == 16  # what make repro's runs stages use, from params.yaml's auto


WARM = r"""
import hashlib
import memrl
import numpy as np
from threadpoolctl import threadpool_limits
threadpool_limits(1)  # as a job
g = np.random.default_rng(0)
pairs = [(g.standard_normal((m, k), np.float32), g.standard_normal((k, n), np.float32))
         for m, k, n in ((64, 512, 64), (512, 256, 64), (16, 256, 64))]
def h():
    return [hashlib.sha256((a @ b).tobytes()).hexdigest()[:16] for a, b in pairs]
cold = h()
from memrl.runtime import warm_up_blas
warm_up_blas()
print(cold == h())
"""


def test_the_warm_up_product_leaves_the_bytes_as_they_were():
    """:func:`memrl.runtime.warm_up_blas` makes one product of inner dimension > 256 so
    that OpenBLAS runs the larger ones fast: the products before and after are the same
    bytes (so it is in no job's key)."""
    out = subprocess.run([sys.executable, "-c", WARM], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
