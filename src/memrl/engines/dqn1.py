"""DQN with a buffer of 1 and batch 1 ("DQN1", Elsayed, Vasan & Mahmood 2024's stream
barrier: ER-7's baseline) on the engine: the run :func:`memrl.agents.sb3_dqn.dqn_train`
makes with ``buffer_size = batch_size = train_freq = 1`` (SB3 2.x ``DQN``, its MinAtar
network), each update one XLA-compiled call; equal to SB3's update for update
(``tests/test_engine.py``: the same transitions and initial weights give parameters within
float rounding over 2,000+ updates).

What SB3's DQN does with a buffer of 1 (``stable_baselines3/dqn/dqn.py``,
``common/off_policy_algorithm.py``), step ``t`` = 1, 2, ... of the run:

- act: uniformly at random while ``t - 1 < learning_starts``; then epsilon-greedy, epsilon
  SB3's linear schedule at ``t - 1`` steps done (1 -> ``exploration_final_eps`` over
  ``exploration_fraction`` of the run: :func:`memrl.agents.sb3_dqn.exploration_schedule`);
- the transition ``(s, a, r, s', terminated)`` replaces the buffer's one (a timeout is not
  a termination: SB3's ``handle_timeout_termination``; ``s'`` the true last frame);
- the target network becomes a copy of the online one when ``t`` is a multiple of
  ``target_update_interval`` (``_on_step``, before this step's update);
- when ``t > learning_starts``: one update on that transition: Huber loss
  (``F.smooth_l1_loss``) of ``Q(s, a)`` against ``r + gamma (1 - terminated) max Q_target(s',
  .)``, the gradient clipped to global norm ``max_grad_norm`` (SB3's 10: torch's
  ``clip_grad_norm_``, coefficient ``max_norm / (norm + 1e-6)`` capped at 1), Adam (torch's
  defaults: betas 0.9, 0.999, eps 1e-8; optax's ``adam``, the same update).

The network is SB3's with the project's MinAtar torso (:func:`memrl.agents.sb3.
minatar_cnn_extractor`): conv 3x3 (16) -> ReLU -> linear (``net_arch``) -> ReLU -> linear.
Initial weights: torch's default initialisers in SB3's order (the convolution, then the two
linear layers) under ``torch.manual_seed(seed)``, as SB3 builds its online network after
seeding (a test checks they are SB3's).

Deviations from the SB3 run: the exploration draws come from
``numpy.random.default_rng(seed)`` (SB3 draws from numpy's global generator and the action
space's, interleaved with its buffer's index draw), so one seed's trajectory is not SB3's;
float32 arithmetic in XLA's order; the convolution as a product over patches.

Cost (one core of an Intel Xeon, family 6 model 207): the network is written for one frame
(:mod:`memrl.engines.nets`' ``frame_*`` pieces: a matrix-vector product in the weight's own
layout, the patches one gather, the argmax a max and a min), which took the compiled update
from ~1,100 to ~650 us. The gradient is written out rather than taken by ``jax.grad``
(:func:`make_step`): XLA formed the hidden layer's gradient inside Adam's loops with the
clip's norm recomputed there, and ran the transposed product of the backward pass as a
naive loop (~150 us); written out, the norm is the product of two vectors' and the product
is ``dh @ W``. Measured and not kept: donating the optimiser state's buffers (slower here);
the weight and its two moments stacked in one array for a single pass (1.7x slower).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from memrl.engines.pin import pin

pin()  # before jax loads: XLA's flags and one core (memrl.engines.pin)

import jax
import jax.numpy as jnp
import numpy as np
import optax

from memrl.agents import schedules
from memrl.agents.contract import NO_EVALS, EnvFn, Evals, TrainLog
from memrl.agents.sb3_dqn import DQNParams
from memrl.engines.loop import episode, game_of, run_chunks, scan_run
from memrl.engines.nets import (
    Params,
    first_argmax,
    frame_linear,
    frame_patches,
    from_torch,
)
from memrl.envs import minatar_jax as mj

MAX_GRAD_NORM = 10.0  # SB3 DQN's max_grad_norm default (dqn.py), which dqn_train keeps
# SB3's state-dict names (QNetwork: features_extractor.net = conv, ReLU, Flatten; q_net =
# Linear, ReLU, Linear)
SB3_NAMES = {"features_extractor.net.0": "conv", "q_net.0": "fc", "q_net.2": "out"}
TORCH_NAMES = {"0": "conv", "1": "fc", "2": "out"}  # init_params' modules


def init_params(obs_shape: tuple[int, ...], n_actions: int, hp: DQNParams, seed: int) -> Params:
    """SB3's initial online weights for ``seed``: torch's default initialisers, conv first."""
    import torch as th

    (hidden,) = hp.net_arch
    c, h, w = obs_shape
    th.manual_seed(seed)
    conv = th.nn.Conv2d(c, 16, 3)
    fc = th.nn.Linear(16 * (h - 2) * (w - 2), hidden)
    out = th.nn.Linear(hidden, n_actions)
    return from_torch(th.nn.Sequential(conv, fc, out).state_dict(), TORCH_NAMES)


def q_values(params: Params, x: jnp.ndarray) -> jnp.ndarray:
    """Q(x, .) for one frame (C, H, W): conv -> ReLU -> linear -> ReLU -> linear
    (:func:`forward`'s last output)."""
    return forward(params, x, frame_patches(x.shape))[-1]


def huber(x: jnp.ndarray) -> jnp.ndarray:
    """``F.smooth_l1_loss`` with beta 1, elementwise."""
    ax = jnp.abs(x)
    return jnp.where(ax < 1.0, 0.5 * x * x, ax - 0.5)


def forward(params: Params, x: jnp.ndarray, patches: np.ndarray):
    """:func:`q_values` with what its gradient needs: the patches, the convolution's and the
    hidden layer's pre-activations, their ReLUs and Q."""
    cols = x.reshape(-1)[patches]  # frame_conv3x3's patches, kept for the gradient
    w = params["conv.weight"]
    conv = w.reshape(w.shape[0], -1) @ cols + params["conv.bias"][:, None]
    flat = jax.nn.relu(conv).reshape(-1)
    pre = frame_linear(params["fc.weight"], params["fc.bias"], flat)
    hidden = jax.nn.relu(pre)
    return (
        cols,
        conv,
        flat,
        pre,
        hidden,
        frame_linear(params["out.weight"], params["out.bias"], hidden),
    )


def make_step(hp: DQNParams, obs_shape: tuple[int, int, int]):
    """:func:`make_update` compiled alone (one call per update): ``(opt, step)``, what
    ``tests/test_engine.py`` feeds SB3's transitions."""
    opt, update = make_update(hp, obs_shape)
    return opt, jax.jit(update)


def make_update(hp: DQNParams, obs_shape: tuple[int, int, int]):
    """``(opt, update)``, ``update(params, target, opt_state, s, a, r, s_next, terminated,
    s_act) -> (params, opt_state, greedy action on s_act)``: one update on the one
    transition, uncompiled. ``opt_state`` is
    optax's ``adam`` state (``opt.init``), updated as torch's Adam updates.

    The gradient is written out (one transition, three layers): with ``d = Q(s, a) - y``,
    the Huber loss's derivative ``clip(d, -1, 1)`` on Q(s, a) alone; back through the output
    layer and the ReLUs (derivative 0 at 0, as torch's and ``jax.nn.relu``'s); the hidden
    layer's weight gradient is the outer product of its two vectors, so its squared norm
    for the clip is the product of theirs and it is formed only inside Adam's passes.
    ``tests/test_engine.py`` checks each update against SB3's own. Adam as torch's
    (``torch.optim.Adam``): ``m <- b1 m + (1 - b1) g``, ``v <- b2 v + (1 - b2) g^2``,
    ``w <- w - (lr / (1 - b1^t)) m / (sqrt(v) / sqrt(1 - b2^t) + eps)``, the last division
    by a scalar taken as a product by its reciprocal."""
    opt = optax.adam(hp.learning_rate, b1=0.9, b2=0.999, eps=1e-8)  # its state's layout
    b1, b2, eps, lr = 0.9, 0.999, 1e-8, hp.learning_rate
    patches = frame_patches(obs_shape)

    def update(params, target, opt_state, s, a, r, s_next, terminated, s_act):
        q_next = jnp.max(forward(target, s_next, patches)[-1])
        y = r + (1.0 - terminated) * hp.gamma * q_next
        cols, conv, flat, pre, hidden, q = forward(params, s, patches)
        dq = jnp.where(jnp.arange(q.shape[0]) == a, jnp.clip(q[a] - y, -1.0, 1.0), 0.0)
        dh = jnp.where(pre > 0, dq @ params["out.weight"], 0.0)
        dconv = jnp.where(conv.reshape(-1) > 0, dh @ params["fc.weight"], 0.0)
        dconv = dconv.reshape(conv.shape)
        small = {
            "conv.weight": (dconv @ cols.T).reshape(params["conv.weight"].shape),
            "conv.bias": dconv.sum(1),
            "fc.bias": dh,
            "out.weight": jnp.outer(dq, hidden),
            "out.bias": dq,
        }
        norm2 = sum(jnp.sum(g * g) for g in small.values()) + jnp.sum(dh * dh) * jnp.sum(
            flat * flat
        )
        coef = jnp.minimum(MAX_GRAD_NORM / (jnp.sqrt(norm2) + 1e-6), 1.0)  # clip_grad_norm_
        grads = {k: g * coef for k, g in small.items()}
        grads["fc.weight"] = (coef * dh)[:, None] * flat[None, :]
        adam = opt_state[0]
        count = adam.count + 1
        t = count.astype(jnp.float32)
        size, root = lr / (1.0 - b1**t), 1.0 / jnp.sqrt(1.0 - b2**t)
        mu = {k: b1 * adam.mu[k] + (1.0 - b1) * g for k, g in grads.items()}
        nu = {k: b2 * adam.nu[k] + (1.0 - b2) * (g * g) for k, g in grads.items()}
        params = {k: params[k] - size * (mu[k] / (jnp.sqrt(nu[k]) * root + eps)) for k in params}
        state = (adam._replace(count=count, mu=mu, nu=nu), *opt_state[1:])
        return params, state, first_argmax(q_values(params, s_act))

    return opt, update


class Carry(NamedTuple):
    """The training loop's state between steps."""

    params: Params
    target: Params
    opt_state: Any
    env: Any  # the game's state (memrl.envs.minatar_jax)
    s: jnp.ndarray  # the frame the next action is chosen on
    greedy: jnp.ndarray  # the greedy action on ``s`` under ``params``
    key: jnp.ndarray
    t: jnp.ndarray  # steps done
    ret: jnp.ndarray  # the episode's return so far
    length: jnp.ndarray


def make_train(hp: DQNParams, game: mj.Game, total_steps: int, trace: bool = False):
    """The whole run as compiled pieces (as :func:`memrl.engines.stream_q.make_train`):
    ``init(seed) -> Carry`` and ``run(carry, n) -> (carry, per-step outputs)``. Step ``t`` =
    1, 2, ... as SB3's (module docstring): a uniform action while ``t - 1 <
    learning_starts``, else epsilon-greedy at SB3's schedule (the draws from ``fold_in(key,
    t)`` split in three: the epsilon draw, the random action, the game's uniforms); the
    game's step (:func:`memrl.envs.minatar_jax.step_autoreset_u`: ``s'`` the frame the step
    ended on, ``terminated`` its flag); the target copied when ``t`` is a multiple of
    ``target_update_interval``; when ``t > learning_starts`` one update (:func:`make_update`),
    else only the greedy action on the next frame. Per step ``run`` returns ``(done, the
    finished episode's return, its length)``; with ``trace`` also the update's inputs."""
    check(hp)
    opt, update = make_update(hp, game.obs_shape)
    n = game.n_actions
    start = hp.learning_starts if hp.anneal_from == "learning start" else 0
    span = max(1.0, hp.exploration_fraction * total_steps)

    def init(seed: int) -> Carry:
        params = init_params(game.obs_shape, n, hp, seed)
        k_reset, key = jax.random.split(jax.random.key(seed))
        env, s = mj.reset_u(game, mj.uniforms(k_reset)[1])
        zero = jnp.zeros((), jnp.float32)
        count = jnp.zeros((), jnp.int32)
        return Carry(params, params, opt.init(params), env, s, first_argmax(q_values(params, s)),
                     key, count, zero, count)  # fmt: skip

    def body(c: Carry, _):
        t = c.t + 1
        k_eps, k_act, k_env = jax.random.split(jax.random.fold_in(c.key, t), 3)
        eps = schedules.linear(
            (t - 1).astype(jnp.float32), start, span, 1.0, hp.exploration_final_eps, jnp.clip
        )  # SB3's linear schedule
        explore = (t - 1 < hp.learning_starts) | (jax.random.uniform(k_eps, (), jnp.float32) < eps)
        a = jnp.where(explore, jax.random.randint(k_act, (), 0, n, jnp.int32), c.greedy)
        env, first, r, term, trunc, final = mj.step_autoreset_u(game, c.env, a, mj.uniforms(k_env))
        done = term | trunc
        s_act = jnp.where(done, first, final)
        target = jax.tree.map(
            lambda w, old: jnp.where(t % hp.target_update_interval == 0, w, old), c.params, c.target
        )
        learn = t > hp.learning_starts
        args = (c.s, a, r, final, term.astype(jnp.float32), s_act)
        params, opt_state, greedy = jax.lax.cond(
            learn,
            lambda: update(c.params, target, c.opt_state, *args),
            lambda: (c.params, c.opt_state, first_argmax(q_values(c.params, s_act))),
        )
        ret, length, next_ret, next_length = episode(c.ret, c.length, r, done)
        out = (done, ret, length) + ((c.s, a, r, final, term, s_act, learn) if trace else ())
        carry = Carry(params, target, opt_state, env, s_act, greedy, c.key, t, next_ret,
                      next_length)  # fmt: skip
        return carry, out

    return init, scan_run(body)


def check(hp: DQNParams) -> None:
    """One clear error for a DQN that is not the engine's DQN1."""
    if (hp.buffer_size, hp.batch_size, hp.train_freq, hp.gradient_steps) != (1, 1, 1, 1):
        raise ValueError("the engine's DQN1 has buffer_size, batch_size, train_freq 1")
    if hp.tau != 1.0 or hp.train_freq_unit != "step" or len(hp.net_arch) != 1:
        raise ValueError("the engine's DQN1 copies its target (tau 1) and has one hidden layer")


def train(
    env_fn: EnvFn,
    hp: DQNParams,
    total_steps: int,
    seed: int,
    evals: Evals = NO_EVALS,
    final: dict[str, Any] | None = None,
) -> TrainLog:
    """DQN1 for ``total_steps`` steps on the game ``env_fn`` makes (ported:
    :func:`memrl.engines.loop.game_of`), as SB3's (no greedy evaluation: ``evals`` is
    not used), the loop compiled in chunks (:func:`make_train`); ``final``, when given,
    receives the last weights."""
    init, run = make_train(hp, game_of(env_fn, seed), total_steps)  # checks hp first
    carry, returns, lengths = run_chunks(run, init(seed), total_steps)
    if final is not None:
        final["params"] = {k: np.asarray(v) for k, v in carry.params.items()}
    return {"episode_returns": returns, "episode_lengths": lengths, "memory_size": 1}
