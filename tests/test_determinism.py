"""Same params and seed give the same metrics on CPU (nbval relies on it)."""

import json

from memrl.config import load_family
from memrl.experiments import experience_replay as er
from memrl.runtime import set_torch_threads


def same(a: dict, b: dict) -> bool:
    """Equal, NaN included (a curve is NaN before its first episode ends)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def test_sb3_jobs_are_deterministic():
    set_torch_threads(1)
    cfg = load_family("experience_replay", "smoke")
    p = cfg.per_dqn.model_copy(update={"total_timesteps": 1500})
    assert same(er.per_dqn_job(0, True, p), er.per_dqn_job(0, True, p))
    h = cfg.her.model_copy(update={"steps_per_bit": 60})
    assert same(er.her_job(1, 4, True, h), er.her_job(1, 4, True, h))
    r = cfg.rae.model_copy(update={"total_timesteps": 300})
    a = er.rae_job(0, "RaE (small data)", r, er.prior_dir(cfg))
    assert same(a, er.rae_job(0, "RaE (small data)", r, er.prior_dir(cfg)))
    assert not same(er.rae_job(1, "RaE (small data)", r, er.prior_dir(cfg)), a)  # seeds matter


def test_rae_conditions_use_the_right_data():
    from memrl.memory.mixed import Transitions

    cfg = load_family("experience_replay", "default")
    prior = Transitions.load(er.prior_dir(cfg))
    early = er.prior_subset(prior, "RaE (early, low-quality data)", cfg.rae, 0)
    small = er.prior_subset(prior, "RaE (small data)", cfg.rae, 0)
    assert len(early) == int(cfg.rae.early_fraction * len(prior))
    assert len(small) == int(cfg.rae.small_fraction * len(prior))
    assert (early.observations == prior.observations[: len(early)]).all()
