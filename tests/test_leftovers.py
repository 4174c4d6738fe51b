"""Nothing left behind: SB3 writes no log folders, a notebook's scratch output goes with
its kernel."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from functools import partial
from pathlib import Path

from memrl.agents.sb3_dqn import dqn_train
from memrl.envs.registry import make
from memrl.families import load_family


def test_sb3_training_leaves_no_log_folder():
    temp = Path(tempfile.gettempdir())
    before = {p.name for p in temp.glob("SB3-*")}
    hp = load_family("episodic_control", "smoke").dqn_for("CartPole-v1")
    hp = hp.model_copy(update={"learning_starts": 50})
    out = dqn_train(partial(make, "CartPole-v1"), hp, 200, seed=0)
    assert out["episode_returns"]
    assert {p.name for p in temp.glob("SB3-*")} == before


def test_a_notebooks_scratch_output_is_removed_when_its_kernel_exits():
    code = "from memrl.results import output_dir; d = output_dir(''); (d / 'x').write_text('1'); print(d)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    scratch = Path(out.stdout.strip())
    assert scratch.name.startswith("memrl-") and not scratch.exists()


def test_scratch_folders_of_killed_kernels_are_removed_by_the_next_one(tmp_path, monkeypatch):
    """A kernel killed by a signal runs no exit handler: the next scratch folder sweeps the
    folders of processes that are gone (and leaves live ones and other names alone)."""
    import os

    from memrl.results import output_dir

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    gone = tmp_path / f"memrl-{dead}-abc"
    live = tmp_path / f"memrl-{os.getpid()}-keep"
    other = tmp_path / "memrl-notes"
    for d in (gone, live, other):
        d.mkdir()
    fresh = output_dir("")
    assert fresh.parent == tmp_path and fresh.name.startswith(f"memrl-{os.getpid()}-")
    assert not gone.exists() and live.exists() and other.exists()
