"""PPO with any memory core (agents/ppo.py): each core's fused unroll over a segment, reset
where its paper resets it, equals acting step by step; the previous-action input; the
clipped value loss; every core trains a few updates on a tiny POPGym task; the family's
PPO-<core> methods and their hyperparameters."""

from functools import partial

import numpy as np
import pytest
import torch as th

from memrl.agents import ppo
from memrl.agents.contract import Evals
from memrl.memory.cores import CORES

TASK = "popgym/RepeatPreviousEasy-v0"


def tiny(core: str, **kw) -> ppo.PPOParams:
    """The smoke profile's POPGym PPO with ``core``."""
    from memrl.families import load_family

    hp = load_family("recurrent_off_policy", "smoke").ppo_popgym
    return hp.model_copy(update={"core": core, **kw})


@pytest.mark.parametrize("core", sorted(CORES))
def test_unroll_equals_stepping_with_resets(core):
    """Over a segment with episode starts inside it, the training pass (pieces, or S5's
    in-scan resets) gives the outputs acting gave step by step from the same stored state."""
    th.manual_seed(0)
    T, n, d = 12, 3, 5
    branch = ppo.Branch(d, tiny(core), (2, 1))
    x = th.randn(T, n, d)
    starts = np.zeros((T, n), np.float32)
    starts[0, 1] = starts[4, 0] = starts[5, 0] = starts[11, 2] = starts[7, 1] = 1
    with th.no_grad():
        s = branch.initial_state(n)
        for _ in range(3):  # a state with something in it, as at a rollout's start
            _, s = branch.step(th.randn(n, d), th.zeros(n), s)
        fused = branch.unroll(x, starts, s)
        outs = []
        for t in range(T):
            o, s = branch.step(x[t], th.as_tensor(starts[t]), s)
            outs.append(o)
    for k in range(2):
        assert th.allclose(fused[k], th.stack([o[k] for o in outs]), atol=1e-4), core


def test_only_s5_resets_inside_its_scan():
    """S5 (Lu et al.) resets in the scan; the GRU, LSTM and FFM are cut at episode starts."""
    scan = {c for c in CORES if ppo.Branch(3, tiny(c), (1,)).in_scan}
    assert scan == {"s5"}


def test_a_reset_forgets_what_came_before():
    """At an episode start the output does not depend on the steps before it (every core)."""
    T, n, d = 6, 2, 4
    starts = np.zeros((T, n), np.float32)
    starts[3] = 1
    for core in CORES:
        th.manual_seed(1)
        branch = ppo.Branch(d, tiny(core), (2,))
        a, b = th.randn(T, n, d), th.randn(T, n, d)
        b[3:] = a[3:]
        with th.no_grad():
            s = branch.initial_state(n)
            (ya,), (yb,) = branch.unroll(a, starts, s), branch.unroll(b, starts, s)
        assert th.allclose(ya[3:], yb[3:], atol=1e-5), core
        assert not th.allclose(ya[:3], yb[:3]), core


def test_cut_marks_which_pieces_carry_the_stored_state():
    starts = np.array([[1, 0], [0, 0], [0, 1], [1, 0]], np.float32)
    p = ppo.cut(starts)
    assert p.env.tolist() == [0, 0, 1, 1] and p.t0.tolist() == [0, 3, 0, 2]
    assert p.length.tolist() == [3, 1, 2, 2] and p.carry.tolist() == [False, False, True, False]


def test_previous_action_input_is_popjaxrls():
    """[o, onehot(a_prev), start]: zeros and a start flag of 1 at an episode's first step."""
    obs = np.array([[0.5], [0.25]], np.float32)
    got = ppo.inputs(obs, np.array([2, 1]), np.array([0.0, 1.0], np.float32), 3, True)
    assert got.tolist() == [[0.5, 0, 0, 1, 0], [0.25, 0, 0, 0, 1]]
    assert ppo.inputs(obs, np.array([2, 1]), np.zeros(2, np.float32), 3, False) is obs


def test_clipped_value_loss_takes_the_larger_error():
    """popjaxrl's value loss: max((V - R)^2, (V_old + clip(V - V_old) - R)^2)."""
    th.manual_seed(0)
    p = tiny("gru", n_envs=2, n_steps=4, batch_size=8)
    ac = ppo.ActorCritic(3, 2, p)
    x, flat = th.randn(4, 2, 3), np.zeros((4, 2), np.float32)
    with th.no_grad():
        _, v = ac.unroll(x, flat, ac.initial_state(2))
        zeros = th.zeros(4, 2)
        ro = ppo.Rollout(
            x, flat, zeros.long(), zeros, v - 1.0, zeros, v + 1.0, ac.initial_state(2)
        )  # old values 1 below, returns 1 above the new values
        got = {
            c: float(
                ppo.losses(ac, ro, th.arange(2), 0.2, p.model_copy(update={"clip_value": c}))[1]
            )
            for c in (False, True)
        }
    # plain error 1 at every step; clipped: V_old + 0.2 - R = V - 1.8, error 1.8^2
    assert got == {False: pytest.approx(1.0), True: pytest.approx(1.8**2)}


@pytest.mark.parametrize("core", ["gru", "lstm", "ffm", "s5"])
def test_each_core_trains_a_few_updates_on_a_tiny_task(core):
    """Smoke-sized: 3 updates on RepeatPreviousEasy, deterministic, weights moved, episodes
    logged with POPGym's scaled returns (in [-1, 1])."""
    from memrl.envs.registry import make

    p = tiny(core)
    steps = 3 * p.n_envs * p.n_steps
    moved = []

    def run():
        th.manual_seed(0)
        out = ppo.train(partial(make, TASK), p, steps, 3, Evals(1))
        return out

    orig = ppo.update

    def spy(ac, *a):
        before = [q.detach().clone() for q in ac.parameters()]
        orig(ac, *a)
        moved.append(any(not th.equal(b, q) for b, q in zip(before, ac.parameters(), strict=True)))

    a = run()
    ppo.update = spy
    try:
        b = run()
    finally:
        ppo.update = orig
    assert a["episode_returns"] == b["episode_returns"] and a["eval_returns"] == b["eval_returns"]
    assert len(moved) == 3 * p.n_epochs * (p.n_envs // (p.batch_size // p.n_steps)) and all(moved)
    assert len(a["episode_returns"]) >= p.n_envs and sum(a["episode_lengths"]) <= steps
    assert all(-1.0 - 1e-9 <= r <= 1.0 + 1e-9 for r in a["episode_returns"])


def test_lstm_ppo_is_the_zoo_config_on_the_general_agent():
    from memrl.families import load_family

    z = load_family("recurrent_off_policy", "default").rppo
    q = z.ppo()
    assert (q.core, q.hidden_size, q.shared, q.prev_action, q.clip_value) == (
        "lstm", z.lstm_hidden_size, False, False, False,
    )  # fmt: skip
    assert (q.n_envs, q.n_steps, q.n_epochs, q.schedule, q.normalize) == (
        z.n_envs, z.n_steps, z.n_epochs, z.schedule, z.normalize,
    )  # fmt: skip


def test_ppo_methods_take_their_core_and_popgyms_config():
    from memrl.families import load_family
    from memrl.families.recurrent_off_policy.params import parse_method

    assert parse_method("PPO-S5") == ("PPO", "s5", False)
    assert parse_method("PPO-LSTM") == ("PPO", "lstm", False)
    with pytest.raises(ValueError, match="unknown method"):
        parse_method("PPO-GRU-shared")
    cfg = load_family("recurrent_off_policy", "default")
    assert cfg.ppo_params("PPO-FFM", TASK).core == "ffm"
    assert cfg.ppo_params("PPO-LSTM", "memrl/CartPole-P-v1") is cfg.rppo
    with pytest.raises(ValueError, match="off POPGym"):
        cfg.ppo_params("PPO-GRU", "memrl/CartPole-P-v1")


def test_default_popgym_grid_meets_the_issues_budget():
    """>= 3 POPGym tasks, each core GRU, FFM and S5 on each, >= 5 seeds at >= 500k steps."""
    from memrl.families import load_family

    cfg = load_family("recurrent_off_policy", "default")
    pop = [e for e in cfg.envs if e.env_id.startswith("popgym/")]
    assert len(pop) >= 3
    for e in pop:
        assert {"PPO-GRU", "PPO-FFM", "PPO-S5"} <= set(e.methods)
        assert e.total_timesteps >= 500_000 and (e.seeds or cfg.seeds) >= 5
