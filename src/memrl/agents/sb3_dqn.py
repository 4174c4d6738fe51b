"""SB3 DQN: its hyperparameters, the exploration schedule and its trainers (MinAtar, PER,
HER on bit flipping)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import Field

from memrl.agents import schedules
from memrl.agents.contract import EVAL_SEED_OFFSET, NO_EVALS, EnvFn, Evals, TrainLog
from memrl.agents.sb3 import (
    checkpoint_callback,
    episode_log,
    evaluate_returns,
    minatar_cnn_extractor,
    sb3_kwargs,
    silent,
    steady,
)
from memrl.schema import NonNegInt, PosFloat, PosInt, Prob, StrictModel


class DQNParams(StrictModel):
    """SB3 DQN keyword arguments (``net_arch`` goes to ``policy_kwargs``)."""

    learning_rate: PosFloat
    batch_size: PosInt
    buffer_size: PosInt
    learning_starts: NonNegInt
    gamma: Annotated[float, Field(gt=0, le=1)]
    target_update_interval: PosInt
    train_freq: PosInt
    gradient_steps: PosInt
    exploration_fraction: Prob
    exploration_final_eps: Prob
    net_arch: list[PosInt] = Field(min_length=1)
    train_freq_unit: Literal["step", "episode"] = "step"  # SB3's train_freq=(n, unit)
    tau: Annotated[float, Field(gt=0, le=1)] = 1.0  # target update: 1 = copy (SB3 default)
    # epsilon anneals over exploration_fraction of the budget from step 0 (SB3) or, as the
    # MinAtar reference, from learning_starts (acting at random until then either way)
    anneal_from: Literal["step 0", "learning start"] = "step 0"


def exploration_schedule(hp: DQNParams, total_steps: int):
    """SB3's ``exploration_schedule`` (progress remaining -> epsilon) for ``hp``: 1 until the
    anneal starts (step 0, or ``learning_starts``), then linear to ``exploration_final_eps``
    over ``exploration_fraction`` of the budget."""
    start = hp.learning_starts if hp.anneal_from == "learning start" else 0
    span = max(1.0, hp.exploration_fraction * total_steps)

    def epsilon(progress_remaining: float) -> float:
        t = (1.0 - progress_remaining) * total_steps
        return schedules.linear(t, start, span, 1.0, hp.exploration_final_eps)

    return epsilon


def dqn_train(
    env_fn: EnvFn, hp: DQNParams, total_steps: int, seed: int, evals: Evals = NO_EVALS
) -> TrainLog:
    """SB3 DQN (MinAtar's network on MinAtar frames, an MLP on vector observations) on
    ``env_fn(seed)`` (no greedy evaluation: ``evals`` is not used)."""
    from stable_baselines3 import DQN
    from stable_baselines3.common.monitor import Monitor

    from memrl.envs.registry import is_image

    env = Monitor(env_fn(seed))
    kwargs = sb3_kwargs(hp, seed)
    from stable_baselines3.dqn.policies import CnnPolicy, DQNPolicy

    policy = steady(DQNPolicy)
    if is_image(env):
        policy = steady(CnnPolicy)
        kwargs["policy_kwargs"].update(
            features_extractor_class=minatar_cnn_extractor(), normalize_images=False
        )
    model = silent(DQN(policy, env, **kwargs))
    if hp.anneal_from != "step 0":  # SB3 anneals from step 0; MinAtar from the replay start
        model.exploration_schedule = exploration_schedule(hp, total_steps)
    model.learn(total_steps)
    return {**episode_log(env), "memory_size": min(hp.buffer_size, total_steps)}  # transitions kept


def per_dqn_train(
    env_fn: EnvFn,
    hp: DQNParams,
    total_steps: int,
    seed: int,
    evals: Evals = NO_EVALS,
    per: dict[str, float] | None = None,
) -> TrainLog:
    """SB3 DQN on ``env_fn(None)`` (SB3 seeds it), with prioritized replay
    (:class:`memrl.agents.per_dqn.PrioritizedDQN`) when ``per`` gives its ``alpha`` and
    ``beta0``; ``evals.episodes`` greedy episodes after training (``eval_returns``)."""
    from stable_baselines3 import DQN
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.dqn.policies import DQNPolicy

    from memrl.agents.per_dqn import PrioritizedDQN

    env = Monitor(env_fn(None))
    kwargs = sb3_kwargs(hp, seed)
    if per is not None:
        model = PrioritizedDQN(steady(DQNPolicy), env, replay_buffer_kwargs=dict(per), **kwargs)
    else:
        model = DQN(steady(DQNPolicy), env, **kwargs)
    silent(model).learn(total_steps)
    eval_env = Monitor(env_fn(None))
    eval_env.reset(seed=seed + EVAL_SEED_OFFSET)
    return {**episode_log(env), "eval_returns": evaluate_returns(model, eval_env, evals.episodes)}


def her_dqn_success(
    n_bits: int,
    hp: DQNParams,
    her: dict[str, Any] | None,
    total_steps: int,
    seed: int,
    eval_episodes: int,
    eval_at: Sequence[int] = (),
) -> list[float]:
    """SB3 DQN on SB3's bit-flipping env (with ``HerReplayBuffer(**her)`` when given): the
    success rate of ``eval_episodes`` deterministic episodes after each step count of
    ``eval_at`` and after training (the last value). Evaluation episodes run on an env of
    their own with fixed seeds, so every checkpoint plays the same goals."""
    from stable_baselines3 import DQN, HerReplayBuffer
    from stable_baselines3.common.envs import BitFlippingEnv

    env = BitFlippingEnv(n_bits=n_bits, continuous=False, max_steps=n_bits)
    kwargs = sb3_kwargs(hp, seed)
    if her is not None:
        kwargs["replay_buffer_class"] = HerReplayBuffer
        kwargs["replay_buffer_kwargs"] = dict(her)
    eval_env = BitFlippingEnv(n_bits=n_bits, continuous=False, max_steps=n_bits)

    def success(model: Any) -> float:
        successes = 0
        for ep in range(eval_episodes):
            obs, _ = eval_env.reset(seed=seed + EVAL_SEED_OFFSET + ep)
            done = False
            info: dict[str, Any] = {}
            while not done:
                action, _ = model.predict(obs, deterministic=True)
                obs, _, terminated, truncated, info = eval_env.step(action)
                done = terminated or truncated
            successes += bool(info.get("is_success", False))
        return successes / eval_episodes

    checks = checkpoint_callback(eval_at, success)
    from stable_baselines3.dqn.policies import MultiInputPolicy

    model = silent(DQN(steady(MultiInputPolicy), env, **kwargs))
    model.learn(total_steps, callback=checks)
    return [*checks.results, success(model)]


# --------------------------------------------------------------------------- MinAtar's DQN
# Young & Tian 2019's own DQN, the replay baseline of the MinAtar games (Elsayed, Vasan &
# Mahmood 2024 compare stream Q(λ) against it): kenjyoung/MinAtar, examples/dqn.py (commit
# 4241f24). Each field below names the reference's constant; :func:`minatar_dqn_train` maps
# it onto SB3's DQN, and :func:`minatar_dqn_deviations` says where SB3 cannot follow it.
class RMSpropParams(StrictModel):
    """``torch.optim.RMSprop``'s arguments. The reference builds torch's own RMSprop
    (dqn.py:282: ``optim.RMSprop(..., lr=step_size, alpha=SQUARED_GRAD_MOMENTUM,
    centered=True, eps=MIN_SQUARED_GRAD)``, no momentum: GRAD_MOMENTUM was never passed and
    was deleted in 4241f24), and SB3 takes any torch optimiser class, so the update is the
    same code: ``eps`` is added to the root of the centred mean square, as in torch."""

    alpha: Annotated[float, Field(gt=0, lt=1)]  # squared-gradient decay (SQUARED_GRAD_MOMENTUM)
    eps: PosFloat  # MIN_SQUARED_GRAD, added outside the square root (torch's placement)
    centered: bool
    momentum: Annotated[float, Field(ge=0, lt=1)] = 0.0


class MinAtarDQNParams(StrictModel):
    """MinAtar's DQN (examples/dqn.py) on SB3: the network is the reference's (one 3x3
    convolution with 16 channels, stride 1, ReLU; ``net_arch`` hidden ReLU units; a linear Q
    output: dqn.py:62-95), the loss SB3's Huber (``F.smooth_l1_loss``, as dqn.py:240)."""

    learning_rate: PosFloat  # STEP_SIZE (dqn.py:44)
    batch_size: PosInt  # BATCH_SIZE (dqn.py:36)
    buffer_size: PosInt  # REPLAY_BUFFER_SIZE (dqn.py:37)
    learning_starts: PosInt  # REPLAY_START_SIZE (dqn.py:42): uniform random actions before it
    gamma: Annotated[float, Field(gt=0, le=1)]  # GAMMA (dqn.py:47)
    train_freq: PosInt  # TRAINING_FREQ (dqn.py:39): env steps per update
    target_update_period: PosInt  # TARGET_NETWORK_UPDATE_FREQ (dqn.py:38), in updates
    exploration_initial_eps: Prob  # EPSILON (dqn.py:48)
    exploration_final_eps: Prob  # END_EPSILON (dqn.py:43)
    exploration_steps: PosInt  # FIRST_N_FRAMES (dqn.py:41): the anneal, from the replay start
    optimizer: RMSpropParams  # dqn.py:282
    max_grad_norm: PosFloat | None = None  # None: no clipping, as the reference (SB3's: 10)
    net_arch: list[PosInt] = Field(min_length=1)  # [128] (dqn.py:80)


def minatar_epsilon(hp: MinAtarDQNParams, total_steps: int):
    """The reference's epsilon (dqn.py:164-171) as SB3's ``exploration_schedule`` (progress
    remaining -> epsilon): uniform random actions before the replay start (SB3 does that
    itself below ``learning_starts``), then ``exploration_initial_eps`` linearly to
    ``exploration_final_eps`` over ``exploration_steps`` steps counted from the replay start,
    then flat. SB3 sets it after each step for the next action: at ``t`` steps done,
    epsilon(t) as the reference's at frame ``t``."""
    e0, e1, n, start = (
        hp.exploration_initial_eps,
        hp.exploration_final_eps,
        hp.exploration_steps,
        hp.learning_starts,
    )

    def epsilon(progress_remaining: float) -> float:
        t = round((1.0 - progress_remaining) * total_steps)  # SB3's num_timesteps
        return schedules.linear(t, start, n, e0, e1)

    return epsilon


def minatar_dqn_kwargs(hp: MinAtarDQNParams, seed: int) -> dict[str, Any]:
    """SB3 ``DQN`` keyword arguments running ``hp`` (a CnnPolicy on MinAtar's frames)."""
    import torch as th

    from memrl.runtime import get_device

    o = hp.optimizer
    return dict(
        learning_rate=hp.learning_rate,
        buffer_size=hp.buffer_size,
        learning_starts=hp.learning_starts,
        batch_size=hp.batch_size,
        gamma=hp.gamma,
        train_freq=(hp.train_freq, "step"),
        gradient_steps=1,
        # SB3 counts the target's period in env steps, the reference in updates
        target_update_interval=hp.target_update_period * hp.train_freq,
        tau=1.0,  # a copy (dqn.py:360: load_state_dict)
        exploration_initial_eps=hp.exploration_initial_eps,
        exploration_final_eps=hp.exploration_final_eps,
        # SB3 always clips; an infinite norm scales every gradient by exactly 1.0
        max_grad_norm=float("inf") if hp.max_grad_norm is None else hp.max_grad_norm,
        policy_kwargs=dict(
            net_arch=list(hp.net_arch),
            features_extractor_class=minatar_cnn_extractor(),
            normalize_images=False,
            optimizer_class=th.optim.RMSprop,
            optimizer_kwargs=dict(
                alpha=o.alpha, eps=o.eps, centered=o.centered, momentum=o.momentum
            ),
        ),
        seed=seed,
        device=get_device(),
        verbose=0,
    )


def minatar_dqn_model(env: Any, hp: MinAtarDQNParams, total_steps: int, seed: int) -> Any:
    """An SB3 DQN set up as MinAtar's (not yet trained) on a MinAtar env."""
    from stable_baselines3 import DQN
    from stable_baselines3.dqn.policies import CnnPolicy

    model = silent(DQN(steady(CnnPolicy), env, **minatar_dqn_kwargs(hp, seed)))
    model.exploration_schedule = minatar_epsilon(hp, total_steps)
    return model


def minatar_dqn_train(
    env_fn: EnvFn, hp: MinAtarDQNParams, total_steps: int, seed: int, evals: Evals = NO_EVALS
) -> TrainLog:
    """MinAtar's DQN on SB3 on ``env_fn(seed)`` (a MinAtar env; no greedy evaluation: the
    reference reports training returns)."""
    from stable_baselines3.common.monitor import Monitor

    env = Monitor(env_fn(seed))
    minatar_dqn_model(env, hp, total_steps, seed).learn(total_steps)
    return {**episode_log(env), "memory_size": min(hp.buffer_size, total_steps)}


def minatar_dqn_deviations(
    hp: MinAtarDQNParams, total_steps: int, engine: bool = True
) -> list[str]:
    """What a claim should say about a baseline run of MinAtar's DQN: its settings, and where
    the run differs from examples/dqn.py, on the engine (:mod:`memrl.engines.minatar_dqn`,
    what the jobs run) or on SB3 (:func:`minatar_dqn_train`)."""
    o = hp.optimizer
    clip = "no gradient clipping" if hp.max_grad_norm is None else f"clip {hp.max_grad_norm}"
    where = "the engine (JAX, the whole run one compiled loop)" if engine else "SB3"
    settings = (
        f"DQN with replay: MinAtar's own DQN (Young & Tian 2019, examples/dqn.py) on {where} "
        f"for {total_steps:,} steps (the reference: 5,000,000): an update every "
        f"{hp.train_freq} step(s), batch {hp.batch_size}, buffer {hp.buffer_size:,}, uniform "
        f"random actions for the first {hp.learning_starts:,} steps, target copied every "
        f"{hp.target_update_period:,} updates, RMSprop (lr {hp.learning_rate:g}, alpha "
        f"{o.alpha:g}, eps {o.eps:g}, {'centred' if o.centered else 'not centred'}, momentum "
        f"{o.momentum:g}), Huber loss, {clip}, gamma {hp.gamma:g}, epsilon "
        f"{hp.exploration_initial_eps:g} -> {hp.exploration_final_eps:g} over "
        f"{hp.exploration_steps:,} steps from the replay start, conv 16x3x3 -> "
        f"{'-'.join(map(str, hp.net_arch))} -> Q"
    )
    if engine:
        differs = (
            "the engine vs examples/dqn.py: the game is MinAtar's ported to JAX (frame-exact "
            "against the minatar package, tests/test_minatar_jax.py), every random draw "
            "(actions, epsilon, batches, the game's) from jax.random (the reference: Python's "
            "random and numpy's; the same distributions), batches drawn without replacement by "
            "Floyd's algorithm (uniform over sets, as random.sample), the convolution as one "
            "product over patches, the target's max computed for every next state and masked "
            "at terminals, and the gym ids' minimal action set (the reference plays all 6 "
            "actions); its update equals torch's reference update to float rounding "
            "(tests/test_engine_dqn.py)"
        )
    else:
        differs = (
            "SB3 vs examples/dqn.py: batches drawn with replacement (the reference: without), "
            f"the first update one step earlier (after {hp.learning_starts + 1:,} transitions, "
            f"not {hp.learning_starts + 2:,}), the target copied on env steps (the reference: "
            "on updates; the same period with an update every step), and the gym ids' minimal "
            "action set (the reference plays all 6 actions)"
        )
    return [settings, differs]
