import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from memrl.agents.per_dqn import PrioritizedDQN
from memrl.agents.sb3 import silent
from memrl.memory.prioritized import PrioritizedReplayBuffer

OBS = spaces.Box(-10, 10, (2,), np.float32)
ACT = spaces.Discrete(2)


def filled(n_add: int, size: int = 8, **kw) -> PrioritizedReplayBuffer:
    buf = PrioritizedReplayBuffer(size, OBS, ACT, device="cpu", **kw)
    for i in range(n_add):
        o = np.full((1, 2), i, np.float32)
        buf.add(o, o + 1, np.array([[i % 2]]), np.array([float(i)]), np.array([False]), [{}])
    return buf


def test_is_weights_match_brute_force():
    np.random.seed(0)
    buf = filled(6, alpha=0.7, beta0=0.5)
    td = np.array([0.1, 2.0, 0.5, 1.0, 3.0, 0.05])
    buf.update_priorities(np.arange(6), td)
    s = buf.sample(32)
    p = (np.abs(td) + buf.eps) ** 0.7
    probs = p / p.sum()
    w = (6 * probs[s.indices]) ** -0.5
    np.testing.assert_allclose(s.weights.numpy().ravel(), w / w.max(), rtol=1e-5)
    # the sample's contents are those stored at the sampled indices
    np.testing.assert_allclose(s.rewards.numpy().ravel(), s.indices.astype(float))


def test_beta_annealing_and_alpha_zero_is_uniform():
    buf = filled(4, alpha=0.0, beta0=0.4)
    buf.update_priorities(np.arange(4), [5.0, 0.0, 1.0, 9.0])
    np.testing.assert_allclose(buf.tree[np.arange(4)], 1.0)
    buf.set_progress(0.5)
    assert buf.beta == pytest.approx(0.7)
    buf.set_progress(2.0)
    assert buf.beta == 1.0


def test_wrap_around_resets_priority_of_overwritten_slots():
    buf = filled(4, size=4)
    buf.update_priorities(np.arange(4), [0.0, 0.0, 0.0, 0.0])
    assert buf.tree.total == pytest.approx(4 * buf.eps**0.6)
    buf.update_priorities(np.array([1]), [3.0])  # max priority becomes 3
    # two more transitions overwrite slots 0 and 1 and enter at max priority
    for i in (10, 11):
        o = np.full((1, 2), i, np.float32)
        buf.add(o, o, np.array([[0]]), np.array([float(i)]), np.array([False]), [{}])
    assert buf.full and buf.pos == 2
    np.testing.assert_allclose(buf.tree[np.array([0, 1])], (3.0 + buf.eps) ** 0.6)
    np.testing.assert_allclose(buf.rewards[:2, 0], [10, 11])
    np.random.seed(1)
    assert set(buf.sample(256).indices) <= {0, 1, 2, 3}


def test_multiple_envs_index_each_env_slot():
    buf = PrioritizedReplayBuffer(8, OBS, ACT, device="cpu", n_envs=2)
    o = np.zeros((2, 2), np.float32)
    buf.add(o, o, np.array([[0], [1]]), np.array([1.0, 2.0]), np.array([False, False]), [{}, {}])
    buf.update_priorities(np.array([0]), [0.0])  # env 0's transition ~never sampled
    np.random.seed(0)
    s = buf.sample(64)
    assert np.all(s.indices == 1) and np.all(s.rewards.numpy() == 2.0)


def test_rejects_bad_arguments():
    with pytest.raises(ValueError):
        PrioritizedReplayBuffer(
            8, OBS, ACT, optimize_memory_usage=True, handle_timeout_termination=False
        )
    with pytest.raises(ValueError):
        PrioritizedReplayBuffer(8, OBS, ACT, beta0=1.5)


def test_prioritized_dqn_trains_and_updates_priorities():
    model = PrioritizedDQN(
        "MlpPolicy",
        gym.make("CartPole-v1"),
        learning_starts=50,
        batch_size=16,
        train_freq=4,
        buffer_size=1000,
        seed=0,
        device="cpu",
        policy_kwargs={"net_arch": [16]},
    )
    before = [p.detach().clone() for p in model.q_net.parameters()]
    silent(model).learn(300)
    buf = model.replay_buffer
    assert isinstance(buf, PrioritizedReplayBuffer)
    stored = buf.tree[np.arange(buf.pos)]
    assert len(np.unique(stored)) > 10  # priorities now differ by TD error
    assert buf.beta > buf.beta0
    assert any(not (a == b).all() for a, b in zip(before, model.q_net.parameters(), strict=True))


def test_plain_sb3_dqn_accepts_the_buffer():
    from stable_baselines3 import DQN

    model = DQN(
        "MlpPolicy",
        "CartPole-v1",
        replay_buffer_class=PrioritizedReplayBuffer,
        learning_starts=20,
        batch_size=8,
        buffer_size=500,
        seed=0,
        device="cpu",
    )
    silent(model).learn(100)
    with pytest.raises(TypeError):
        from stable_baselines3.common.buffers import ReplayBuffer

        PrioritizedDQN("MlpPolicy", "CartPole-v1", replay_buffer_class=ReplayBuffer)


def test_reset_empties_the_priorities_like_sb3s_reset():
    np.random.seed(1)
    buf = filled(8, alpha=0.7, beta0=0.4)
    buf.update_priorities(np.arange(8), np.arange(8) * 10.0)
    buf.set_progress(0.5)
    buf.reset()
    assert buf.size() == 0 and buf.beta == 0.4 and buf.max_priority == 1.0
    o = np.zeros((1, 2), np.float32)
    for _ in range(2):
        buf.add(o, o, np.array([[0]]), np.array([0.0]), np.array([False]), [{}])
    s = buf.sample(64)
    assert set(s.indices.tolist()) <= {0, 1}  # never an index from before the reset
    np.testing.assert_allclose(s.weights.numpy(), 1.0)  # N = 2, equal priorities
