"""Stream Q(λ) on the engine (Elsayed, Vasan & Mahmood 2024; reference:
mohmdelsayed/streaming-drl, ``stream_q_minatar.py``, ``optim.py``): the algorithm of
:mod:`memrl.agents.stream_q`, equal to it step for step (``tests/test_engine.py``: the same
observations and initial weights give parameters within float rounding over 2,000+
updates), with each step's network work one XLA-compiled call.

One step, as the torch agent's (its docstring has the algorithm and its sources)::

    Q(s, a), grad_theta Q(s, a)         (the action was chosen on Q(s) under these weights)
    delta = r + gamma (1 - done) max_a' Q(s', a') - Q(s, a)
    z <- gamma lambda z + grad;  M = alpha kappa max(|delta|, 1) ||z||_1
    theta <- theta + (alpha / max(M, 1)) delta z;  z <- 0 on a reset (episode end, or a
                                                   non-greedy action: Watkins's Q(lambda))
    the greedy action on the next state under the new weights (the next step's choice)

Around it, in Python as in the torch agent: the ``minatar`` package's game (no port: it
steps at ~81,000 a core-second, ~10x the compiled step, so a JAX MinAtar would buy at most
~10% here and would have to be checked against the package frame by frame), the online
normalisation wrappers (:mod:`memrl.envs.stream_normalisation`, float64 as the reference's)
and the epsilon-greedy draws from ``numpy.random.default_rng(seed)``, drawn as the torch
agent draws them. The initial weights are the torch agent's own initialiser's
(:func:`memrl.agents.stream_q.q_network` under ``torch.manual_seed(seed)``), so one seed
starts both from the same weights and the peer check against the reference (identical
initial weights) carries over.

Deviations from the torch agent: the TD error and the step size are float32 (the torch
agent forms them as Python floats, float64); the convolution is a product over patches
(:func:`memrl.engines.nets.frame_conv3x3`); Q(s) is computed again inside the step rather
than kept from acting (the same weights, the same value).

Cost (one core of an Intel Xeon, family 6 model 207): the network is written for one frame
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

from functools import partial
from typing import Any

from memrl.engines.pin import pin

pin()  # before jax loads: XLA's flags and one core (memrl.engines.pin)

import jax
import jax.numpy as jnp
import numpy as np

from memrl.agents.contract import NO_EVALS, EnvFn, Evals, TrainLog
from memrl.agents.stream_q import StreamQParams, epsilon
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


def make_step(p: StreamQParams):
    """The compiled step: ``(params, traces, s, a, r, s_next, done, reset, s_act) ->
    (params, traces, greedy action on s_act)``; ``r`` is the scaled reward, ``done`` cuts the
    bootstrap, ``reset`` the trace. Buffers of ``params`` and ``traces`` are donated.

    The reset is kept, not applied: the returned traces carry ``traces[CUT] = reset`` and
    the next step decays them as ``where(cut, 0, gamma lambda z) + grad``, which is
    ``gamma lambda (0 if reset else z) + grad`` to the bit, one elementwise pass over the
    weights fewer (``traces`` without ``CUT``, as zeros at the start: nothing owed)."""
    decay = p.gamma * p.lamda

    @partial(jax.jit, donate_argnums=(0, 1))
    def step(params, traces, s, a, r, s_next, done, reset, s_act):
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

    return step


def greedy_action(params: Params, s: np.ndarray) -> int:
    return int(first_argmax(q_values(params, jnp.asarray(s))))


def train(
    env_fn: EnvFn,
    p: StreamQParams,
    total_steps: int,
    seed: int,
    evals: Evals = NO_EVALS,
    final: dict[str, Any] | None = None,
) -> TrainLog:
    """Stream Q(lambda) for ``total_steps`` steps on ``env_fn(seed)``, as
    :func:`memrl.agents.stream_q.train` (its arguments, its log); ``final``, when given,
    receives the last weights (``final["params"]``, numpy)."""
    from memrl.envs.stream_normalisation import NormalizeObservation, ScaleReward

    rng = np.random.default_rng(seed)
    env = ScaleReward(NormalizeObservation(env_fn(seed)), gamma=p.gamma)
    n_actions = int(env.action_space.n)
    params = init_params(env.observation_space.shape, n_actions, p, seed)
    traces = {**jax.tree.map(jnp.zeros_like, params), CUT: jnp.asarray(False)}
    step = make_step(p)
    returns, lengths, ret, length = [], [], 0.0, 0
    s, _ = env.reset(seed=seed)
    greedy = greedy_action(params, s)
    for t in range(1, total_steps + 1):
        a, nongreedy = greedy, False
        if rng.random() < epsilon(p, t, total_steps):  # as the torch agent draws
            a = int(rng.integers(n_actions))
            nongreedy = a != greedy
        obs, r, terminated, truncated, _ = env.step(a)
        done = terminated or truncated
        ret, length = ret + env.raw, length + 1
        s_act = obs
        if done:
            returns.append(ret)
            lengths.append(length)
            ret, length = 0.0, 0
            s_act, _ = env.reset()
        params, traces, g = step(
            params, traces, s, np.int32(a), np.float32(r), obs, done, done or nongreedy, s_act
        )
        greedy, s = int(g), s_act
    if final is not None:
        final["params"] = {k: np.asarray(v) for k, v in params.items()}
    return {"episode_returns": returns, "episode_lengths": lengths}
