"""LSTM-PPO (the zoo's config on :mod:`memrl.agents.ppo` with the LSTM core): the fused unroll
over episode pieces equals acting step by step, GAE, and a short training run that learns
CartPole with velocities hidden a little (no long training)."""

from functools import partial

import numpy as np
import pytest
import torch as th

from memrl.agents import lstm_ppo, ppo
from memrl.agents.contract import Evals


def test_unroll_over_pieces_equals_stepping_with_resets():
    th.manual_seed(0)
    T, n, d = 12, 3, 4
    hp = lstm_ppo.RecurrentPPOParams(
        n_envs=n, n_steps=T, batch_size=T * n, n_epochs=1, learning_rate=1e-3, gamma=0.9,
        gae_lambda=0.9, clip_range=0.2, ent_coef=0.0, lstm_hidden_size=8, net_arch=[6],
    )  # fmt: skip
    branch = ppo.Branch(d, hp.ppo(), (2,))
    obs = th.randn(T, n, d)
    starts = np.zeros((T, n), np.float32)
    starts[0, 1] = starts[4, 0] = starts[5, 0] = starts[11, 2] = starts[7, 1] = 1
    state = (th.randn(1, n, 8), th.randn(1, n, 8))
    with th.no_grad():
        (fused,) = branch.unroll(obs, starts, state)
        s, outs = state, []
        for t in range(T):
            (y,), s = branch.step(obs[t], th.as_tensor(starts[t]), s)
            outs.append(y)
    assert th.allclose(fused, th.stack(outs), atol=1e-5)


def test_cut_marks_which_pieces_carry_the_stored_state():
    starts = np.array([[1, 0], [0, 0], [0, 1], [1, 0]], np.float32)
    p = ppo.cut(starts)
    assert p.env.tolist() == [0, 0, 1, 1] and p.t0.tolist() == [0, 3, 0, 2]
    assert p.length.tolist() == [3, 1, 2, 2] and p.carry.tolist() == [False, False, True, False]


def test_gae_stops_at_episode_starts():
    r = np.ones((3, 1), np.float32)
    v = np.zeros((3, 1), np.float32)
    starts_next = np.array([[0], [1], [0]], np.float32)  # an episode ends after step 1
    adv, ret = ppo.gae(r, v, np.array([10.0], np.float32), starts_next, 0.5, 1.0)
    assert adv[:, 0].tolist() == pytest.approx([1.5, 1.0, 6.0])
    assert np.allclose(ret, adv)  # values are 0


def test_short_training_is_deterministic_and_logs_episodes():
    from memrl.envs.registry import make
    from memrl.families import load_family

    p = load_family("recurrent_off_policy", "smoke").rppo

    def run():
        env_fn = partial(make, "memrl/CartPole-P-v1")
        return lstm_ppo.train(env_fn, p, 512, 5, Evals(2, (256,)))

    a, b = run(), run()
    assert a["episode_returns"] == b["episode_returns"] and a["eval_returns"] == b["eval_returns"]
    assert len(a["checkpoint_returns"]) == 1 and len(a["eval_returns"]) == 2
    assert sum(a["episode_lengths"]) <= 512 and len(a["episode_returns"]) > 10


@pytest.mark.parametrize("schedule, clips", [("constant", [0.2, 0.2]), ("linear", [0.1, 0.0])])
def test_linear_schedule_scales_clip_and_lr_with_the_budget_left(monkeypatch, schedule, clips):
    """rl-zoo's lin_<x>: x times the share of the budget left after each rollout, as SB3."""
    from memrl.agents.sb3_rppo import _scheduled
    from memrl.envs.registry import make
    from memrl.families import load_family

    p = load_family("recurrent_off_policy", "smoke").rppo.model_copy(
        update={"schedule": schedule, "n_epochs": 1, "clip_range": 0.2}
    )
    seen = []
    monkeypatch.setattr(ppo, "update", lambda *a: seen.append((a[1].param_groups[0]["lr"], a[5])))
    lstm_ppo.train(partial(make, "memrl/CartPole-P-v1"), p, 2 * p.n_envs * p.n_steps, 0)
    assert [c for _, c in seen] == pytest.approx(clips)
    assert [lr for lr, _ in seen] == pytest.approx([p.learning_rate * c / 0.2 for c in clips])
    sb3 = _scheduled(0.2, schedule)
    assert (sb3 if schedule == "constant" else sb3(0.5)) == pytest.approx(
        0.2 if schedule == "constant" else 0.1
    )


def test_obs_normaliser_matches_sb3_vec_normalize():
    """The zoo's normalize (obs only): the same running stats, standardising and clipping as
    SB3's VecNormalize on the same batches; frozen (update=False) it changes nothing."""
    import gymnasium as gym
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    vn = VecNormalize(
        DummyVecEnv([lambda: gym.make("CartPole-v1")] * 3), norm_obs=True, norm_reward=False
    )
    ours = ppo.ObsNormaliser(4)
    rng = np.random.default_rng(0)
    for _ in range(20):
        batch = rng.normal([0.0, 5.0, -1.0, 100.0], [1.0, 0.1, 3.0, 50.0], (3, 4))
        vn.obs_rms.update(batch)  # what VecNormalize.step_wait does in training
        np.testing.assert_allclose(ours(batch, update=True), vn.normalize_obs(batch), rtol=1e-6)
    mean = ours.rms.mean.copy()
    ours(np.full((3, 4), 1e6))  # evaluation: frozen
    np.testing.assert_array_equal(ours.rms.mean, mean)
    assert ours(np.full((1, 4), 1e6)).max() == 10.0  # clipped as VecNormalize (clip_obs=10)
    raw = np.ones((2, 4))
    assert ppo.ObsNormaliser(4, enabled=False)(raw, update=True) is raw


def test_reward_scaler_matches_sb3_vec_normalize():
    """The zoo's normalize, reward half: the same discounted-return variance, scaling,
    clipping and per-episode restart as SB3's VecNormalize."""
    import gymnasium as gym
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    vn = VecNormalize(
        DummyVecEnv([lambda: gym.make("CartPole-v1")] * 3), norm_obs=False, gamma=0.98
    )
    ours = ppo.RewardScaler(3, 0.98)
    rng = np.random.default_rng(1)
    for _ in range(50):
        r = rng.normal(1.0, 2.0, 3)
        dones = rng.random(3) < 0.1
        vn._update_reward(r)  # what VecNormalize.step_wait does in training
        want = vn.normalize_reward(r)
        vn.returns[dones] = 0
        np.testing.assert_allclose(ours(r, dones.astype(np.float32)), want, rtol=1e-5)
    assert ppo.RewardScaler(3, 0.98, enabled=False)(r, dones) is r


def test_normalised_training_is_deterministic_and_standardises_its_inputs(monkeypatch):
    from memrl.envs.registry import make
    from memrl.families import load_family

    p = load_family("recurrent_off_policy", "smoke").rppo.model_copy(update={"normalize": True})
    seen = []
    step = ppo.Branch.step

    def spy(self, obs, start, state):
        seen.append(obs.numpy().copy())
        return step(self, obs, start, state)

    def run():
        return lstm_ppo.train(partial(make, "memrl/CartPole-P-v1"), p, 1024, 5, Evals(2))

    a = run()
    monkeypatch.setattr(ppo.Branch, "step", spy)
    b = run()
    assert a["episode_returns"] == b["episode_returns"] and a["eval_returns"] == b["eval_returns"]
    x = np.concatenate(seen[len(seen) // 2 :])  # the later half: the stats have settled
    assert np.abs(x.mean(0)).max() < 0.5 and 0.5 < x.std(0).min() and x.std(0).max() < 2.0
