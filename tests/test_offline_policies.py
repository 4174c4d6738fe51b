"""Offline sequence policies on the Passive T-Maze (memrl.agents.offline_policies, memrl.agents.cloning, memrl.envs.tmaze_oracle): a decision
transformer with context K falls to chance beyond K, RATE's memory tokens carry the cue
across segments, and every memory core trains without numerical failure."""

import numpy as np
import pytest
import torch as th

from memrl.agents import cloning, offline_policies
from memrl.envs import tmaze_oracle
from memrl.envs.pomdp import PassiveTMaze


def data(K: int, episodes: int = 128):
    return [tmaze_oracle.oracle_trajectories(L, episodes, 1000 * L) for L in (K, 2 * K, 3 * K)]


def test_oracle_trajectories_always_succeed_and_hide_the_cue_after_step_0():
    d = tmaze_oracle.oracle_trajectories(5, 40, 0)
    assert d.observations.shape == (40, 5, 2) and d.actions.shape == (40, 5)
    cue = d.observations[:, 0, 0]
    assert set(cue) == {-1.0, 1.0}
    assert (d.observations[:, 1:, 0] == 0).all()  # the cue is seen once
    up, down = PassiveTMaze.UP, PassiveTMaze.DOWN
    assert (d.actions[:, -1] == np.where(cue > 0, up, down)).all()
    assert (d.actions[:, :-1] == PassiveTMaze.RIGHT).all()  # the one move that advances
    assert (d.returns_to_go == 1).all()
    again = tmaze_oracle.oracle_trajectories(5, 40, 0)
    assert all(np.array_equal(a, b) for a, b in zip(d, again, strict=True))  # deterministic


def test_rate_remembers_beyond_its_context_where_the_decision_transformer_cannot():
    K = 2
    th.manual_seed(0)
    out = {}
    for model in ("dt", "rate", "rate_bptt"):
        p = offline_policies.OfflineParams(model=model, context=K, epochs=20)
        policy, losses = cloning.train(data(K), p, seed=0)
        assert losses[-1] < losses[0]
        out[model] = [cloning.success_rate(policy, xi, 40, 10**6) for xi in (K, 4 * K)]
    assert out["dt"][0] == 1.0 and out["dt"][1] <= 0.7  # within K it recalls; beyond, chance
    assert out["rate_bptt"] == [1.0, 1.0]  # memory trained through every segment
    assert out["rate"][0] == 1.0  # the reference trainer (memory detached) learns within K


def test_truncation_stops_gradients_at_segment_boundaries():
    """The segment trainer carries a core's state across segments detached: a loss in the
    second segment moves nothing through the first segment's inputs."""
    from memrl.agents.cloning import _detach

    th.manual_seed(0)
    p = offline_policies.OfflineParams(model="gru", context=2)
    policy = offline_policies.make_policy(2, 2, p)
    x = th.randn(1, 4, p.d_model, requires_grad=True)
    y1, state = policy.core(x[:, :2], policy.core.initial_state(1))
    y2, _ = policy.core(x[:, 2:], _detach(state))
    y2.sum().backward()
    assert x.grad[:, :2].abs().sum() == 0 and x.grad[:, 2:].abs().sum() > 0


@pytest.mark.parametrize("model", ["gru", "lstm", "ffm", "s5", "window", "rtrl"])
def test_every_core_learns_the_maze_within_its_context_without_nan(model):
    lr = 1e-2 if model == "rtrl" else 3e-3  # RTRL: one step per trajectory, not per segment
    p = offline_policies.OfflineParams(model=model, context=4, epochs=20, learning_rate=lr)
    policy, losses = cloning.train(data(4), p, seed=0)
    assert np.isfinite(losses).all()
    assert cloning.success_rate(policy, 4, 40, 10**6) == 1.0


def test_the_card_classifies_by_its_declared_rule():
    from memrl.families.recurrent_off_policy.card import FAILS, LONG, SHORT, card, classify

    K, hit, miss = 8, (1.0, 0.96), (0.5, 0.4)
    assert classify({4: hit, 8: hit, 16: miss, 32: miss}, K) == (SHORT, 1.0)
    assert classify({4: hit, 8: hit, 16: hit, 32: hit, 128: miss}, K) == (LONG, 4.0)
    assert classify({4: hit, 8: miss, 16: hit}, K) == (FAILS, 0.5)
    assert classify({4: (0.92, 0.5), 8: hit, 16: miss}, K)[0] == FAILS  # CI reaches chance
    runs = [
        {"core": c, "K": K, "seed": s, "success": {"4": 1.0, "8": 1.0, "16": v}, "losses": [0.1]}
        for c, v in (("dt", 0.5), ("rate", 1.0))
        for s in range(5)
    ]
    out = card(runs, reps=500)
    assert [c["class"] for c in out["classes"]] == [SHORT, LONG]
    assert len(out["rows"]) == 6 and out["rows"][0]["n_seeds"] == 5


@pytest.mark.parametrize("model", ["rate", "dt", "gru", "lstm", "ffm", "s5", "window"])
def test_acting_step_by_step_reads_the_trajectory_as_training_does(model):
    """Sequence mode == step mode: the logits an actor computes one step at a time equal
    the training forward pass over the whole trajectory (the decision transformer: within
    its first window, after which it slides by design)."""
    th.manual_seed(0)
    K, T = 3, 10  # several segments, the last one partial
    policy = offline_policies.make_policy(
        2, 4, offline_policies.OfflineParams(model=model, context=K)
    ).eval()
    d = tmaze_oracle.oracle_trajectories(T, 4, 0)
    obs, act, rtg = (th.as_tensor(a) for a in d)
    with th.no_grad():
        whole = policy(obs, act, rtg)
    actor = cloning.Actor(policy, 4)
    steps = th.stack([actor.logits(t, obs, act, rtg) for t in range(T)], 1)
    upto = K if model == "dt" else T
    th.testing.assert_close(steps[:, :upto], whole[:, :upto], rtol=1e-4, atol=1e-5)


def test_the_oracle_data_set_is_byte_identical_on_every_build(tmp_path):
    import hashlib

    def digest(root):
        return {
            str(f.relative_to(root)): hashlib.md5(f.read_bytes()).hexdigest()
            for f in sorted(root.rglob("*.npy"))
        }

    a, b = tmaze_oracle.save_oracle(tmp_path / "a"), tmaze_oracle.save_oracle(tmp_path / "b")
    assert digest(a) == digest(b) and len(digest(a)) == 3 * len(tmaze_oracle.ORACLE_LENGTHS)
    (d,) = tmaze_oracle.load_oracle(a, [8], 10)
    fresh = tmaze_oracle.oracle_trajectories(8, tmaze_oracle.ORACLE_EPISODES, 8000)
    assert all(np.array_equal(x, y[:10]) for x, y in zip(d, fresh, strict=True))
    with pytest.raises(FileNotFoundError, match="make data"):
        tmaze_oracle.load_oracle(a, [5], 10)
