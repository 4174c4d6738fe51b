import numpy as np
import pytest
import torch as th

from memrl.agents import recurrent_loop
from memrl.agents.recurrent_loop import RecurrentParams
from memrl.agents.recurrent_sac import Actor, RecurrentSAC
from memrl.agents.recurrent_sac_discrete import RecurrentSACDiscrete
from memrl.agents.recurrent_td3 import RecurrentTD3
from memrl.envs.pomdp import make_masked
from memrl.memory.sequence import SequenceReplayBuffer


def params(**kw):
    base = dict(
        core="gru",
        hidden_size=16,
        shared_encoder=False,
        head=[16],
        learning_rate=1e-3,
        gamma=0.9,
        tau=0.05,
        buffer_size=10_000,
        seq_len=8,
        batch_size=4,
        learning_starts=50,
        train_freq=1,
        gradient_steps=1,
        expl_noise=0.1,
        target_noise=0.2,
        noise_clip=0.5,
        policy_delay=2,
        target_entropy_ratio=0.7,
        context=3,
        ffm_memory=8,
        ffm_context=4,
    )
    return RecurrentParams(**{**base, **kw})


def filled_buffer(obs_dim=2, act_dim=1, seed=0):
    rng = np.random.default_rng(seed)
    buf = SequenceReplayBuffer(1000, seq_len=8, seed=seed)
    for n in (12, 20):
        buf.add_episode(
            rng.normal(size=(n + 1, obs_dim)),
            rng.uniform(-1, 1, (n, act_dim)),
            rng.normal(size=n),
            True,
        )
    return buf


def snapshot(module):
    return [p.detach().clone() for p in module.parameters()]


def changed(before, module):
    return any(not th.equal(b, p) for b, p in zip(before, module.parameters(), strict=True))


@pytest.mark.parametrize("core", ["gru", "lstm", "ffm"])
def test_update_trains_each_part_with_its_own_loss(core):
    th.manual_seed(0)
    agent = RecurrentSAC(2, 1, params(core=core))
    enc_a, enc_q, targ = (
        snapshot(agent.actor_encoder),
        snapshot(agent.critic_encoder),
        snapshot(agent.critic_target),
    )
    out = agent.update(filled_buffer().sample(4))
    assert all(np.isfinite(v) for v in out.values())
    assert changed(enc_a, agent.actor_encoder) and changed(enc_q, agent.critic_encoder)
    assert changed(targ, agent.critic_target)  # Polyak step


@pytest.mark.parametrize("algo", ["sac", "td3"])
def test_shared_encoder_is_pomdp_baselines_joint_variant(algo):
    """Ni et al.'s shared ablation as policy_rnn_shared.py runs it: one encoder; one Adam over
    it, both Q heads and the actor; targets for the heads only (the TD target reads the
    online encoder); one update moves the encoder, the heads and the actor."""
    th.manual_seed(0)
    cls = RecurrentSAC if algo == "sac" else RecurrentTD3
    agent = cls(2, 1, params(shared_encoder=True))
    assert agent.actor_encoder is agent.critic_encoder
    actor = agent.actor if algo == "sac" else agent.mu
    joint = {id(p) for g in agent.joint_opt.param_groups for p in g["params"]}
    owned = [agent.critic_encoder, agent.q1, agent.q2, actor]
    assert joint == {id(p) for m in owned for p in m.parameters()}
    targets = {id(p) for p in agent.heads_target.parameters()}
    assert not targets & joint and not hasattr(agent, "critic_target")
    before = [[p.detach().clone() for p in m.parameters()] for m in owned]
    out = agent.update(filled_buffer().sample(4))
    assert all(np.isfinite(v) for v in out.values())
    for old, m in zip(before, owned, strict=True):
        assert any(not th.equal(a, b) for a, b in zip(old, m.parameters(), strict=True))


def test_actor_log_prob_matches_a_monte_carlo_free_check():
    # tanh-squashed Gaussian: log pi(a) = log N(u) - sum log(1 - tanh(u)^2)
    th.manual_seed(0)
    actor = Actor(4, 2, [8])
    h = th.randn(5, 4)
    a, logp = actor(h)
    mean, log_std = actor.net(h).chunk(2, -1)
    u = th.atanh(a.clamp(-0.999999, 0.999999))
    normal = th.distributions.Normal(mean, log_std.clamp(-5, 2).exp())
    expected = (normal.log_prob(u) - th.log(1 - a**2 + 1e-12)).sum(-1)
    th.testing.assert_close(logp, expected, rtol=1e-3, atol=1e-3)


def test_train_runs_on_a_masked_pendulum():
    env_fn = lambda s: make_masked("Pendulum-v1", "V")  # noqa: E731
    out = recurrent_loop.train(RecurrentSAC.for_env, env_fn, params(), 450, seed=0)
    assert len(out["episode_returns"]) == 2 and all(np.isfinite(out["episode_returns"]))


def test_td3_delays_the_actor_and_targets():
    th.manual_seed(0)
    agent = RecurrentTD3(2, 1, params(core="gru"))
    buf = filled_buffer()
    mu, enc_a, targ = (
        snapshot(agent.mu),
        snapshot(agent.actor_encoder),
        snapshot(agent.critic_target),
    )
    enc_q = snapshot(agent.critic_encoder)
    out = agent.update(buf.sample(4))  # update 1: critic only
    assert (
        "actor_loss" not in out
        and not changed(mu, agent.mu)
        and not changed(targ, agent.critic_target)
    )
    assert changed(enc_q, agent.critic_encoder) and not changed(enc_a, agent.actor_encoder)
    out = agent.update(buf.sample(4))  # update 2: actor and targets too
    assert (
        np.isfinite(out["actor_loss"])
        and changed(mu, agent.mu)
        and changed(enc_a, agent.actor_encoder)
    )
    assert changed(targ, agent.critic_target)
    a = agent.act(th.zeros(1, 16), explore=True)
    assert a.shape == (1,) and -1 <= a[0] <= 1


def test_td3_train_runs_and_is_deterministic():
    env_fn = lambda s: make_masked("Pendulum-v1", "P")  # noqa: E731
    a = recurrent_loop.train(RecurrentTD3.for_env, env_fn, params(), 420, seed=3)
    b = recurrent_loop.train(RecurrentTD3.for_env, env_fn, params(), 420, seed=3)
    assert a["episode_returns"] == b["episode_returns"] and len(a["episode_returns"]) == 2


def test_sac_discrete_update_trains_actor_critic_and_temperature():
    th.manual_seed(0)
    rng = np.random.default_rng(0)
    buf = SequenceReplayBuffer(1000, seq_len=8, seed=0)
    for n in (12, 20):
        a = np.eye(3, dtype=np.float32)[rng.integers(3, size=n)]
        buf.add_episode(rng.normal(size=(n + 1, 2)), a, rng.normal(size=n), True)
    agent = RecurrentSACDiscrete(2, 3, params())
    enc_a, enc_q = snapshot(agent.actor_encoder), snapshot(agent.critic_encoder)
    alpha = agent.log_alpha.item()
    out = agent.update(buf.sample(4))
    assert all(np.isfinite(v) for v in out.values())
    assert changed(enc_a, agent.actor_encoder) and changed(enc_q, agent.critic_encoder)
    assert agent.log_alpha.item() != alpha
    a = agent.act(th.zeros(1, 16), explore=True)
    assert a.shape == (3,) and a.sum() == 1.0 and set(a.tolist()) <= {0.0, 1.0}


def test_sac_discrete_with_memory_solves_a_short_t_maze():
    from memrl.envs.pomdp import PassiveTMaze

    p = params(
        hidden_size=32,
        head=[32],
        seq_len=4,
        batch_size=16,
        learning_starts=100,
        gamma=0.99,
        tau=0.05,
        train_freq=1,
        alpha=0.1,  # the reference's fixed temperature on the T-Maze
    )
    out = recurrent_loop.train(RecurrentSACDiscrete.for_env, lambda s: PassiveTMaze(3), p, 1500, 0)
    won = np.array(out["episode_returns"]) >= 1.0  # returns carry the walk's penalties
    assert won[:50].mean() < 0.25  # four moves: a random walker rarely reaches the junction ...
    assert won[-50:].mean() > 0.8  # ... it learns to walk and recalls the cue 3 steps back


def test_sac_discrete_refuses_continuous_actions():
    with pytest.raises(TypeError, match="Discrete"):
        env_fn = lambda s: make_masked("Pendulum-v1", "V")  # noqa: E731
        recurrent_loop.train(RecurrentSACDiscrete.for_env, env_fn, params(), 10, 0)


def test_polyak_moves_every_target_tensor_by_tau():
    from memrl.agents.nets import polyak

    t, o = [th.zeros(3), th.ones(2)], [th.ones(3), th.zeros(2)]
    polyak(t, o, 0.25)
    th.testing.assert_close(t[0], th.full((3,), 0.25))
    th.testing.assert_close(t[1], th.full((2,), 0.75))
    with pytest.raises(ValueError):
        polyak(t, o[:1], 0.1)
