"""MinAtar's own DQN on the engine (Young & Tian 2019; reference: kenjyoung/MinAtar
``examples/dqn.py`` @4241f24): the replay baseline of ER-8 and EC-1/EC-4 with its settings
(:class:`memrl.agents.sb3_dqn.MinAtarDQNParams`, every field named after the reference's
constant), the whole run one XLA-compiled loop. On SB3 an update every step costs ~6 ms here
(``benchmarks/minatar_dqn.py``): most of it is dispatching a small network's ops from Python.

The loop reads as the reference's ``dqn()`` (dqn.py:326-367)::

    for t = 0, 1, ...: act: uniform at random while t < REPLAY_START_SIZE, else
        epsilon-greedy, epsilon from 1 linearly to 0.1 over FIRST_N_FRAMES counted from the
        replay start (dqn.py:161-180); store (s, s', a, r, terminal) in a cyclic buffer of
        REPLAY_BUFFER_SIZE (dqn.py:107-124);
        once t > REPLAY_START_SIZE, every TRAINING_FREQ steps: a batch of BATCH_SIZE drawn
        without replacement, one update (dqn.py:204-245): Huber loss (smooth L1, mean) of
        Q(s, a) against r + GAMMA max_a' Q_target(s', a') (0 at a terminal), one step of
        torch's centred RMSprop (dqn.py:282: lr STEP_SIZE, alpha 0.95, eps 0.01 added to the
        root, no momentum), no gradient clipping; the target copied every
        TARGET_NETWORK_UPDATE_FREQ updates (dqn.py:359).

Around it, compiled with it (:func:`make_train`, PureJaxRL's ``make_train`` shape: the run
is chunks of one ``lax.scan`` each): the game, ported to JAX and frame-exact against the
``minatar`` package (:mod:`memrl.envs.minatar_jax`, ``tests/test_minatar_jax.py``), the
buffer in the loop's carry (frames as uint8: MinAtar's are 0/1), the batch drawn without
replacement by Floyd's algorithm (:func:`sample_indices`) and every random draw (actions,
epsilon, batches, the game's outcomes) from ``jax.random`` (threefry, ``fold_in(key(seed),
t)`` per step). The initial weights are torch's default initialisation of the reference's
QNetwork under ``torch.manual_seed(seed)`` (dqn.py:62-95). ``tests/test_engine_dqn.py``
checks the update against torch's (the reference's ops) over hundreds of updates, and the
compiled run's batches against its own transitions and the per-update step.

Deviations from the reference: the convolution is a product over patches
(:func:`forward`, the same arithmetic up to float rounding); the target
is computed for every next state and masked at terminals (the reference computes it for the
non-terminal ones only: the same values); the random draws come from ``jax.random``, not
Python's ``random`` and numpy's (the same distributions; a batch's order within it differs:
:func:`sample_indices`); the gym ids' minimal action set (the reference plays all 6
actions); the game is the port (the package's dynamics, its random outcomes from
``jax.random``).
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
from memrl.agents.sb3_dqn import MinAtarDQNParams
from memrl.engines.loop import episode, game_of, run_chunks, scan_run
from memrl.engines.nets import Params, chunked_matmul, first_argmax, frame_patches, from_torch
from memrl.envs import minatar_jax as mj


def torch_q_network(obs_shape: tuple[int, ...], n_actions: int, hp: MinAtarDQNParams):
    """The reference's QNetwork (dqn.py:62-95) as a torch ``Sequential``: conv 16x3x3,
    stride 1, ReLU, then ``net_arch`` ReLU layers, then a linear Q output."""
    import torch as th

    c, h, w = obs_shape
    layers: list[th.nn.Module] = [th.nn.Conv2d(c, 16, 3, stride=1), th.nn.ReLU(), th.nn.Flatten()]
    width = 16 * (h - 2) * (w - 2)
    for units in hp.net_arch:
        layers += [th.nn.Linear(width, units), th.nn.ReLU()]
        width = units
    return th.nn.Sequential(*layers, th.nn.Linear(width, n_actions))


def torch_names(hp: MinAtarDQNParams) -> dict[str, str]:
    """:func:`torch_q_network`'s module indices -> the engine's layer names."""
    names, i = {"0": "conv"}, 3
    for k in range(len(hp.net_arch)):
        names[str(i)] = f"fc{k}"
        i += 2
    names[str(i)] = "out"
    return names


def init_params(obs_shape: tuple[int, ...], n_actions: int, hp: MinAtarDQNParams, seed: int):
    """torch's default initial weights of the reference's network for ``seed``."""
    import torch as th

    th.manual_seed(seed)
    return from_torch(torch_q_network(obs_shape, n_actions, hp).state_dict(), torch_names(hp))


def forward(params: Params, x: jnp.ndarray, depth: int):
    """The network on frames ``x`` (N, C, H, W), every activation laid out features x batch
    (the layouts XLA:CPU multiplies fastest under the pin: module docstring): ``(cols,
    pres, acts, q)``, the patches (C * 9, P, N), each layer's pre-activation (the
    convolution's (16, P, N), then each hidden layer's), each linear layer's input and Q
    (actions, N)."""
    n = x.shape[0]
    cols = x.reshape(n, -1).T[frame_patches(x.shape[1:])]  # (C * 9, P, N)
    w = params["conv.weight"]
    conv = (w.reshape(w.shape[0], -1) @ cols.reshape(cols.shape[0], -1)).reshape(
        w.shape[0], -1, n
    ) + params["conv.bias"][:, None, None]
    pres, acts = [conv], []
    h = jax.nn.relu(conv).reshape(-1, n)  # torch's flatten: row o * P + p
    for k in range(depth):
        acts.append(h)
        pres.append(chunked_matmul(params[f"fc{k}.weight"], h) + params[f"fc{k}.bias"][:, None])
        h = jax.nn.relu(pres[-1])
    acts.append(h)
    return cols, pres, acts, params["out.weight"] @ h + params["out.bias"][:, None]


def q_values(params: Params, x: jnp.ndarray, depth: int) -> jnp.ndarray:
    """Q(x, .) for frames (N, C, H, W): (N, actions)."""
    return forward(params, x, depth)[-1].T


def gradients(params: Params, cols, pres, acts, dq: jnp.ndarray, depth: int) -> Params:
    """Back through :func:`forward` from ``dq`` (actions, N), the loss's derivative on Q:
    each weight's gradient (ReLU's derivative 0 at 0, as torch's). The input gradient of a
    hidden layer is ``d.T @ w``, the product in the layout XLA runs fast, transposed after
    an optimisation barrier (without it XLA folds the transpose into the product: ``w.T @
    d``, measured ~2.5x slower on one core of an AMD EPYC, family 26). The two products
    with a long sum, a hidden layer's forward (K = 16 x 64 for the first) and the
    convolution's weight gradient (K = patches x batch), run as
    :func:`~memrl.engines.nets.chunked_matmul`: summed in an order that does not depend on
    the CPU's L1 size."""
    g = {"out.weight": dq @ acts[-1].T, "out.bias": dq.sum(1)}
    d = params["out.weight"].T @ dq
    for k in reversed(range(depth)):
        d = jnp.where(pres[k + 1] > 0, d, 0.0)
        g[f"fc{k}.weight"], g[f"fc{k}.bias"] = d @ acts[k].T, d.sum(1)
        d = jax.lax.optimization_barrier(d.T @ params[f"fc{k}.weight"]).T
    d = jnp.where(pres[0] > 0, d.reshape(pres[0].shape), 0.0)  # (16, P, N)
    w = params["conv.weight"]
    dw = chunked_matmul(cols.reshape(cols.shape[0], -1), d.reshape(d.shape[0], -1).T).T
    return {**g, "conv.weight": dw.reshape(w.shape), "conv.bias": d.sum((1, 2))}


def make_update(hp: MinAtarDQNParams):
    """One update, uncompiled: ``(params, target, square_avg, grad_avg, s, a, r, s2,
    terminal) -> (params, square_avg, grad_avg)``; frames as uint8, the rest float32 / int32
    / bool. The loss is the mean over the batch of the Huber loss (smooth L1, beta 1) of
    ``Q(s, a)`` against ``r + gamma max_a' Q_target(s', a')`` (0 at a terminal); its
    derivative on ``Q(s, a)`` is ``clip(Q(s, a) - y, -1, 1) / N``, taken back by
    :func:`gradients` (written out: ``jax.grad`` of the same loss, ``tests/test_engine_dqn.py``,
    ran the products in layouts ~1.7x slower)."""
    depth, o = len(hp.net_arch), hp.optimizer
    lr, alpha, eps, gamma = hp.learning_rate, o.alpha, o.eps, hp.gamma

    def update(params, target, square_avg, grad_avg, s, a, r, s2, terminal):
        f32 = jnp.float32
        q_next = jnp.max(forward(target, s2.astype(f32), depth)[-1], axis=0)
        y = r + gamma * jnp.where(terminal, 0.0, q_next)
        cols, pres, acts, q = forward(params, s.astype(f32), depth)
        n = s.shape[0]
        taken = jnp.arange(q.shape[0])[:, None] == a[None, :]
        dq = jnp.where(taken, jnp.clip(q[a, jnp.arange(n)] - y, -1.0, 1.0) / n, 0.0)
        g = gradients(params, cols, pres, acts, dq, depth)
        # torch.optim.RMSprop, centred, no momentum (rmsprop.py, _single_tensor_rmsprop)
        sq = jax.tree.map(lambda v, x: alpha * v + (1 - alpha) * x * x, square_avg, g)
        ga = jax.tree.map(lambda m, x: m + (1 - alpha) * (x - m), grad_avg, g)  # lerp
        step = lambda w, x, v, m: w - lr * x / (jnp.sqrt(v - m * m) + eps)  # noqa: E731
        return jax.tree.map(step, params, g, sq, ga), sq, ga

    return update


def loss(params: Params, target: Params, s, a, r, s2, terminal, hp: MinAtarDQNParams):
    """The update's loss as a function (frames float32): what ``jax.grad`` differentiates in
    ``tests/test_engine_dqn.py`` to check :func:`gradients`."""
    depth = len(hp.net_arch)
    q = q_values(params, s, depth)[jnp.arange(s.shape[0]), a]
    q_next = jnp.max(q_values(target, s2, depth), axis=1)
    y = jax.lax.stop_gradient(r + hp.gamma * jnp.where(terminal, 0.0, q_next))
    d = jnp.abs(q - y)
    return jnp.mean(jnp.where(d < 1.0, 0.5 * d * d, d - 0.5))


def make_step(hp: MinAtarDQNParams):
    """:func:`make_update` compiled alone (one call per update): what ``tests/test_engine_dqn.py``
    feeds torch's reference update's batches and the compiled run's."""
    return jax.jit(make_update(hp))


def sample_indices(key: jax.Array, size: jax.Array, k: int) -> jax.Array:
    """``k`` distinct indices drawn uniformly from ``range(size)`` (``size`` >= ``k``, traced):
    Floyd's algorithm (Bentley & Floyd 1987, "A sample of brilliance"): for ``j`` = ``size - k``
    .. ``size - 1``, draw ``t`` uniform in ``[0, j]`` and take ``t``, or ``j`` if ``t`` is taken
    already. Every k-subset is equally likely (the reference's ``random.sample``'s
    distribution over sets; the order within a batch differs, which only the mean loss's
    rounding sees)."""
    j = size - k + jnp.arange(k, dtype=jnp.int32)
    t = jax.random.randint(key, (k,), 0, j + 1, jnp.int32)

    def pick(i, chosen):
        return chosen.at[i].set(jnp.where(jnp.any(chosen == t[i]), j[i], t[i]))

    return jax.lax.fori_loop(0, k, pick, jnp.full((k,), -1, jnp.int32))


class Buffer(NamedTuple):
    """The cyclic replay buffer (dqn.py:107-124): row ``t % capacity`` holds step ``t``'s
    transition; frames as uint8 (MinAtar's are 0/1)."""

    s: jnp.ndarray
    s2: jnp.ndarray
    a: jnp.ndarray
    r: jnp.ndarray
    terminal: jnp.ndarray


class Carry(NamedTuple):
    """The training loop's state between steps."""

    params: Params
    target: Params
    square_avg: Params
    grad_avg: Params
    buffer: Buffer
    env: Any  # the game's state (memrl.envs.minatar_jax)
    s: jnp.ndarray  # the frame the next action is chosen on
    key: jnp.ndarray
    t: jnp.ndarray  # frames done (the reference's ``t``)
    updates: jnp.ndarray  # the reference's policy_net_update_counter
    ret: jnp.ndarray  # the episode's return so far
    length: jnp.ndarray


def make_train(hp: MinAtarDQNParams, game: mj.Game, total_steps: int, trace: bool = False):
    """The whole run as compiled pieces (as :func:`memrl.engines.stream_q.make_train`):
    ``init(seed) -> Carry`` and ``run(carry, n) -> (carry, per-step outputs)``. Frame ``t`` =
    0, 1, ... as the reference's loop (module docstring; dqn.py:339-362), its draws from
    ``fold_in(key, t)`` split in four (the epsilon draw, the random action, the game's
    uniforms, the batch):

    1. a uniform random action while ``t < learning_starts``, else epsilon-greedy on ``s``
       (epsilon :func:`memrl.agents.schedules.linear` from the replay start);
    2. the game's step (:func:`memrl.envs.minatar_jax.step_autoreset_u`); the transition
       ``(s, s', a, r, terminated)`` written to row ``t % capacity``;
    3. when ``t > learning_starts``, the buffer holds a batch and ``t % train_freq == 0``: a
       batch without replacement (:func:`sample_indices`), one update (:func:`make_update`),
       the update counter up by one; the target a copy of the weights whenever the counter
       is a positive multiple of ``target_update_period`` (dqn.py:359).

    Per step ``run`` returns ``(done, the finished episode's return, its length)``; with
    ``trace`` also the transition, whether it updated and the batch's rows."""
    check(hp)
    update = make_update(hp)
    depth, n, k = len(hp.net_arch), game.n_actions, hp.batch_size
    capacity = min(hp.buffer_size, total_steps)
    shape = game.obs_shape

    def init(seed: int) -> Carry:
        params = init_params(shape, n, hp, seed)
        k_reset, key = jax.random.split(jax.random.key(seed))
        env, s = mj.reset_u(game, mj.uniforms(k_reset)[1])
        frames = jnp.zeros((capacity, *shape), jnp.uint8)
        buffer = Buffer(frames, frames, jnp.zeros(capacity, jnp.int32),
                        jnp.zeros(capacity, jnp.float32), jnp.zeros(capacity, bool))  # fmt: skip
        zeros = jax.tree.map(jnp.zeros_like, params)
        count, zero = jnp.zeros((), jnp.int32), jnp.zeros((), jnp.float32)
        return Carry(params, params, zeros, zeros, buffer, env, s, key, count, count, zero,
                     count)  # fmt: skip

    def greedy(params, s):
        return first_argmax(q_values(params, s[None], depth)[0])

    def body(c: Carry, _):
        k_eps, k_act, k_env, k_batch = jax.random.split(jax.random.fold_in(c.key, c.t), 4)
        eps = schedules.linear(c.t.astype(jnp.float32), hp.learning_starts,
                               hp.exploration_steps, hp.exploration_initial_eps,
                               hp.exploration_final_eps, jnp.clip)  # fmt: skip
        explore = (c.t < hp.learning_starts) | (jax.random.uniform(k_eps, (), jnp.float32) < eps)
        rand = jax.random.randint(k_act, (), 0, n, jnp.int32)
        a = jax.lax.cond(explore, lambda: rand, lambda: greedy(c.params, c.s))
        env, first, r, term, trunc, final = mj.step_autoreset_u(game, c.env, a, mj.uniforms(k_env))
        i = c.t % capacity
        b = c.buffer
        row = (c.s.astype(jnp.uint8), final.astype(jnp.uint8), a, r, term)
        buffer = Buffer(*(x.at[i].set(v) for x, v in zip(b, row, strict=True)))
        size = jnp.minimum(c.t + 1, capacity)
        learn = (c.t > hp.learning_starts) & (size >= k) & (c.t % hp.train_freq == 0)

        def learn_step():
            idx = sample_indices(k_batch, size, k)
            batch = (buffer.s[idx], buffer.a[idx], buffer.r[idx], buffer.s2[idx],
                     buffer.terminal[idx])  # fmt: skip
            return *update(c.params, c.target, c.square_avg, c.grad_avg, *batch), idx

        no_update = (c.params, c.square_avg, c.grad_avg, jnp.zeros(k, jnp.int32))
        params, square_avg, grad_avg, idx = jax.lax.cond(learn, learn_step, lambda: no_update)
        updates = c.updates + learn.astype(jnp.int32)
        copy = learn & (updates % hp.target_update_period == 0)
        target = jax.lax.cond(copy, lambda: params, lambda: c.target)
        done = term | trunc
        ret, length, next_ret, next_length = episode(c.ret, c.length, r, done)
        out = (done, ret, length) + (row + (learn, idx) if trace else ())
        carry = Carry(params, target, square_avg, grad_avg, buffer, env, first, c.key, c.t + 1,
                      updates, next_ret, next_length)  # fmt: skip
        return carry, out

    return init, scan_run(body)


def check(hp: MinAtarDQNParams) -> None:
    """One clear error for a config the engine does not run."""
    if hp.max_grad_norm is not None or hp.optimizer.momentum or not hp.optimizer.centered:
        raise ValueError(
            "the engine runs MinAtar's optimiser only: centred RMSprop, no momentum, no "
            f"gradient clipping (got {hp.optimizer}, max_grad_norm {hp.max_grad_norm})"
        )


def train(
    env_fn: EnvFn,
    hp: MinAtarDQNParams,
    total_steps: int,
    seed: int,
    evals: Evals = NO_EVALS,
    final: dict[str, Any] | None = None,
) -> TrainLog:
    """MinAtar's DQN for ``total_steps`` steps on the game ``env_fn`` makes (ported:
    :func:`memrl.engines.loop.game_of`): the training episodes' log, as
    :func:`memrl.agents.sb3_dqn.minatar_dqn_train`'s, the loop compiled in chunks
    (:func:`make_train`); ``final``, when given, receives the last weights
    (``final["params"]``, numpy). No greedy evaluation (the reference reports training
    returns)."""
    init, run = make_train(hp, game_of(env_fn, seed), total_steps)  # checks hp first
    carry, returns, lengths = run_chunks(run, init(seed), total_steps)
    if final is not None:
        final["params"] = {k: np.asarray(v) for k, v in carry.params.items()}
    return {
        "episode_returns": returns,
        "episode_lengths": lengths,
        "memory_size": min(hp.buffer_size, total_steps),
    }
