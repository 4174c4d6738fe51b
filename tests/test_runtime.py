import json

import pytest

from memrl.runtime import atomic_path, atomic_write_json, get_device, run_jobs


def test_atomic_write_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "out.json"
    atomic_write_json(target, {"a": 1})
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("interrupted")
    assert json.loads(target.read_text()) == {"a": 1}  # old content intact
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]  # no temp file left


def _square(x: int) -> int:
    return x * x


def test_run_jobs_keeps_order_in_parallel_and_serial():
    jobs = [{"x": i} for i in range(5)]
    assert run_jobs(_square, jobs, workers=2) == [0, 1, 4, 9, 16]
    assert run_jobs(_square, jobs, workers=1) == [0, 1, 4, 9, 16]


def test_device_is_picked_automatically():
    import torch as th

    assert get_device() == ("cuda" if th.cuda.is_available() else "cpu")
    assert get_device("cpu") == "cpu"
