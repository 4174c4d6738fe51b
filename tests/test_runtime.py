import json

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
