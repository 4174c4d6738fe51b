"""The accelerated engine (memrl.engines): stream Q(lambda) equals the torch agent and DQN1
equals SB3's DQN with a buffer of 1, step for step on the same observations and initial
weights over >= 2,000 updates; the pin (XLA's flags, one core, exact versions) is in every
engine job's key, and a run's bytes do not depend on the cores the process starts with."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import partial

import numpy as np
import pytest

pytest.importorskip("jax")

from memrl.engines import pin  # noqa: E402  (no side effect: jax loads with the engines)
from memrl.envs.registry import make  # noqa: E402

# the engines pin the process that imports them (one core): imported by the tests that run
# them, not at collection, so that the session's other tests keep their cores until then


@pytest.fixture(scope="module")
def S():
    from memrl.engines import stream_q

    return stream_q


@pytest.fixture(scope="module")
def D():
    from memrl.engines import dqn1

    return dqn1


UPDATES = 2_000
GAME = "MinAtar/Breakout-v1"
# the cores this session may use, read before any test pins it (an engine import binds the
# process to one core); else the machine's
CORES = (
    sorted(os.sched_getaffinity(0))
    if len(os.sched_getaffinity(0)) > 1
    else list(range(os.cpu_count() or 1))
)


def _max_diff(torch_state: dict, names: dict[str, str], params: dict) -> float:
    return max(
        float(
            np.abs(
                t.detach().numpy() - np.asarray(params[f"{names[k.rpartition('.')[0]]}.{kind}"])
            ).max()
        )
        for k, t in torch_state.items()
        for kind in [k.rpartition(".")[2]]
        if k.rpartition(".")[0] in names
    )


def test_stream_q_equals_the_torch_agent_step_for_step(S):
    """The torch agent's step (agents/stream_q.py: its network, ObGD, its TD error) and the
    engine's compiled step, fed the same normalised MinAtar frames, actions and scaled
    rewards from the same initial weights: every parameter within float rounding after each
    of 2,000 updates (the actions are the torch agent's epsilon-greedy ones)."""
    import torch as th

    from memrl.agents import stream_q as T
    from memrl.envs.stream_normalisation import NormalizeObservation, ScaleReward

    p = T.StreamQParams()
    env = ScaleReward(NormalizeObservation(make(GAME, 0)), gamma=p.gamma)
    n = int(env.action_space.n)
    th.manual_seed(0)
    net = T.q_network(env.observation_space.shape, n, p)
    opt = T.ObGD(list(net.parameters()), p)
    params = S.init_params(env.observation_space.shape, n, p, 0)
    assert _max_diff(net.state_dict(), S.TORCH_NAMES, params) == 0.0  # one initialiser
    import jax

    traces = jax.tree.map(np.zeros_like, params)
    step = S.make_step(p)
    rng = np.random.default_rng(0)
    s, _ = env.reset(seed=0)
    worst, resets, flips = 0.0, 0, 0
    for t in range(1, UPDATES + 1):
        q = net(th.as_tensor(s)[None])[0]
        greedy = int(q.argmax())
        a, nongreedy = greedy, False
        if rng.random() < T.epsilon(p, t, UPDATES):
            a = int(rng.integers(n))
            nongreedy = a != greedy
        obs, r, terminated, truncated, _ = env.step(a)
        done = terminated or truncated
        with th.no_grad():  # the torch agent's update (agents/stream_q.py: train)
            target = float(r) + (
                0.0 if done else p.gamma * float(net(th.as_tensor(obs)[None]).max())
            )
        delta = target - float(q[a].detach())
        for w in opt.params:
            w.grad = None
        q[a].backward()
        opt.step(delta, reset=done or nongreedy)
        s_act = env.reset()[0] if done else obs
        params, traces, g = step(
            params, traces, s, np.int32(a), np.float32(r), obs, done, done or nongreedy, s_act
        )
        flips += int(g) != int(net(th.as_tensor(s_act)[None])[0].argmax())
        resets += done or nongreedy
        worst = max(worst, _max_diff(net.state_dict(), S.TORCH_NAMES, params))
        s = s_act
    print(f"stream Q(lambda), {UPDATES} updates: max |engine - torch| = {worst:.3g}")
    assert worst < 1e-5, worst  # float32 rounding: weights are O(0.1)
    assert resets > 50 and flips == 0  # the traces were cut, the greedy choices agree


def test_the_compiled_loop_feeds_the_torch_agents_update(S):
    """A whole run compiled (make_train: the ported game, the normalisation and the
    epsilon-greedy draws inside one scan, 2,500 steps on Breakout), its update inputs traced
    and replayed through the torch agent (its network and ObGD from the same initial
    weights): the weights agree within float rounding after every one of them, the loop's
    greedy choice is the torch network's, and the traces were cut often (episode ends and
    non-greedy actions)."""
    import torch as th

    from memrl.agents import stream_q as T
    from memrl.envs import minatar_jax as mj

    p, steps = T.StreamQParams(), 2_500
    init, run = S.make_train(p, mj.GAMES[GAME], steps, trace=True)
    carry0 = init(0)
    _, out = run(carry0, steps)
    done, ret, length, s, a, r, s_next, done_, reset, s_act = (np.asarray(x) for x in out)
    th.manual_seed(0)
    net = T.q_network(mj.GAMES[GAME].obs_shape, mj.GAMES[GAME].n_actions, p)
    opt = T.ObGD(list(net.parameters()), p)
    assert _max_diff(net.state_dict(), S.TORCH_NAMES, carry0.params) == 0.0
    assert np.array_equal(s[1:], s_act[:-1])  # each step acts on the last one's next frame
    for t in range(steps):
        q = net(th.as_tensor(s[t])[None])[0]
        with th.no_grad():
            nxt = 0.0 if done[t] else p.gamma * float(net(th.as_tensor(s_next[t])[None]).max())
        delta = float(r[t]) + nxt - float(q[a[t]].detach())
        for w in opt.params:
            w.grad = None
        q[a[t]].backward()
        opt.step(delta, reset=bool(reset[t]))
    final, _ = run(carry0, steps)
    worst = _max_diff(net.state_dict(), S.TORCH_NAMES, final.params)
    greedy = int(net(th.as_tensor(np.asarray(final.s))[None])[0].argmax())
    print(f"stream Q(lambda), a compiled {steps}-step run replayed: max |engine - torch| = "
          f"{worst:.3g}; {int(done.sum())} episodes, {int(reset.sum())} trace cuts")  # fmt: skip
    assert worst < 1e-5, worst
    assert greedy == int(final.greedy)
    assert done.sum() > 50 and reset.sum() > done.sum()
    assert np.array_equal(done, done_)


def test_the_compiled_loop_normalises_as_the_wrappers_do(S):
    """The loop's normalisation (memrl.engines.normalisation, float32 with Kahan's
    compensation) against the wrappers' float64 on the same stream: 20,000 MinAtar-like
    binary frames within float32 rounding of the wrappers' z-scores, and over 2M rewards
    the scaled reward within 1e-5 of float64's (printed beside the same scan without the
    compensation: as close on this stream, 3.7e-7, so the compensation is a guard here)."""
    import jax
    import jax.numpy as jnp

    from memrl.engines import normalisation as N
    from memrl.envs.stream_normalisation import SampleMeanStd

    rng = np.random.default_rng(0)
    frames = (rng.random((20_000, 4, 10, 10)) < rng.random((1, 4, 10, 10)) * 0.3).astype(np.float32)
    _, z = jax.lax.scan(lambda st, x: N.normalise(st, x), N.welford((4, 10, 10)), frames)
    ref, worst = SampleMeanStd((4, 10, 10)), 0.0
    for x, got in zip(frames, np.asarray(z), strict=True):
        ref.update(x)
        want = ((x - ref.mean) / np.sqrt(ref.var + N.EPSILON)).astype(np.float32)
        worst = max(worst, float(np.abs(got - want).max()))
    assert worst < 1e-4, worst
    rewards = (rng.random(2_000_000) < 0.05).astype(np.float32)
    dones = rng.random(2_000_000) < 0.01

    def body(c, x):
        st, tr = c
        st, tr, scaled = N.scale_reward(st, tr, x[0], x[1] > 0, 0.99)
        return (st, tr), scaled

    xs = np.stack([rewards, dones.astype(np.float32)], 1)
    _, scaled = jax.jit(lambda xs: jax.lax.scan(body, (N.welford(), jnp.float32(0)), xs))(xs)
    g = 0.0  # the wrapper's float64, vectorised by hand
    trace = np.empty(len(rewards))
    for i, (x, d) in enumerate(zip(rewards, dones, strict=True)):
        g = g * 0.99 * (1 - d) + x
        trace[i] = g
    count = np.arange(1, len(trace) + 1)
    mean64 = np.cumsum(trace) / count
    var64 = np.ones_like(trace)
    var64[1:] = (np.cumsum(trace * trace) - count * mean64 * mean64)[1:] / (count[1:] - 1)
    want = rewards / np.sqrt(var64 + N.EPSILON)
    late = slice(1_000_000, None)
    err = float(np.abs(np.asarray(scaled)[late] - want[late]).max())
    assert err < 1e-5, err
    plain = N._kahan
    try:  # the same scan without the compensation
        N._kahan = lambda total, comp, x: (total + x, comp)
        _, naive = jax.jit(lambda xs: jax.lax.scan(body, (N.welford(), jnp.float32(0)), xs))(xs)
    finally:
        N._kahan = plain
    naive_err = float(np.abs(np.asarray(naive)[late] - want[late]).max())
    print(f"scaled rewards over 2M steps: |Kahan - float64| {err:.2g}, |plain - float64| "
          f"{naive_err:.2g}")  # fmt: skip


def _sb3_dqn1(hp, env, seed: int):
    """The SB3 model dqn_train builds for ``hp`` (agents/sb3_dqn.py)."""
    from stable_baselines3 import DQN
    from stable_baselines3.dqn.policies import CnnPolicy

    from memrl.agents.sb3 import minatar_cnn_extractor, sb3_kwargs, silent, steady

    kwargs = sb3_kwargs(hp, seed)
    kwargs["policy_kwargs"].update(
        features_extractor_class=minatar_cnn_extractor(), normalize_images=False
    )
    return silent(DQN(steady(CnnPolicy), env, **kwargs))


def _dqn1_params():
    from memrl.families import load_family

    return load_family("experience_replay", "default").stream.dqn1


def test_dqn1_starts_from_sb3s_weights(D):
    from stable_baselines3.common.monitor import Monitor

    hp = _dqn1_params()
    for seed in (0, 3):
        env = Monitor(make(GAME, seed))
        model = _sb3_dqn1(hp, env, seed)
        mine = D.init_params(env.observation_space.shape, int(env.action_space.n), hp, seed)
        assert _max_diff(model.q_net.state_dict(), D.SB3_NAMES, mine) == 0.0


def _sb3_state(model, D):
    """SB3's online and target weights and its Adam moments as the engine's arrays."""
    import jax.numpy as jnp

    from memrl.engines.nets import from_torch

    params = from_torch(model.q_net.state_dict(), D.SB3_NAMES)
    target = from_torch(model.q_net_target.state_dict(), D.SB3_NAMES)
    named = dict(model.q_net.named_parameters())
    state = model.policy.optimizer.state
    moments = {}
    for which in ("exp_avg", "exp_avg_sq"):
        moments[which] = from_torch({k: state[w][which] for k, w in named.items()}, D.SB3_NAMES)
    count = int(state[named["q_net.0.weight"]]["step"])
    return params, target, moments, jnp.asarray(count, jnp.int32)


def test_dqn1_equals_sb3s_update_for_update(D):
    """SB3's DQN with a buffer of 1 (its own train(): Huber, clipping, fused Adam; its target
    copy every target_update_interval steps) and the engine's step on the same MinAtar
    transitions: each of 2,000 updates from SB3's weights and Adam moments gives SB3's next
    weights within float rounding; run freely from the same initial weights, the engine
    stays within a fraction of one Adam step of SB3 (Adam rescales rounding differences
    of near-zero gradients to steps of up to the learning rate, so these drift apart)."""
    import torch as th
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.utils import polyak_update

    hp = _dqn1_params()
    env = Monitor(make(GAME, 0))
    model = _sb3_dqn1(hp, env, 0)
    n = int(env.action_space.n)
    params = D.init_params(env.observation_space.shape, n, hp, 0)  # the free-running engine
    target = params
    opt, step = D.make_step(hp, env.observation_space.shape)
    opt_state = opt.init(params)
    rng = np.random.default_rng(1)
    s, _ = env.reset(seed=0)
    worst_step, drift, dones = 0.0, 0.0, 0
    for t in range(1, UPDATES + 2):
        with th.no_grad():  # mostly greedy, so that the weights see the game's states
            q = model.q_net(th.as_tensor(s)[None])[0]
        a = int(rng.integers(n)) if rng.random() < 0.3 else int(q.argmax())
        obs, r, terminated, truncated, _ = env.step(a)
        model.replay_buffer.add(s[None], obs[None], np.array([a]), np.array([r]),
                                np.array([terminated]), [{}])  # fmt: skip
        s_act = env.reset()[0] if terminated or truncated else obs
        dones += terminated
        if t % hp.target_update_interval == 0:  # SB3's _on_step, before the update
            polyak_update(model.q_net.parameters(), model.q_net_target.parameters(), 1.0)
            target = params
        if t > hp.learning_starts:
            args = (s, np.int32(a), np.float32(r), obs, np.float32(terminated), s_act)
            if t > hp.learning_starts + 1:  # one update from SB3's own state
                w, w_target, m, count = _sb3_state(model, D)
                adam = opt_state[0]._replace(count=count, mu=m["exp_avg"], nu=m["exp_avg_sq"])
                one, _, _ = step(w, w_target, (adam, *opt_state[1:]), *args)
            model.train(gradient_steps=1, batch_size=1)
            if t > hp.learning_starts + 1:
                got = _max_diff(model.q_net.state_dict(), D.SB3_NAMES, one)
                worst_step = max(worst_step, got)
            params, opt_state, _ = step(params, target, opt_state, *args)
            drift = max(drift, _max_diff(model.q_net.state_dict(), D.SB3_NAMES, params))
        s = s_act
    print(
        f"DQN1, {UPDATES} updates: max |engine - SB3| after one update from SB3's state "
        f"{worst_step:.3g}; run freely {drift:.3g} (Adam's step: {hp.learning_rate:g})"
    )
    assert model._n_updates == UPDATES and dones > 5
    assert worst_step < 1e-6, worst_step
    assert drift < hp.learning_rate, drift


def test_dqn1s_compiled_loop_is_its_update_loop(D):
    """DQN1's run compiled whole (make_train, 3,000 steps on Breakout, a target copy every
    1,000), its update inputs traced and replayed in Python through the per-update step that
    the test above checks against SB3, with SB3's target copies (every
    ``target_update_interval`` steps, before the update) and its first update after
    ``learning_starts``: the weights stay within a fraction of one Adam step, and each step
    acts on the frame the last one handed on."""
    from memrl.envs import minatar_jax as mj

    hp = _dqn1_params()
    hp = hp.model_copy(update={"learning_starts": 100})
    steps = 3_000
    game = mj.GAMES[GAME]
    init, run = D.make_train(hp, game, steps, trace=True)
    carry0 = init(0)
    final, out = run(carry0, steps)
    done, ret, length, s, a, r, s_next, term, s_act, learn = (np.asarray(x) for x in out)
    assert np.array_equal(s[1:], s_act[:-1]) and learn.sum() == steps - hp.learning_starts
    opt, step = D.make_step(hp, game.obs_shape)
    params = target = carry0.params
    opt_state = opt.init(params)
    for t in range(1, steps + 1):
        if t % hp.target_update_interval == 0:
            target = params
        if learn[t - 1]:
            i = t - 1
            params, opt_state, _ = step(params, target, opt_state, s[i], a[i], r[i],
                                        s_next[i], np.float32(term[i]), s_act[i])  # fmt: skip
    worst = max(float(np.abs(np.asarray(final.params[k]) - np.asarray(v)).max())
                for k, v in params.items())  # fmt: skip
    print(f"DQN1, a compiled {steps}-step run replayed: max |loop - steps| = {worst:.3g}")
    assert worst < hp.learning_rate, worst
    assert done.sum() > 20


def test_the_one_frame_pieces_are_the_batched_ones(S):
    """The streaming agents' one-frame network pieces (memrl.engines.nets' frame_*) compute
    the batched pieces' values for a batch of one, to float rounding; the argmax keeps the
    first of tied maxima (jnp.argmax's and torch's rule)."""
    import jax.numpy as jnp

    from memrl.engines import nets

    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 10, 10)).astype(np.float32)
    w, b = rng.standard_normal((16, 4, 3, 3)).astype(np.float32), np.ones(16, np.float32)
    conv = np.asarray(nets.conv3x3(jnp.asarray(w), jnp.asarray(b), jnp.asarray(x)[None]))[0]
    frame = np.asarray(nets.frame_conv3x3(jnp.asarray(w), jnp.asarray(b), jnp.asarray(x)))
    np.testing.assert_allclose(frame, conv.reshape(16, -1), rtol=1e-5, atol=1e-5)
    fw, h = rng.standard_normal((128, 1024)).astype(np.float32), frame.reshape(-1)
    got = np.asarray(nets.frame_linear(jnp.asarray(fw), jnp.asarray(b[:1]), jnp.asarray(h)))
    want = np.asarray(nets.linear(jnp.asarray(fw), jnp.asarray(b[:1]), jnp.asarray(h)[None]))[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(
        np.asarray(nets.frame_layer_norm(jnp.asarray(frame))),
        np.asarray(nets.layer_norm(jnp.asarray(frame)[None]))[0],
        rtol=1e-5,
        atol=1e-5,
    )
    for q in ([0.0, 2.0, 2.0, 1.0], [3.0, 3.0, 3.0], [-1.0, -2.0], [0.5, 0.1, 0.7, 0.7, 0.2]):
        assert int(nets.first_argmax(jnp.asarray(q, jnp.float32))) == int(np.argmax(q))


def test_the_engines_train_as_the_contract_says(S, D):
    """Both engines' train() run a few hundred MinAtar steps: the agents' log, episodes whose
    lengths sum to at most the budget, and the same bytes twice in one process."""
    from memrl.agents.stream_q import StreamQParams

    env_fn = partial(make, GAME)
    for train, hp in ((S.train, StreamQParams()), (D.train, _dqn1_params())):
        a, b = train(env_fn, hp, 400, 1), train(env_fn, hp, 400, 1)
        assert a == b and a["episode_returns"] and sum(a["episode_lengths"]) <= 400


# --------------------------------------------------------------------------- the pin
_CHILD = r"""
import json, os, sys
os.sched_setaffinity(0, set(json.loads(sys.argv[1])))
started = len(os.sched_getaffinity(0))
from functools import partial
import memrl, hashlib
from memrl.engines import stream_q
from memrl.envs.registry import make
from memrl.agents.stream_q import StreamQParams
final = {}
log = stream_q.train(partial(make, "MinAtar/Breakout-v1"), StreamQParams(), 300, 2, final=final)
h = hashlib.sha256(json.dumps(log).encode())
for k in sorted(final["params"]):
    h.update(final["params"][k].tobytes())
import jax
print(json.dumps({"hash": h.hexdigest(), "cores": len(os.sched_getaffinity(0)), "started": started,
                  "threads": len(os.listdir("/proc/self/task"))}))
"""


def _fresh_env() -> dict[str, str]:
    """This environment without the engine's pin (a process pinned here passes it on)."""
    return {k: v for k, v in os.environ.items() if k not in pin.environment("cpu")}


def _child(code: str, cores: set[int]) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", code, json.dumps(sorted(cores))],
        capture_output=True,
        text=True,
        env=_fresh_env(),
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(len(CORES) < 2, reason="needs two cores to start with")
def test_the_engines_bytes_do_not_depend_on_the_cores_a_process_starts_with():
    """Fresh processes started on one core and on two: the pin binds each to one core before
    jax loads, and their runs are the same bytes."""
    one = _child(_CHILD, {CORES[0]})
    two = _child(_CHILD, set(CORES[:2]))
    assert (one["started"], two["started"]) == (1, 2)
    assert one["cores"] == two["cores"] == 1
    assert one["hash"] == two["hash"]


_UNPINNED = r"""
import json, os, sys
os.sched_setaffinity(0, set(json.loads(sys.argv[1])))
os.environ["JAX_PLATFORMS"] = "cpu"
import hashlib, jax, jax.numpy as jnp
x = jax.random.normal(jax.random.key(0), (512, 512))
y = jax.jit(lambda a: a.sum())(jax.random.normal(jax.random.key(0), (1 << 20,)))
print(json.dumps({"hash": hashlib.sha256(jax.device_get(y).tobytes()).hexdigest(),
                  "cores": len(os.sched_getaffinity(0))}))
"""


@pytest.mark.skipif(len(CORES) < 2, reason="needs two cores to start with")
def test_without_the_pin_the_cores_change_the_bytes():
    """What the pin guards against, so that the test above can fail: unpinned, XLA sizes its
    threads by the affinity mask and one core and two give other bytes (measured here: the
    sum of 2^20 floats; research notes, sixth round: small scans and products)."""
    one = _child(_UNPINNED, {CORES[0]})
    two = _child(_UNPINNED, set(CORES[:2]))
    assert (one["cores"], two["cores"]) == (1, 2)
    if one["hash"] == two["hash"]:
        pytest.xfail("this CPU's XLA partitions this workload alike on 1 and 2 cores")
    assert one["hash"] != two["hash"]


def test_the_pin_is_in_every_engine_jobs_key_and_only_theirs(monkeypatch):
    from memrl.jobs import JobSpec

    torch_job = JobSpec("m:f", {"seed": 0})
    engine_job = JobSpec("m:f", {"seed": 0}, engine="xla")
    before = (torch_job.key, engine_job.key)
    assert engine_job.key != torch_job.key
    monkeypatch.setattr(pin, "KEY", "xla-cpu:another")
    assert torch_job.key == before[0] and engine_job.key != before[1]
    with pytest.raises(ValueError, match="engine"):
        JobSpec("m:f", {}, engine="tpu")


def test_the_pin_names_flags_versions_and_one_core(S):
    env = pin.environment("cpu")
    assert "--xla_cpu_max_isa=AVX2" in env["XLA_FLAGS"].split()  # x86-64-v3
    assert env["JAX_PLATFORMS"] == "cpu"
    assert pin.versions()["jax"] == "0.10.2"
    assert len(os.sched_getaffinity(0)) == 1  # this process: pinned by the import above
    seen = pin.check()
    assert seen["key"] == pin.KEY and seen["jax"] == "0.10.2"
    assert pin.environment("cuda")["JAX_PLATFORMS"] == "cuda"  # a GPU's keys are their own
    assert pin._key("cuda") != pin._key("cpu")


def test_no_engine_step_hands_an_op_to_a_library_that_picks_kernels_by_cpu(S, D):
    """XNNPACK and YNNPACK choose micro-kernels by the CPU they run on, past XLA's ISA cap
    (an AVX-512 product under ``--xla_cpu_max_isa=AVX2``: memrl.engines.pin): a compiled
    engine step has none of their fusions. Unpinned, the same step has YNN fusions, so the
    check can fail."""
    import jax.numpy as jnp

    from memrl.families import load_family

    st = load_family("experience_replay", "default").stream
    env = make(GAME)
    shape, n = env.observation_space.shape, int(env.action_space.n)
    s = np.zeros(shape, np.float32)
    p = S.init_params(shape, n, st.stream_q, 0)
    traces = {**{k: jnp.zeros_like(v) for k, v in p.items()}, S.CUT: jnp.asarray(False)}
    sq = S.make_step(st.stream_q).lower(p, traces, s, 1, 0.1, s, False, False, s)
    w = D.init_params(shape, n, st.dqn1, 0)
    opt, step = D.make_step(st.dqn1, shape)
    dq = step.lower(w, w, opt.init(w), s, 1, 0.1, s, 0.0, s)
    for lowered in (sq, dq):
        text = lowered.compile().as_text()
        assert "__ynn_fusion" not in text and "__xnn_fusion" not in text
    unpinned = _child(_YNN_CHILD, {CORES[0]})
    assert unpinned["ynn"] > 0


_YNN_CHILD = r"""
import json, os, sys
os.sched_setaffinity(0, set(json.loads(sys.argv[1])))
os.environ["JAX_PLATFORMS"] = "cpu"
import jax, jax.numpy as jnp
f = jax.jit(lambda w, x: (w @ x, jnp.abs(w).sum()))
text = f.lower(jnp.ones((16, 36)), jnp.ones((36, 64))).compile().as_text()
print(json.dumps({"ynn": text.count("__ynn_fusion")}))
"""


def test_the_pin_refuses_a_jax_started_before_it():
    code = (
        "import os; os.environ['JAX_PLATFORMS'] = 'cpu'\n"
        "os.sched_setaffinity(0, range(os.cpu_count()))\n"
        "import jax.numpy as jnp; jnp.ones(1).block_until_ready()\n"
        "from memrl.engines import pin\n"
        "try:\n    pin.pin()\nexcept pin.PinError as e:\n    print('refused', e)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=_fresh_env(), check=True
    )
    assert out.stdout.startswith("refused")


def test_verify_reruns_an_engine_job_identical_and_its_store_records_the_pin(tmp_path):
    """An engine job (a smoke-sized stream_engine_job) run in a fresh pool process, then
    rerun by memrl verify's machinery in another: identical, and the record keeps the pin."""
    from memrl.executors import execute
    from memrl.families import get, load_family
    from memrl.runs import RunStore
    from memrl.verify import verify

    cfg = load_family("experience_replay", "smoke")
    spec = next(s for s in get("experience_replay").grid(cfg) if s.engine == "xla"
                and s.fn.endswith(":stream_engine_job"))  # fmt: skip
    store = RunStore(tmp_path / "store")
    execute([spec], store, "process", 1, fresh=True)
    rec = store.load(spec)
    assert rec["isa"]["engine"]["key"] == pin.KEY
    assert rec["isa"]["engine"]["XLA_FLAGS"] == pin.environment("cpu")["XLA_FLAGS"]
    (checked,) = verify([(spec, rec)], workers=1)
    assert checked.status == "identical", checked.detail
