import numpy as np
import pytest
import torch as th

from memrl.memory.dnd import DND, inverse_distance_kernel, kernel_read


def filled(n=200, d=8, p=50, seed=0):
    rng = np.random.default_rng(seed)
    dnd = DND(1000, d, neighbours=p, delta=1e-3, alpha=0.1)
    keys = rng.normal(size=(n, d)).astype(np.float32)
    vals = rng.normal(size=n).astype(np.float32)
    for k, v in zip(keys, vals, strict=True):
        dnd.write(k, float(v))
    return dnd, keys, vals, rng


def test_kernel_is_inverse_squared_distance_plus_delta():
    d = th.tensor([0.0, 1.0, 3.0])
    assert th.allclose(inverse_distance_kernel(d, 1e-3), 1.0 / (d + 1e-3))


def test_lookup_matches_brute_force_kernel_average_over_p_nearest():
    dnd, keys, vals, rng = filled()
    q = rng.normal(size=(7, 8)).astype(np.float32)
    sq = ((q[:, None] - keys[None]) ** 2).sum(-1)
    nn = np.argsort(sq, 1)[:, :50]
    w = 1.0 / (np.take_along_axis(sq, nn, 1) + 1e-3)
    expected = (w * vals[nn]).sum(1) / w.sum(1)
    np.testing.assert_allclose(dnd.lookup(q), expected, rtol=1e-4)
    # the differentiable read agrees with the numpy lookup
    got, _ = dnd.read(th.from_numpy(q), dnd.search(q))
    np.testing.assert_allclose(got.detach().numpy(), expected, rtol=1e-4)


def test_a_stored_key_dominates_its_own_read():
    dnd, keys, vals, _ = filled()
    # distance 0 gives weight 1/delta = 1000, far above any neighbour's
    np.testing.assert_allclose(dnd.lookup(keys[:3]), vals[:3], atol=0.05)


def test_write_of_a_stored_key_is_the_tabular_update():
    dnd = DND(10, 2, neighbours=5, alpha=0.1)
    i = dnd.write(np.array([1.0, 2.0]), 10.0)
    assert dnd.write(np.array([1.0, 2.0]), 20.0) == i
    assert float(dnd.values[i]) == pytest.approx(10.0 + 0.1 * (20.0 - 10.0))
    assert len(dnd) == 1


def test_lru_eviction_and_empty_table():
    dnd = DND(2, 1, neighbours=1)
    assert dnd.lookup(np.zeros((2, 1))).tolist() == [0.0, 0.0]
    dnd.write(np.array([0.0]), 1.0)
    dnd.write(np.array([5.0]), 2.0)
    dnd.lookup(np.array([[0.1]]))  # touches key 0
    dnd.write(np.array([9.0]), 3.0)  # evicts key 5
    assert sorted(dnd.keys[:2, 0].tolist()) == [0.0, 9.0]


def test_gradients_reach_the_query_and_move_only_the_read_rows():
    dnd, keys, vals, rng = filled(n=100, p=5)
    h = th.from_numpy(rng.normal(size=(4, 8)).astype(np.float32)).requires_grad_(True)
    idx = dnd.search(h.detach().numpy())
    q, handle = dnd.read(h, idx)
    target = q.detach() + 1.0  # every estimate is 1 too low
    ((q - target) ** 2).mean().backward()
    assert h.grad is not None and th.isfinite(h.grad).all() and h.grad.abs().sum() > 0
    before_k, before_v = dnd.keys.clone(), dnd.values.clone()
    dnd.apply_gradients(handle, lr=0.5)
    moved = np.flatnonzero((dnd.values != before_v).numpy())
    assert set(moved) <= set(idx.ravel().tolist()) and len(moved) > 0
    assert (dnd.values[moved] > before_v[moved]).all()  # raised toward the target
    assert set(np.flatnonzero((dnd.keys != before_k).any(1).numpy())) <= set(idx.ravel().tolist())
    # cached norms follow the moved keys: a later search still matches brute force
    q2 = rng.normal(size=(3, 8)).astype(np.float32)
    k = dnd.keys[: len(dnd)].numpy()
    brute = np.sort(np.argsort(((q2[:, None] - k[None]) ** 2).sum(-1), 1)[:, :5], 1)
    assert (np.sort(dnd.search(q2), 1) == brute).all()


def test_kernel_read_shapes():
    h = th.zeros(3, 4)
    out = kernel_read(h, th.ones(3, 6, 4), th.arange(18.0).reshape(3, 6), 1e-3)
    assert out.shape == (3,)
