"""Stream Q(λ) on the engine (Elsayed, Vasan & Mahmood 2024; reference:
mohmdelsayed/streaming-drl, ``stream_q_minatar.py``, ``optim.py``): the algorithm of
:mod:`memrl.agents.stream_q`, equal to it step for step (``tests/test_engine.py``: the same
observations and initial weights give parameters within float rounding over 2,000+
updates), the whole run compiled (:func:`make_train`).

One step, as the torch agent's (its docstring has the algorithm and its sources)::

    Q(s, a), grad_theta Q(s, a)         (the action was chosen on Q(s) under these weights)
    delta = r + gamma (1 - done) max_a' Q(s', a') - Q(s, a)
    z <- gamma lambda z + grad;  M = alpha kappa max(|delta|, 1) ||z||_1
    theta <- theta + (alpha / max(M, 1)) delta z;  z <- 0 on a reset (episode end, or a
                                                   non-greedy action: Watkins's Q(lambda))
    the greedy action on the next state under the new weights (the next step's choice)

Around it, compiled with it (:func:`make_train`, PureJaxRL's ``make_train`` shape: the run
is chunks of one ``lax.scan`` each): the game, ported to JAX and frame-exact against the
``minatar`` package (:mod:`memrl.envs.minatar_jax`, ``tests/test_minatar_jax.py``), the
online normalisation (:mod:`memrl.engines.normalisation`, the wrappers' statistics in
float32 with Kahan's compensation where the wrappers use float64) and the epsilon-greedy
draws from ``jax.random`` (threefry, ``fold_in(key(seed), t)`` per step). The initial weights
are the torch agent's own initialiser's (:func:`memrl.agents.stream_q.q_network` under
``torch.manual_seed(seed)``), so one seed starts both from the same weights and the peer
check against the reference (identical initial weights) carries over.

Deviations from the torch agent: the exploration and the game's random outcomes are drawn
from ``jax.random``, not ``numpy.random.default_rng(seed)`` and the package's
``RandomState`` (the same distributions; a seed's trajectory is not the torch agent's); the
normalisation's float32 (above); the TD error and the step size are float32 (the torch
agent forms them as Python floats, float64); the convolution is a product over patches
(:func:`memrl.engines.nets.frame_conv3x3`); Q(s) is computed again inside the step rather
than kept from acting (the same weights, the same value). ``tests/test_engine.py`` replays
a compiled run's update inputs through the torch agent: the same weights within float
rounding.

Cost (one core of an Intel Xeon, family 6 model 207): the loop compiled whole runs ~5,800
env steps per core-second on Breakout and SpaceInvaders where one compiled call per step,
with the package's game and the wrappers in Python, ran ~1,650-2,100 (measured in one run,
under load). Within the step, the network is written for one frame
(:mod:`memrl.engines.nets`' ``frame_*`` pieces: a matrix-vector product in the weight's own
layout, the patches one gather, the argmax a max and a min), which halved the compiled step
(~700 -> ~350 us); the gradient of the 1024x128 layer is an outer product that XLA fuses
into the trace update, and the trace's reset is kept for the next step's decay
(:func:`make_step`), so the large weight is read and written in two elementwise passes (the
trace with its L1 norm, then the parameters) besides the products. Measured and not kept: one
batch-2 forward for Q(s) and Q(s') (the backward then forms the layer's gradient as a
product instead of fusing it: no faster). The traces' L1 norm is :func:`memrl.engines.nets.
fold_sum` (XLA's own reduction of the 131,072 floats cost ~45 us of the step, YNNPACK's is
off for the pin): ~15% off the step, measured interleaved; the frames and scalars packed
into two arrays (fewer transfers) gained nothing measurable.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from memrl.engines.pin import pin

pin()  # before jax loads: XLA's flags and one core (memrl.engines.pin)

import jax
import jax.numpy as jnp
import numpy as np

from memrl.agents import schedules
from memrl.agents.contract import NO_EVALS, EnvFn, Evals, TrainLog
from memrl.agents.stream_q import StreamQParams
from memrl.engines import normalisation as norm
from memrl.engines.loop import episode, game_of, run_chunks, scan_run
from memrl.engines.nets import (
    Params,
    first_argmax,
    fold_sum,
    frame_conv3x3,
    frame_layer_norm,
    frame_linear,
    from_torch,
    leaky_relu,
)
from memrl.envs import minatar_jax as mj

TORCH_NAMES = {"0": "conv", "4": "fc", "7": "out"}  # memrl.agents.stream_q.q_network's layers


def init_params(obs_shape: tuple[int, ...], n_actions: int, p: StreamQParams, seed: int) -> Params:
    """The torch agent's initial weights for ``seed`` (sparse, zero biases)."""
    import torch as th

    from memrl.agents.stream_q import q_network

    th.manual_seed(seed)
    return from_torch(q_network(obs_shape, n_actions, p).state_dict(), TORCH_NAMES)


def q_values(params: Params, x: jnp.ndarray) -> jnp.ndarray:
    """Q(x, .) for one frame (C, H, W): conv -> LayerNorm -> leaky ReLU -> linear -> LayerNorm
    -> leaky ReLU -> linear (the reference's MinAtar network; LayerNorm over the frame's
    every element, as torch's over ``x.shape[1:]`` of a batch of one)."""
    h = leaky_relu(frame_layer_norm(frame_conv3x3(params["conv.weight"], params["conv.bias"], x)))
    h = leaky_relu(
        frame_layer_norm(frame_linear(params["fc.weight"], params["fc.bias"], h.reshape(-1)))
    )
    return frame_linear(params["out.weight"], params["out.bias"], h)


CUT = "cut"  # the traces' entry that says the last step reset them (applied by the next step)


def make_update(p: StreamQParams):
    """One step's update, uncompiled: ``(params, traces, s, a, r, s_next, done, reset,
    s_act) -> (params, traces, greedy action on s_act)``; ``r`` is the scaled reward,
    ``done`` cuts the bootstrap, ``reset`` the trace.

    The reset is kept, not applied: the returned traces carry ``traces[CUT] = reset`` and
    the next step decays them as ``where(cut, 0, gamma lambda z) + grad``, which is
    ``gamma lambda (0 if reset else z) + grad`` to the bit, one elementwise pass over the
    weights fewer (``traces`` without ``CUT``, as zeros at the start: nothing owed)."""
    decay = p.gamma * p.lamda

    def update(params, traces, s, a, r, s_next, done, reset, s_act):
        cut = traces.get(CUT, False)  # the last step's reset, owed to these traces
        q_sa, grads = jax.value_and_grad(lambda w: q_values(w, s)[a])(params)
        q_next = jnp.max(q_values(params, s_next))
        delta = r + jnp.where(done, 0.0, p.gamma * q_next) - q_sa
        z = {k: jnp.where(cut, 0.0, decay * traces[k]) + g for k, g in grads.items()}
        z_sum = sum(fold_sum(jnp.abs(v)) for v in z.values())
        bound = jnp.maximum(jnp.abs(delta), 1.0) * z_sum * p.lr * p.kappa
        size = jnp.where(bound > 1.0, p.lr / bound, p.lr)
        params = jax.tree.map(lambda w, v: w + (size * delta) * v, params, z)
        return params, {**z, CUT: jnp.asarray(reset)}, first_argmax(q_values(params, s_act))

    return update


def make_step(p: StreamQParams):
    """:func:`make_update` compiled alone (one call per step; the buffers of ``params`` and
    ``traces`` donated): what ``tests/test_engine.py`` feeds the torch agent's transitions."""
    return jax.jit(make_update(p), donate_argnums=(0, 1))


class Carry(NamedTuple):
    """The training loop's state between steps."""

    params: Params
    traces: Params
    env: Any  # the game's state (memrl.envs.minatar_jax)
    obs_stats: norm.Welford
    reward_stats: norm.Welford
    reward_trace: jnp.ndarray
    s: jnp.ndarray  # the normalised frame the next action is chosen on
    greedy: jnp.ndarray  # the greedy action on ``s`` under ``params``
    key: jnp.ndarray
    t: jnp.ndarray  # steps done
    ret: jnp.ndarray  # the episode's raw return so far
    length: jnp.ndarray


def make_train(p: StreamQParams, game: mj.Game, total_steps: int, trace: bool = False):
    """The whole run as compiled pieces, PureJaxRL's ``make_train`` shape: ``init(seed) ->
    Carry`` and ``run(carry, n) -> (carry, per-step outputs)``, ``n`` steps as one
    ``lax.scan`` (``n`` static: one compilation per chunk length). A step, as
    :func:`memrl.agents.stream_q.train`'s:

    1. epsilon-greedy on ``s``: epsilon the torch agent's schedule at step ``t + 1``; the
       draw, the random action (uniform over the actions) and the game's two uniforms
       (:func:`memrl.envs.minatar_jax.uniforms`) come from ``fold_in(key, t)`` split in three;
       a random action unlike the greedy one is non-greedy (Watkins's trace reset);
    2. the game's step (:func:`memrl.envs.minatar_jax.step_autoreset_u`); the frame it ends
       on normalised (statistics updated), then, when the episode ended, the next episode's
       first frame normalised too (the wrapper's ``reset``); the raw reward scaled;
    3. the update (:func:`make_update`) on ``(s, a, r, s', done, done or non-greedy, s_act)``.

    Per step ``run`` returns ``(done, the finished episode's return, its length)``; with
    ``trace`` also the update's inputs (the test replays them through the torch agent)."""
    update = make_update(p)
    n = game.n_actions
    span = p.exploration_fraction * total_steps

    def init(seed: int) -> Carry:
        params = init_params(game.obs_shape, n, p, seed)
        k_reset, key = jax.random.split(jax.random.key(seed))
        env, first = mj.reset_u(game, mj.uniforms(k_reset)[1])
        obs_stats, s = norm.normalise(norm.welford(game.obs_shape), first)
        greedy = first_argmax(q_values(params, s))
        zero = jnp.zeros((), jnp.float32)
        traces = {**jax.tree.map(jnp.zeros_like, params), CUT: jnp.asarray(False)}
        return Carry(params, traces, env, obs_stats, norm.welford(), zero, s, greedy, key,
                     jnp.zeros((), jnp.int32), zero, jnp.zeros((), jnp.int32))  # fmt: skip

    def body(c: Carry, _):
        k_eps, k_act, k_env = jax.random.split(jax.random.fold_in(c.key, c.t), 3)
        eps = schedules.linear((c.t + 1).astype(jnp.float32), 0, span, p.epsilon_start,
                               p.epsilon_target, jnp.clip)  # fmt: skip
        explore = jax.random.uniform(k_eps, (), jnp.float32) < eps
        rand = jax.random.randint(k_act, (), 0, n, jnp.int32)
        a = jnp.where(explore, rand, c.greedy)
        env, first, r, term, trunc, final = mj.step_autoreset_u(game, c.env, a, mj.uniforms(k_env))
        done = term | trunc
        obs_stats, obs = norm.normalise(c.obs_stats, final)
        reset_stats, first = norm.normalise(obs_stats, first)
        obs_stats = jax.tree.map(lambda x, y: jnp.where(done, x, y), reset_stats, obs_stats)
        s_act = jnp.where(done, first, obs)
        reward_stats, reward_trace, scaled = norm.scale_reward(
            c.reward_stats, c.reward_trace, r, done, p.gamma
        )
        reset = done | (explore & (rand != c.greedy))
        params, traces, greedy = update(c.params, c.traces, c.s, a, scaled, obs, done, reset, s_act)
        ret, length, next_ret, next_length = episode(c.ret, c.length, r, done)
        out = (done, ret, length) + ((c.s, a, scaled, obs, done, reset, s_act) if trace else ())
        carry = Carry(params, traces, env, obs_stats, reward_stats, reward_trace, s_act, greedy,
                      c.key, c.t + 1, next_ret, next_length)  # fmt: skip
        return carry, out

    return init, scan_run(body)


def train(
    env_fn: EnvFn,
    p: StreamQParams,
    total_steps: int,
    seed: int,
    evals: Evals = NO_EVALS,
    final: dict[str, Any] | None = None,
) -> TrainLog:
    """Stream Q(lambda) for ``total_steps`` steps on the game ``env_fn`` makes (ported:
    :func:`game_of`), as :func:`memrl.agents.stream_q.train` (its arguments, its log), the
    loop compiled (:func:`make_train`) and run in chunks (:func:`memrl.engines.loop.
    run_chunks`); ``final``, when given, receives the last weights (``final["params"]``, numpy)."""
    init, run = make_train(p, game_of(env_fn, seed), total_steps)
    carry, returns, lengths = run_chunks(run, init(seed), total_steps)
    if final is not None:
        final["params"] = {k: np.asarray(v) for k, v in carry.params.items()}
    return {"episode_returns": returns, "episode_lengths": lengths}
