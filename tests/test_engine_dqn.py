"""MinAtar's DQN on the engine (memrl.engines.minatar_dqn) against torch running the
reference's update (kenjyoung/MinAtar examples/dqn.py:204-245, :282) from the same initial
weights on the same batches, and the engine's run as a job runs it."""

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
    update, names = E.make_update(HP), E.torch_names(HP)
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
