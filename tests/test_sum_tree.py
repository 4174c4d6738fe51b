import numpy as np
import pytest

from memrl.memory.sum_tree import SumTree


def brute_force_find(p: np.ndarray, mass: np.ndarray) -> np.ndarray:
    return np.searchsorted(np.cumsum(p), mass, side="right")


@pytest.mark.parametrize("capacity", [1, 2, 5, 8, 100, 1000])
def test_find_matches_prefix_sums(capacity):
    rng = np.random.default_rng(capacity)
    p = rng.random(capacity) + 0.01
    tree = SumTree(capacity)
    tree.update(np.arange(capacity), p)
    assert tree.total == pytest.approx(p.sum())
    mass = rng.random(500) * p.sum()
    np.testing.assert_array_equal(tree.find(mass), brute_force_find(p, mass))


def test_sampling_distribution_matches_probabilities():
    rng = np.random.default_rng(0)
    p = np.array([0.0, 1.0, 2.0, 0.0, 5.0, 0.5, 1.5])
    tree = SumTree(len(p))
    tree.update(np.arange(len(p)), p)
    draws = np.concatenate([tree.sample(64, rng) for _ in range(3000)])
    freq = np.bincount(draws, minlength=len(p)) / draws.size
    np.testing.assert_allclose(freq, p / p.sum(), atol=0.005)
    assert freq[0] == 0 and freq[3] == 0  # zero priority is never sampled


def test_update_refreshes_ancestors_and_scalar_path():
    tree = SumTree(6)
    tree.update(np.arange(6), 1.0)
    tree.update(3, 10.0)  # scalar fast path
    tree.update(np.array([0, 5]), np.array([0.0, 2.0]))  # vector path
    assert tree.total == pytest.approx(1 + 1 + 1 + 10 + 1 + 2 - 1)
    np.testing.assert_allclose(tree[np.arange(6)], [0, 1, 1, 10, 1, 2])
    # every inner node equals the sum of its children
    for node in range(1, tree.size):
        assert tree.tree[node] == pytest.approx(tree.tree[2 * node] + tree.tree[2 * node + 1])


def test_padding_leaves_never_returned_at_the_edge():
    tree = SumTree(5)  # 8 leaves, 3 of padding
    tree.update(np.arange(5), [1, 1, 1, 1, 1e-12])
    idx = tree.find(np.array([np.nextafter(tree.total, 0), tree.total * 0.9999999]))
    assert np.all(idx < 5)


def test_bad_input_raises():
    tree = SumTree(4)
    with pytest.raises(IndexError):
        tree.update(4, 1.0)
    with pytest.raises(ValueError):
        tree.update(0, -1.0)
    with pytest.raises(ValueError):
        tree.update(0, np.nan)
    with pytest.raises(ValueError):
        SumTree(4).sample(3)  # empty tree
    with pytest.raises(ValueError):
        SumTree(0)
