"""MinAtar's own DQN on the engine (Young & Tian 2019; reference: kenjyoung/MinAtar
``examples/dqn.py`` @4241f24): the replay baseline of ER-8 and EC-1/EC-4 with its settings
(:class:`memrl.agents.sb3_dqn.MinAtarDQNParams`, every field named after the reference's
constant), its update one XLA-compiled call. On SB3 an update every step costs ~6 ms here
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

Around it, in Python: the ``minatar`` package's game through the suite's gym ids (no port:
it is not the cost), the buffer in numpy (frames as uint8: MinAtar's are 0/1), and every
random draw (actions, epsilon, batches) from ``numpy.random.default_rng(seed)``. The initial
weights are torch's default initialisation of the reference's QNetwork under
``torch.manual_seed(seed)`` (dqn.py:62-95). ``tests/test_engine_dqn.py`` checks the compiled
update against torch's (the reference's ops) over hundreds of updates.

Deviations from the reference: the convolution is a product over patches
(:func:`memrl.engines.nets.conv3x3`, the same arithmetic up to float rounding); the target
is computed for every next state and masked at terminals (the reference computes it for the
non-terminal ones only: the same values); the random draws come from numpy's generator, not
Python's ``random`` (the same distributions); the gym ids' minimal action set (the reference
plays all 6 actions).
"""

from __future__ import annotations

from functools import cache, partial
from typing import Any

from memrl.engines.pin import pin

pin()  # before jax loads: XLA's flags and one core (memrl.engines.pin)

import jax
import jax.numpy as jnp
import numpy as np

from memrl.agents.contract import NO_EVALS, EnvFn, Evals, TrainLog
from memrl.agents.sb3_dqn import MinAtarDQNParams
from memrl.engines.nets import Params, conv3x3, from_torch, linear


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


def q_values(params: Params, x: jnp.ndarray, depth: int) -> jnp.ndarray:
    """Q(x, .) for frames (N, C, H, W)."""
    h = jax.nn.relu(conv3x3(params["conv.weight"], params["conv.bias"], x))
    h = h.reshape(h.shape[0], -1)
    for k in range(depth):
        h = jax.nn.relu(linear(params[f"fc{k}.weight"], params[f"fc{k}.bias"], h))
    return linear(params["out.weight"], params["out.bias"], h)


def make_update(hp: MinAtarDQNParams):
    """The compiled update: ``(params, target, square_avg, grad_avg, s, a, r, s2, terminal)
    -> (params, square_avg, grad_avg)``; frames as uint8, the rest float32 / int32."""
    depth, o = len(hp.net_arch), hp.optimizer
    lr, alpha, eps, gamma = hp.learning_rate, o.alpha, o.eps, hp.gamma

    def loss(params, target, s, a, r, s2, terminal):
        q = q_values(params, s, depth)[jnp.arange(s.shape[0]), a]
        q_next = jnp.max(q_values(target, s2, depth), axis=1)
        y = jax.lax.stop_gradient(r + gamma * jnp.where(terminal, 0.0, q_next))
        d = jnp.abs(q - y)  # smooth L1 (beta 1), mean over the batch
        return jnp.mean(jnp.where(d < 1.0, 0.5 * d * d, d - 0.5))

    @partial(jax.jit, donate_argnums=(0, 2, 3))
    def update(params, target, square_avg, grad_avg, s, a, r, s2, terminal):
        f32 = jnp.float32
        g = jax.grad(loss)(params, target, s.astype(f32), a, r, s2.astype(f32), terminal)
        # torch.optim.RMSprop, centred, no momentum (rmsprop.py, _single_tensor_rmsprop)
        sq = jax.tree.map(lambda v, x: alpha * v + (1 - alpha) * x * x, square_avg, g)
        ga = jax.tree.map(lambda m, x: m + (1 - alpha) * (x - m), grad_avg, g)  # lerp
        step = lambda w, x, v, m: w - lr * x / (jnp.sqrt(v - m * m) + eps)  # noqa: E731
        return jax.tree.map(step, params, g, sq, ga), sq, ga

    return update


def make_act(hp: MinAtarDQNParams):
    depth = len(hp.net_arch)

    @jax.jit
    def greedy(params, s):
        return jnp.argmax(q_values(params, s[None].astype(jnp.float32), depth)[0])

    return greedy


@cache
def compiled(hp_json: str):
    """The update and the greedy action for one config (its JSON), compiled once a process."""
    hp = MinAtarDQNParams.model_validate_json(hp_json)
    return make_update(hp), make_act(hp)


def epsilon(hp: MinAtarDQNParams, t: int) -> float:
    """The reference's epsilon at frame ``t`` >= the replay start (dqn.py:170-171)."""
    e0, e1, n = hp.exploration_initial_eps, hp.exploration_final_eps, hp.exploration_steps
    done = t - hp.learning_starts
    return e1 if done >= n else (e1 - e0) / n * done + e0


def train(
    env_fn: EnvFn,
    hp: MinAtarDQNParams,
    total_steps: int,
    seed: int,
    evals: Evals = NO_EVALS,
    final: dict[str, Any] | None = None,
) -> TrainLog:
    """MinAtar's DQN for ``total_steps`` steps on ``env_fn(seed)`` (a MinAtar env): the
    training episodes' log, as :func:`memrl.agents.sb3_dqn.minatar_dqn_train`'s; ``final``,
    when given, receives the last weights (``final["params"]``, numpy). No greedy
    evaluation (the reference reports training returns)."""
    if hp.max_grad_norm is not None or hp.optimizer.momentum or not hp.optimizer.centered:
        raise ValueError(
            "the engine runs MinAtar's optimiser only: centred RMSprop, no momentum, no "
            f"gradient clipping (got {hp.optimizer}, max_grad_norm {hp.max_grad_norm})"
        )
    rng = np.random.default_rng(seed)
    env = env_fn(seed)
    n_actions = int(env.action_space.n)
    shape = env.observation_space.shape
    params = init_params(shape, n_actions, hp, seed)
    target = jax.tree.map(jnp.array, params)  # a copy (dqn.py:276)
    square_avg = jax.tree.map(jnp.zeros_like, params)
    grad_avg = jax.tree.map(jnp.zeros_like, params)
    update, greedy = compiled(hp.model_dump_json())
    n = min(hp.buffer_size, total_steps)
    states, nexts = np.zeros((n, *shape), np.uint8), np.zeros((n, *shape), np.uint8)
    actions, rewards = np.zeros(n, np.int32), np.zeros(n, np.float32)
    terminals = np.zeros(n, bool)
    size = updates = 0
    returns, lengths, ret, length = [], [], 0.0, 0
    s, _ = env.reset(seed=seed)
    for t in range(total_steps):
        if t < hp.learning_starts or rng.random() < epsilon(hp, t):
            a = int(rng.integers(n_actions))
        else:
            a = int(greedy(params, s))
        s2, r, terminated, truncated, _ = env.step(a)
        i = t % n
        states[i], nexts[i], actions[i], rewards[i], terminals[i] = s, s2, a, r, terminated
        size = min(size + 1, n)
        ret, length = ret + float(r), length + 1
        if t > hp.learning_starts and size >= hp.batch_size and t % hp.train_freq == 0:
            idx = rng.choice(size, hp.batch_size, replace=False)  # random.sample (dqn.py:124)
            params, square_avg, grad_avg = update(
                params, target, square_avg, grad_avg, states[idx], actions[idx],
                rewards[idx], nexts[idx], terminals[idx],
            )  # fmt: skip
            updates += 1
            if updates % hp.target_update_period == 0:
                target = jax.tree.map(jnp.array, params)
        s = s2
        if terminated or truncated:
            returns.append(ret)
            lengths.append(length)
            ret, length = 0.0, 0
            s, _ = env.reset()
    if final is not None:
        final["params"] = {k: np.asarray(v) for k, v in params.items()}
    return {"episode_returns": returns, "episode_lengths": lengths, "memory_size": n}
