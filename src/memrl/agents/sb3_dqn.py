"""SB3 DQN: its hyperparameters, the exploration schedule and its trainers (MinAtar, PER,
HER on bit flipping)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import Field

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
        done = min(1.0, max(0.0, ((1.0 - progress_remaining) * total_steps - start) / span))
        return 1.0 + done * (hp.exploration_final_eps - 1.0)

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
