"""MinAtar's DQN on the engine (memrl.engines.minatar_dqn) against torch running the
reference's update (kenjyoung/MinAtar examples/dqn.py:204-245, :282) from the same initial
weights on the same batches; the compiled run's buffer, batches and updates against its own
transitions and the per-update step; and the engine's run as a job runs it."""

from __future__ import annotations

import copy

import numpy as np
import pytest

pytest.importorskip("jax")

from memrl.families import load_family  # noqa: E402

HP = load_family("experience_replay", "default").stream.dqn


@pytest.fixture(scope="module")
def E():
    """The engine, imported by the tests that run it (it pins the process that imports it to
    one core): not at collection, so the session's other tests keep their cores until then."""
    from memrl.engines import minatar_dqn

    return minatar_dqn


SHAPE, ACTIONS, BATCH = (4, 10, 10), 3, 32


def batches(n: int, seed: int = 0):
    """``n`` batches of MinAtar-like transitions: 0/1 frames, rewards in {0, 1}, terminals."""
    rng = np.random.default_rng(seed)
    for _ in range(n):
        s = (rng.random((BATCH, *SHAPE)) < 0.1).astype(np.uint8)
        s2 = (rng.random((BATCH, *SHAPE)) < 0.1).astype(np.uint8)
        a = rng.integers(ACTIONS, size=BATCH).astype(np.int32)
        r = (rng.random(BATCH) < 0.2).astype(np.float32)
        yield s, a, r, s2, rng.random(BATCH) < 0.1


def reference_update(policy, target, opt, s, a, r, s2, terminal, gamma):
    """dqn.py's train(): Q of the taken actions, the target's max on non-terminal next
    states only, Huber loss (smooth_l1_loss(target, Q_s_a)), one optimiser step."""
    import torch as th

    s, s2 = th.as_tensor(s, dtype=th.float32), th.as_tensor(s2, dtype=th.float32)
    q_s_a = policy(s).gather(1, th.as_tensor(a, dtype=th.int64)[:, None])
    live = th.as_tensor(np.flatnonzero(~terminal), dtype=th.int64)
    q_next = th.zeros(len(a), 1)
    if len(live):
        q_next[live] = target(s2.index_select(0, live)).detach().max(1)[0].unsqueeze(1)
    loss = th.nn.functional.smooth_l1_loss(th.as_tensor(r)[:, None] + gamma * q_next, q_s_a)
    opt.zero_grad()
    loss.backward()
    opt.step()


def test_initial_weights_are_torchs(E):
    import torch as th

    th.manual_seed(3)
    net = E.torch_q_network(SHAPE, ACTIONS, HP)
    params = E.init_params(SHAPE, ACTIONS, HP, 3)
    names = E.torch_names(HP)
    for full, t in net.state_dict().items():
        prefix, _, kind = full.rpartition(".")
        np.testing.assert_array_equal(np.asarray(params[f"{names[prefix]}.{kind}"]), t.numpy())


def test_the_written_out_gradient_is_jaxs_gradient_of_the_loss(E):
    """:func:`gradients` (the update's backward pass, written out for its layouts) against
    ``jax.grad`` of the same loss, on batches with terminals, for a one- and a two-layer
    torso."""
    import jax
    import jax.numpy as jnp

    for arch in ([128], [64, 32]):
        hp = HP.model_copy(update={"net_arch": arch})
        depth = len(arch)
        params = E.init_params(SHAPE, ACTIONS, hp, 5)
        target = E.init_params(SHAPE, ACTIONS, hp, 6)
        for s, a, r, s2, term in batches(3, seed=len(arch)):
            x, x2 = jnp.asarray(s, jnp.float32), jnp.asarray(s2, jnp.float32)
            want = jax.grad(E.loss)(params, target, x, a, r, x2, term, hp)
            q_next = jnp.max(E.q_values(target, x2, depth), axis=1)
            y = r + hp.gamma * jnp.where(term, 0.0, q_next)
            cols, pres, acts, q = E.forward(params, x, depth)
            d = jnp.clip(q[a, jnp.arange(BATCH)] - y, -1.0, 1.0) / BATCH
            dq = jnp.where(jnp.arange(ACTIONS)[:, None] == a[None, :], d, 0.0)
            got = E.gradients(params, cols, pres, acts, dq, depth)
            assert got.keys() == want.keys()
            for k in want:
                scale = float(jnp.abs(want[k]).max()) + 1e-12
                assert float(jnp.abs(got[k] - want[k]).max()) <= 1e-5 * scale, k


def test_updates_equal_torchs_reference_update(E):
    """400 updates (the target copied every 100) from the same weights on the same batches:
    every parameter within float rounding of torch's, far below one update's size."""
    import jax
    import jax.numpy as jnp
    import torch as th

    th.manual_seed(0)
    policy = E.torch_q_network(SHAPE, ACTIONS, HP)
    target = copy.deepcopy(policy)
    o = HP.optimizer
    opt = th.optim.RMSprop(
        policy.parameters(), lr=HP.learning_rate, alpha=o.alpha, eps=o.eps, centered=o.centered
    )
    params = E.init_params(SHAPE, ACTIONS, HP, 0)
    tgt = jax.tree.map(jnp.array, params)
    sq, ga = (jax.tree.map(jnp.zeros_like, params) for _ in range(2))
    update, names = E.make_step(HP), E.torch_names(HP)
    first = None
    for k, (s, a, r, s2, term) in enumerate(batches(400), start=1):
        reference_update(policy, target, opt, s, a, r, s2, term, HP.gamma)
        params, sq, ga = update(params, tgt, sq, ga, s, a, r, s2, term)
        if k % 100 == 0:
            target.load_state_dict(policy.state_dict())
            tgt = jax.tree.map(jnp.array, params)
        if k == 1:
            first = {n: np.asarray(v).copy() for n, v in params.items()}
    worst, moved = 0.0, 0.0
    init = E.init_params(SHAPE, ACTIONS, HP, 0)
    for full, t in policy.state_dict().items():
        prefix, _, kind = full.rpartition(".")
        name = f"{names[prefix]}.{kind}"
        worst = max(worst, float(np.abs(np.asarray(params[name]) - t.numpy()).max()))
        moved = max(moved, float(np.abs(first[name] - np.asarray(init[name])).max()))
    assert moved > 1e-5  # one update moves the weights by this much
    print(f"max |engine - torch| after 400 updates: {worst:.2e} (one update: {moved:.2e})")
    assert worst < 1e-6, worst  # float rounding, not a setting


def test_a_run_is_deterministic_and_learns_nothing_before_the_replay_start(E):
    from functools import partial

    from memrl.envs.registry import make

    hp = HP.model_copy(update={"learning_starts": 300})
    env_fn = partial(make, "MinAtar/Breakout-v1")
    logs = [E.train(env_fn, hp, 500, 1, final={}) for _ in range(2)]
    assert logs[0]["episode_returns"] == logs[1]["episode_returns"]
    assert sum(logs[0]["episode_lengths"]) <= 500 and logs[0]["memory_size"] == 500
    before = {}
    E.train(env_fn, hp, 300, 1, final=before)  # no update yet: the initial weights
    init = E.init_params((4, 10, 10), 3, hp, 1)
    for k, v in before["params"].items():
        np.testing.assert_array_equal(v, np.asarray(init[k]))


def test_floyds_sample_is_distinct_and_uniform(E):
    """Every draw k distinct indices below the size; each index and each pair as often as a
    uniform k-subset has them (4 standard errors); the size k gives a permutation."""
    import jax
    import jax.numpy as jnp

    size, k, n = 10, 4, 20_000
    draw = jax.jit(jax.vmap(lambda key: E.sample_indices(key, jnp.int32(size), k)))
    idx = np.asarray(draw(jax.random.split(jax.random.key(0), n)))
    assert idx.min() >= 0 and idx.max() < size
    assert all(len(set(row)) == k for row in idx)
    hits = np.bincount(idx.ravel(), minlength=size) / n
    p = k / size
    assert np.abs(hits - p).max() < 4 * np.sqrt(p * (1 - p) / n), hits
    pair = np.mean([(0 in row) and (9 in row) for row in idx.tolist()])
    q = k * (k - 1) / (size * (size - 1))
    assert abs(pair - q) < 4 * np.sqrt(q * (1 - q) / n), pair
    whole = np.asarray(E.sample_indices(jax.random.key(1), jnp.int32(k), k))
    assert sorted(whole.tolist()) == list(range(k))


def test_the_compiled_runs_batches_are_its_transitions_and_its_updates_the_steps(E):
    """A short run with a small buffer (it wraps) traced: each update's batch is rows of the
    buffer its transitions fill (row t % capacity), distinct and below the filled size; the
    updates happen where the reference trains (t > the replay start, every train_freq
    frames); the run's weights are those of the per-update step fed the same batches, the
    target copied every target_update_period updates; actions before the replay start
    uniform."""
    import jax
    import jax.numpy as jnp

    from memrl.envs import minatar_jax as mj

    hp = HP.model_copy(
        update={"learning_starts": 300, "buffer_size": 500, "target_update_period": 40,
                "train_freq": 2}
    )  # fmt: skip
    game, steps, seed = mj.GAMES["MinAtar/Breakout-v1"], 1_400, 2
    init, run = E.make_train(hp, game, steps, trace=True)
    carry, out = run(init(seed), steps)
    s, s2, a, r, term, learn, idx = (np.asarray(x) for x in out[3:])
    t = np.arange(steps)
    np.testing.assert_array_equal(learn, (t > hp.learning_starts) & (t % hp.train_freq == 0))
    assert np.bincount(a[: hp.learning_starts], minlength=3).min() > 60  # uniform at random
    step = E.make_step(hp)
    params = E.init_params(game.obs_shape, game.n_actions, hp, seed)
    target = jax.tree.map(jnp.array, params)
    sq, ga = (jax.tree.map(jnp.zeros_like, params) for _ in range(2))
    cap, updates = hp.buffer_size, 0
    rows = np.empty(cap, int)
    for i in range(steps):
        rows[i % cap] = i
        if not learn[i]:
            continue
        size = min(i + 1, cap)
        b = idx[i]
        assert len(set(b.tolist())) == hp.batch_size and b.max() < size
        src = rows[b]  # the steps whose transitions those rows hold
        params, sq, ga = step(params, target, sq, ga, s[src], a[src], r[src], s2[src], term[src])
        updates += 1
        if updates % hp.target_update_period == 0:
            target = jax.tree.map(jnp.array, params)
    assert int(carry.updates) == updates == learn.sum()
    for k, v in params.items():
        np.testing.assert_allclose(np.asarray(carry.params[k]), np.asarray(v), atol=1e-6)
        np.testing.assert_allclose(np.asarray(carry.target[k]), np.asarray(target[k]), atol=1e-6)


def test_no_product_in_the_update_sums_more_than_a_k_block(E):
    """Every dot in the compiled update sums at most ``K_CHUNK`` terms: a longer one is
    blocked by Eigen at the L1 size it reads at run time, and the same job gave other bytes
    on CPUs with other L1 sizes (memrl.engines.nets.chunked_matmul). Fails on the plain
    ``w @ h`` forward (K = 1024) and the convolution's weight gradient (K = 2048)."""
    import re

    import jax
    import jax.numpy as jnp

    from memrl.engines.nets import K_CHUNK

    params = E.init_params(SHAPE, ACTIONS, HP, 0)
    zeros = jax.tree.map(jnp.zeros_like, params)
    s, a, r, s2, t = next(batches(1))
    hlo = jax.jit(E.make_update(HP)).lower(params, params, zeros, zeros, s, a, r, s2, t)
    text = hlo.compile().as_text()
    dots = re.findall(
        r"= f32\[[^\]]*\][^ ]* dot\(([^)]*)\), (lhs_batch_dims=\{[^}]*\}, )?"
        r"(rhs_batch_dims=\{[^}]*\}, )?lhs_contracting_dims=\{(\d+)\}",
        text,
    )
    assert dots, "no dot found in the compiled update"
    shapes = dict(re.findall(r"(%[\w.\-]+) = f32\[([\d,]*)\]", text))
    longest = 0
    for operands, _, _, dim in dots:
        lhs = re.search(r"(%[\w.\-]+)", operands).group(1)
        longest = max(longest, int(shapes[lhs].split(",")[int(dim)]))
    assert longest <= K_CHUNK


def test_chunked_matmul_is_the_product(E):
    """The chunked product is ``a @ b`` up to float rounding, for a K with a divisor near
    the chunk and one equal to it."""
    import jax.numpy as jnp

    from memrl.engines.nets import chunked_matmul

    rng = np.random.default_rng(0)
    for k in (1024, 2048, 1600, 96):
        a, b = rng.standard_normal((16, k), np.float32), rng.standard_normal((k, 32), np.float32)
        got = np.asarray(chunked_matmul(jnp.asarray(a), jnp.asarray(b)))
        np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-3)
