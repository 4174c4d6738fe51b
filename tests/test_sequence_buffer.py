import numpy as np
import pytest

from memrl.memory.sequence import SequenceReplayBuffer


def episode(ep_id: int, n: int, terminated: bool = True):
    """Observations encode (episode, step) so a sample shows where it came from."""
    obs = np.array([[ep_id, t] for t in range(n + 1)], dtype=np.float32)
    actions = np.array([[ep_id * 100 + t] for t in range(n)], dtype=np.float32)
    rewards = np.array([ep_id * 1000 + t for t in range(n)], dtype=np.float32)
    return obs, actions, rewards, terminated


def test_windows_never_cross_episodes_and_align_every_field():
    buf = SequenceReplayBuffer(10_000, seq_len=8, seed=0)
    for i, n in enumerate([3, 20, 8, 50]):
        buf.add_episode(*episode(i + 1, n, terminated=i % 2 == 0))
    s = buf.sample(256)
    real = s.mask == 1
    ep = s.obs[..., 0]
    for b in range(256):
        ids = set(ep[b][real[b]].tolist())
        assert len(ids) == 1  # one episode per window
        steps = s.obs[b, real[b], 1]
        assert (np.diff(steps) == 1).all()  # consecutive
    e, t = s.obs[..., 0], s.obs[..., 1]
    np.testing.assert_array_equal(s.next_obs[..., 1][real], (t + 1)[real])
    np.testing.assert_array_equal(s.actions[..., 0][real], (e * 100 + t)[real])
    np.testing.assert_array_equal(s.rewards[real], (e * 1000 + t)[real])
    # previous action/reward: the step before, 0 at an episode's first step
    prev_ok = np.where(t > 0, e * 100 + t - 1, 0)
    np.testing.assert_array_equal(s.prev_actions[..., 0][real], prev_ok[real])
    # padding is zero and masked out
    assert (s.obs[~real] == 0).all() and (s.rewards[~real] == 0).all()
    # short episodes are padded: the 3-step episode gives exactly 3 real steps
    short = ep[:, 0] == 1
    assert short.any() and (real[short].sum(1) == 3).all()


def test_done_only_on_a_terminal_last_step():
    buf = SequenceReplayBuffer(1000, seq_len=4, seed=1)
    buf.add_episode(*episode(1, 4, terminated=True))
    buf.add_episode(*episode(2, 4, terminated=False))  # time-limit cut: bootstrap, no done
    s = buf.sample(64)
    for b in range(64):
        if s.obs[b, 0, 0] == 1:
            assert s.dones[b].tolist() == [0, 0, 0, 1]
        else:
            assert s.dones[b].sum() == 0


def test_capacity_drops_oldest_episodes_and_bad_input():
    buf = SequenceReplayBuffer(25, seq_len=4)
    for i in range(4):
        buf.add_episode(*episode(i + 1, 10))
    assert len(buf) == 20 and [e.obs[0, 0] for e in buf.episodes] == [3, 4]
    with pytest.raises(ValueError, match="n \\+ 1 observations"):
        buf.add_episode(np.zeros((3, 2)), np.zeros((3, 1)), np.zeros(3), True)
    with pytest.raises(ValueError, match="empty"):
        SequenceReplayBuffer(10, 4).sample(2)
