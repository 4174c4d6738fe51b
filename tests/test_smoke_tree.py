"""A smoke try leaves the tree clean (issue 70): after ``python -m memrl repro --profile smoke``
(what ``PROFILE=smoke make repro`` runs) on a fresh copy of the project, ``git status`` shows
nothing. The smoke profile's tracked files are published ones: its ``dvc.lock`` (what `dvc
pull` of the published smoke store reads) and each family's ``timings.json`` (what a fresh
clone's estimate prices from); a run that does not publish keeps its own lock in the cache and
its seconds in its store's records.

Checked on the part of the pipeline that wrote those files: the ``params`` stage and one
family's runs stage (episodic control, the cheapest with no data set), in a git repository
made of this working tree's tracked files. Its store starts from the published smoke store
(pulled from the in-repo DVC remote) and the runs this machine has with the same keys (the
pipeline's store and the notebooks' cache), so only what they lack runs (~70 core-s at most,
none once the published store is current).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memrl import families, pipeline
from memrl.runs import RunStore
from memrl.runtime import cache_dir, repo_root

ROOT = repo_root()
FAMILY = "episodic_control"


def _git(cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
    )
    return done.stdout


def _copy_of_the_tree(dest: Path) -> None:
    """A git repository of this working tree's tracked files (less the DVC remote: nothing
    is pulled), committed; ``data/`` linked (git-ignored, as in a clone after `make data`)."""
    files = _git(ROOT, "ls-files", "-z").split("\0")
    for name in (f for f in files if f and not f.startswith(".dvc-store/")):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    (dest / "data").symlink_to(ROOT / "data", target_is_directory=True)
    _git(dest, "init", "-q")
    _git(dest, "add", "-A")
    _git(dest, "commit", "-q", "-m", "a fresh clone")


@pytest.mark.skipif(not (ROOT / ".git").exists(), reason="needs the project's git checkout")
def test_a_smoke_run_leaves_every_tracked_file_as_it_was(tmp_path):
    repo, cache = tmp_path / "clone", tmp_path / "cache"
    repo.mkdir()
    _copy_of_the_tree(repo)
    fam = families.get(FAMILY)
    specs = fam.grid(families.load_family(FAMILY, "smoke"))
    store = RunStore(repo / fam.runs_dir("smoke"))
    dvc = [str(Path(sys.executable).with_name("dvc"))]
    remote = ["remote", "modify", "--local", "store", "url", str(ROOT / ".dvc-store")]
    subprocess.run([*dvc, *remote], cwd=repo, capture_output=True)  # the in-repo remote
    pull = [*dvc, "pull", "-q", f"results/smoke/dvc.yaml:runs_{FAMILY}"]
    subprocess.run(pull, cwd=repo, capture_output=True)  # the published store, as a clone's
    store.root.mkdir(parents=True, exist_ok=True)
    for have in (ROOT / fam.runs_dir("smoke"), cache_dir() / "runs" / FAMILY / "smoke"):
        for spec in specs:  # reuse what this machine has with the same key
            if RunStore(have).has(spec) and not store.has(spec):
                shutil.copy2(RunStore(have).path(spec), store.path(spec))
                if (have / spec.key).is_dir():
                    shutil.copytree(have / spec.key, store.root / spec.key)
    env = {k: v for k, v in os.environ.items() if k not in (pipeline.PUBLISH, "MEMRL_ROOT")}
    env |= {"MEMRL_CACHE": str(cache), "MEMRL_PROGRESS": "0"}
    done = subprocess.run(
        [sys.executable, "-m", "memrl", "repro", "--profile", "smoke", f"runs_{FAMILY}"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert all(store.has(s) for s in specs)  # the stage ran: every job is stored
    assert (cache / "locks" / "smoke" / "dvc.lock").is_file()  # DVC's lock, this machine's
    assert _git(repo, "status", "--porcelain") == ""
    # and the next run starts from this machine's own lock: DVC knows what it has done
    assert "runs_" + FAMILY in (cache / "locks" / "smoke" / "dvc.lock").read_text()


def test_a_lock_swapped_in_by_a_killed_run_is_put_back_first(tmp_path, monkeypatch):
    """A run killed while this machine's lock stood in the published one's place: the next
    run first puts the published one back (and keeps the other as this machine's)."""
    monkeypatch.setenv("MEMRL_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(pipeline.PUBLISH, raising=False)
    lock, mine, published = pipeline._lock_paths("smoke")
    monkeypatch.setattr(pipeline, "_lock_paths", lambda p: (tmp_path / "dvc.lock", mine, published))
    lock = tmp_path / "dvc.lock"
    lock.write_text("published")
    with pipeline.local_lock("smoke"):
        assert lock.read_text() == "published"  # no lock of this machine's yet
        lock.write_text("this machine's")
    assert (lock.read_text(), mine.read_text()) == ("published", "this machine's")
    published.write_text("published")  # killed inside: the published one saved aside...
    lock.write_text("this machine's, newer")  # ...this machine's in its place
    with pipeline.local_lock("smoke"):
        assert lock.read_text() == "this machine's, newer"
    assert lock.read_text() == "published" and not published.exists()
    monkeypatch.setenv(pipeline.PUBLISH, "1")  # publishing: DVC's lock is the published one
    with pipeline.local_lock("smoke"):
        lock.write_text("republished")
    assert lock.read_text() == "republished"
