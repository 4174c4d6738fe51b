import os

import pytest
import yaml

os.environ.setdefault("MEMRL_PROGRESS", "0")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from memrl.runtime import repo_root, set_torch_threads  # noqa: E402

# small networks, as in the pipeline: one thread (two oversubscribe a busy CPU badly)
set_torch_threads(1)


@pytest.fixture
def empty_store(monkeypatch, tmp_path):
    """Call it to make the estimate's run stores what a fresh clone has (none; or
    ``records`` as what reading them gives): a maintainer's machine holds stored runs, which
    price as measured."""
    from memrl import estimate
    from memrl.runs import RunStore

    def empty(records=()) -> None:
        monkeypatch.setattr(estimate, "read_records", lambda path: list(records))
        monkeypatch.setattr(estimate, "RunStore", lambda path: RunStore(tmp_path / "empty"))

    return empty


@pytest.fixture
def params_with(tmp_path):
    """``params_with(mutate, family=None)``: a copy of params.yaml in ``tmp_path`` changed by
    ``mutate`` (given the whole file, or ``family``'s default block); returns its path."""

    def write(mutate, family=None):
        raw = yaml.safe_load((repo_root() / "params.yaml").read_text())
        mutate(raw if family is None else raw[family]["default"])
        path = tmp_path / "params.yaml"
        path.write_text(yaml.safe_dump(raw))
        return path

    return write


def _stores() -> dict[str, tuple[int, int]]:
    """Every file of the repository's smoke run store, with its size and modification time."""
    stats = {p: p.stat() for p in (repo_root() / "results" / "smoke").glob("*/runs/*")}
    return {str(p): (s.st_size, s.st_mtime_ns) for p, s in stats.items()}


@pytest.fixture(scope="session", autouse=True)
def no_test_writes_the_published_store():
    """The unit tests fake runs in temporary stores only: one that reached the repository's
    smoke store (a monkeypatched root missed) would make `verify --cached` compare nbval's
    runs with fakes. A session that changed it fails."""
    before = _stores()
    yield
    assert _stores() == before, "a test wrote into results/smoke's run store"
