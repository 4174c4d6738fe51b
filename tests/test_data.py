import json

import numpy as np

from memrl.data import build_prior_experiment, verify
from memrl.families import load_family
from memrl.memory.mixed import Transitions
from memrl.runtime import repo_root


def test_data_matches_data_dvc():
    assert verify(), "data/ differs from data.dvc: run `make data`"


def test_prior_data_shape_and_meta():
    cfg = load_family("experience_replay", "default")
    d = repo_root() / cfg.prior_data.path
    t = Transitions.load(d)
    meta = json.loads((d / "meta.json").read_text())
    assert len(t) == cfg.prior_data.total_timesteps == meta["transitions"]
    assert t.observations.shape == (len(t), 3) and t.actions.shape == (len(t), 1)
    assert meta["seed"] == cfg.prior_data.seed


def test_builder_is_deterministic(tmp_path):
    sac = load_family("experience_replay", "smoke").rae.sac
    a = build_prior_experiment(tmp_path / "a", "Pendulum-v1", 3, 400, sac)
    b = build_prior_experiment(tmp_path / "b", "Pendulum-v1", 3, 400, sac)
    for name in ("observations", "actions", "rewards", "next_observations", "dones"):
        assert (a / f"{name}.npy").read_bytes() == (b / f"{name}.npy").read_bytes()
    assert len(Transitions.load(a)) == 400
    assert np.isfinite(Transitions.load(a).rewards).all()
    assert not list(tmp_path.glob(".*"))  # no temporary folders left behind
