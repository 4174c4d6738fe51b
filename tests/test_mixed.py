import numpy as np
import pytest
from gymnasium import spaces

from memrl.memory.mixed import MixedReplayBuffer, Transitions

OBS = spaces.Box(-10, 10, (3,), np.float32)
ACT = spaces.Box(-2, 2, (1,), np.float32)


def prior(n: int) -> Transitions:
    return Transitions(
        observations=np.full((n, 3), -1, np.float32),
        actions=np.zeros((n, 1), np.float32),
        rewards=np.full((n,), -7.0, np.float32),
        next_observations=np.zeros((n, 3), np.float32),
        dones=np.zeros((n,), np.float32),
    )


def test_batches_mix_at_the_fixed_ratio():
    buf = MixedReplayBuffer(100, OBS, ACT, device="cpu", prior=prior(50), prior_fraction=0.25)
    for _ in range(10):
        o = np.ones((1, 3), np.float32)
        buf.add(o, o, np.zeros((1, 1)), np.array([1.0]), np.array([False]), [{}])
    s = buf.sample(64)
    r = s.rewards.numpy().ravel()
    assert s.observations.shape == (64, 3) and s.actions.shape == (64, 1)
    assert (r == -7.0).sum() == 16 and (r == 1.0).sum() == 48


def test_validates_prior():
    with pytest.raises(ValueError):
        MixedReplayBuffer(10, OBS, ACT, prior=None)
    with pytest.raises(ValueError):
        MixedReplayBuffer(10, OBS, ACT, prior=prior(5), prior_fraction=1.0)
    bad = prior(5)._replace(
        observations=np.zeros((5, 4), np.float32), next_observations=np.zeros((5, 4), np.float32)
    )
    with pytest.raises(ValueError, match="shape"):
        MixedReplayBuffer(10, OBS, ACT, prior=bad)


def test_save_load_roundtrip(tmp_path):
    p = prior(7)
    p.save(tmp_path / "d")
    q = Transitions.load(tmp_path / "d")
    for a, b in zip(p, q, strict=True):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(FileNotFoundError, match="make data"):
        Transitions.load(tmp_path / "missing")
    (tmp_path / "d" / "rewards.npy").unlink()
    with pytest.raises(FileNotFoundError, match="rewards.npy"):
        Transitions.load(tmp_path / "d")
