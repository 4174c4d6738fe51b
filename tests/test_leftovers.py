"""Nothing left behind: SB3 writes no log folders, a notebook's scratch output goes with
its kernel."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from memrl.agents.sb3_baselines import dqn_train
from memrl.config import load_family


def test_sb3_training_leaves_no_log_folder():
    temp = Path(tempfile.gettempdir())
    before = {p.name for p in temp.glob("SB3-*")}
    hp = load_family("episodic_control", "smoke").dqn_for("CartPole-v1")
    out = dqn_train("CartPole-v1", hp.model_copy(update={"learning_starts": 50}), 200, seed=0)
    assert out["episode_returns"]
    assert {p.name for p in temp.glob("SB3-*")} == before


def test_a_notebooks_scratch_output_is_removed_when_its_kernel_exits():
    code = "from memrl.results import output_dir; d = output_dir(''); (d / 'x').write_text('1'); print(d)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    scratch = Path(out.stdout.strip())
    assert scratch.name.startswith("memrl-") and not scratch.exists()
