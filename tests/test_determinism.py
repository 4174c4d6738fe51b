"""Same params and seed give the same metrics on CPU (nbval relies on it)."""

import json

from memrl.families import load_family
from memrl.families.experience_replay import jobs as er
from memrl.memory.mixed import Transitions
from memrl.runtime import repo_root, set_torch_threads


def same(a: dict, b: dict) -> bool:
    """Equal, NaN included (a curve is NaN before its first episode ends)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def test_sb3_jobs_are_deterministic():
    set_torch_threads(1)
    cfg = load_family("experience_replay", "smoke")
    p = cfg.per_dqn.model_copy(update={"total_timesteps": 1500}).model_dump(mode="json")
    assert same(er.per_dqn_job(0, True, p), er.per_dqn_job(0, True, p))
    h = cfg.her.model_copy(update={"steps_per_bit": 60}).model_dump(mode="json")
    assert same(er.her_job(1, 4, True, h), er.her_job(1, 4, True, h))
    r = cfg.rae.model_copy(update={"total_timesteps": 300}).model_dump(mode="json")
    path = cfg.prior_data.path
    a = er.rae_job(0, "RaE (small data)", r, path)
    assert same(a, er.rae_job(0, "RaE (small data)", r, path))
    assert not same(er.rae_job(1, "RaE (small data)", r, path), a)  # seeds matter


def test_rae_conditions_use_the_right_data():
    cfg = load_family("experience_replay", "default")
    prior = Transitions.load(str(repo_root() / cfg.prior_data.path))
    p = cfg.rae.model_dump(mode="json")
    early = er.prior_subset(prior, "RaE (early, low-quality data)", p, 0)
    small = er.prior_subset(prior, "RaE (small data)", p, 0)
    assert len(early) == int(cfg.rae.early_fraction * len(prior))
    assert len(small) == int(cfg.rae.small_fraction * len(prior))
    assert (early.observations == prior.observations[: len(early)]).all()
