import numpy as np
import pytest

from memrl.agents.mfec import MFEC, discounted_returns
from memrl.agents.nec import NStepReturns
from memrl.agents.schedules import linear
from memrl.config import ConfigError
from memrl.envs.registry import make
from memrl.families import load_family


def test_epsilon_schedule():
    assert linear(0, 0, 100, 1.0, 0.1) == 1.0
    assert linear(50, 0, 100, 1.0, 0.1) == pytest.approx(0.55)
    assert linear(10_000, 0, 100, 1.0, 0.1) == pytest.approx(0.1)
    assert linear(7, 10, 100, 1.0, 0.1) == 1.0  # before the anneal starts
    assert linear(5, 0, 0, 1.0, 0.1) == 0.1 and linear(0, 0, 0, 1.0, 0.1) == 1.0  # no span


def test_monte_carlo_returns():
    np.testing.assert_allclose(discounted_returns([1.0, 0.0, 2.0], 1.0), [3.0, 2.0, 2.0])
    np.testing.assert_allclose(discounted_returns([1.0, 0.0, 2.0], 0.5), [1.5, 1.0, 2.0])


def test_n_step_targets():
    n = NStepReturns(2, 0.5)
    assert n.step("s0", 1.0, next_max_q=100.0) == []
    # s0's target: r0 + 0.5 r1 + 0.25 max Q(s2)
    assert n.step("s1", 2.0, next_max_q=8.0) == [("s0", 1.0 + 0.5 * 2.0 + 0.25 * 8.0)]
    # terminal after s2: s1 gets r1 + 0.5 r2, s2 gets r2 (no bootstrap)
    assert n.end("s2", 4.0, bootstrap=0.0) == [("s1", 2.0 + 0.5 * 4.0), ("s2", 4.0)]
    assert n.pending == []
    # a time-limit cut bootstraps from the last state
    assert NStepReturns(3, 1.0).end("x", 1.0, bootstrap=5.0) == [("x", 6.0)]


def test_mfec_writes_the_best_return_and_keys_are_reproducible():
    p = load_family("episodic_control", "smoke").mfec
    agent = MFEC(obs_dim=4, n_actions=2, p=p, seed=0)
    o = np.array([0.1, -0.2, 0.3, 0.0], dtype=np.float32)
    k1, k2 = agent.embed(o), agent.embed(o.copy())
    assert k1.tobytes() == k2.tobytes() and k1.shape == (p.key_dim,)
    agent.write_episode([k1, k1], [1, 1], [1.0, 2.0])  # returns 3 then 2 for the same key
    assert agent.q_values(k1)[1] == 3.0 and agent.memory_size == 1
    assert agent.act(k1, epsilon=0.0) == 1


def test_minatar_frames_become_float_channels_first():
    env = make("MinAtar/Breakout-v1", seed=0)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (4, 10, 10) and obs.dtype == np.float32
    assert set(np.unique(obs)) <= {0.0, 1.0} and env.observation_space.contains(obs)
    again, _ = make("MinAtar/Breakout-v1", seed=0).reset(seed=0)
    assert (obs == again).all()


def test_episodic_control_params_are_checked(tmp_path):
    import yaml

    from memrl.runtime import repo_root

    raw = yaml.safe_load((repo_root() / "params.yaml").read_text())
    ec = raw["episodic_control"]["default"]
    ec["aggregation"]["env_id"] = "CartPole-v1"
    ec["envs"][2]["methods"] = ["DQN"]  # CartPole no longer runs MFEC
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(ConfigError, match="aggregation.env_id"):
        load_family("episodic_control", "default", path)
    ec["aggregation"]["env_id"] = "MinAtar/SpaceInvaders-v1"
    ec["envs"][0]["methods"] = ["PPO"]
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(ConfigError, match=r"envs\.0\.methods"):
        load_family("episodic_control", "default", path)
    ec["envs"][0]["methods"] = ["DQN"]
    ec["envs"][0]["env_id"] = "MinAtar/Pong-v1"
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(ConfigError, match="unknown gymnasium env 'MinAtar/Pong-v1'"):
        load_family("episodic_control", "default", path)


def test_dqn_epsilon_anneals_from_the_replay_start_as_minatar():
    """MinAtar's DQN (examples/dqn.py:164-171): epsilon 1 until the replay starts, then
    linear to its final value over its 100,000 frames from there, whatever the budget (50k
    here: the run ends mid-anneal); tests/test_minatar_dqn.py checks it against the source."""
    from memrl.agents.sb3_dqn import minatar_epsilon

    hp = load_family("episodic_control", "default").dqn_for("MinAtar/Breakout-v1")
    total = 50_000
    eps = minatar_epsilon(hp, total)
    at = lambda step: eps(1 - step / total)  # noqa: E731 - SB3 passes the progress remaining
    assert at(0) == at(hp.learning_starts) == 1.0
    assert at(hp.learning_starts + hp.exploration_steps // 4) == pytest.approx(0.775)
    assert at(total) == pytest.approx(1 - 0.9 * (total - hp.learning_starts) / hp.exploration_steps)
