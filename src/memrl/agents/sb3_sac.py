"""SB3 SAC: its hyperparameters and its trainers (the recurrent family's memoryless
baseline; Replay across Experiments' learner)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from memrl.agents.contract import (
    CHECKPOINT_SEED_OFFSET,
    EVAL_SEED_OFFSET,
    NO_EVALS,
    EnvFn,
    Evals,
    TrainLog,
)
from memrl.agents.sb3 import (
    checkpoint_callback,
    episode_log,
    evaluate_returns,
    sb3_kwargs,
    silent,
    steady,
)
from memrl.schema import NonNegInt, PosFloat, PosInt, StrictModel


class SACParams(StrictModel):
    """SB3 SAC keyword arguments (``net_arch`` goes to ``policy_kwargs``)."""

    learning_rate: PosFloat
    batch_size: PosInt
    buffer_size: PosInt
    learning_starts: NonNegInt
    gamma: Annotated[float, Field(gt=0, le=1)]
    tau: Annotated[float, Field(gt=0, le=1)]
    net_arch: list[PosInt] = Field(min_length=1)


def sac_train(
    env_fn: EnvFn, hp: SACParams, total_steps: int, seed: int, evals: Evals = NO_EVALS
) -> TrainLog:
    """SB3 SAC with an MLP (the memoryless baseline of the recurrent family) on
    ``env_fn(seed)``; ``evals.episodes`` greedy episodes on an env of their own after
    training and after each step count of ``evals.at`` (``checkpoint_returns``)."""
    from stable_baselines3 import SAC
    from stable_baselines3.common.monitor import Monitor

    eval_episodes, eval_at = evals.episodes, evals.at

    def env_for(env_seed: int):
        return Monitor(env_fn(env_seed))

    env = env_for(seed)
    check_env = env_for(seed + CHECKPOINT_SEED_OFFSET)
    checks = checkpoint_callback(eval_at, lambda m: evaluate_returns(m, check_env, eval_episodes))
    from stable_baselines3.sac.policies import SACPolicy

    model = silent(SAC(steady(SACPolicy), env, **sb3_kwargs(hp, seed))).learn(
        total_steps, callback=checks
    )
    evals = evaluate_returns(model, env_for(seed + EVAL_SEED_OFFSET), eval_episodes)
    return {**episode_log(env), "eval_returns": evals, "checkpoint_returns": checks.results}


def sac_with_prior_train(
    env_fn: EnvFn,
    hp: SACParams,
    total_steps: int,
    seed: int,
    evals: Evals = NO_EVALS,
    prior: Any = None,
    prior_fraction: float = 0.0,
) -> TrainLog:
    """SB3 SAC on ``env_fn(None)`` whose batches mix ``prior_fraction`` of ``prior``
    transitions (a :class:`memrl.memory.mixed.Transitions`; Replay across Experiments) with
    its own; ``prior=None`` trains from scratch. ``evals.episodes`` greedy episodes after
    training (``eval_returns``)."""
    from stable_baselines3 import SAC
    from stable_baselines3.common.monitor import Monitor

    from memrl.memory.mixed import MixedReplayBuffer

    env = Monitor(env_fn(None))
    kwargs = sb3_kwargs(hp, seed)
    if prior is not None:
        kwargs["replay_buffer_class"] = MixedReplayBuffer
        kwargs["replay_buffer_kwargs"] = {"prior": prior, "prior_fraction": prior_fraction}
    from stable_baselines3.sac.policies import SACPolicy

    model = silent(SAC(steady(SACPolicy), env, **kwargs))
    model.learn(total_steps)
    eval_env = Monitor(env_fn(None))
    eval_env.reset(seed=seed + EVAL_SEED_OFFSET)
    return {**episode_log(env), "eval_returns": evaluate_returns(model, eval_env, evals.episodes)}
