"""Stable-Baselines3 baselines, trained and evaluated the same way for every family.

Each function trains one SB3 model with one seed and returns its per-episode training
log (``episode_returns``, ``episode_lengths``) and, where asked, the returns of
deterministic evaluation episodes on an env seeded apart from training's
(``seed + EVAL_SEED_OFFSET``). Hyperparameter blocks are the validated pydantic models
beside the agents (:class:`~memrl.agents.sb3.DQNParams`, :class:`~memrl.agents.sb3.SACParams`,
:class:`~memrl.agents.lstm_ppo.RecurrentPPOParams`); :func:`memrl.agents.sb3.sb3_kwargs` maps
them onto SB3.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from memrl.agents.contract import (
    CHECKPOINT_SEED_OFFSET,
    EVAL_SEED_OFFSET,
    NO_EVALS,
    EnvFn,
    Evals,
    TrainLog,
)
from memrl.agents.sb3 import (
    DQNParams,
    SACParams,
    exploration_schedule,
    minatar_cnn_extractor,
    sb3_kwargs,
    silent,
    steady,
)
from memrl.runtime import get_device

if TYPE_CHECKING:
    from memrl.agents.lstm_ppo import RecurrentPPOParams


def evaluate_returns(model: Any, env: Any, episodes: int) -> list[float]:
    """Returns of ``episodes`` deterministic episodes of an SB3 model (recurrent or not)."""
    from stable_baselines3.common.evaluation import evaluate_policy

    returns, _ = evaluate_policy(
        model, env, n_eval_episodes=episodes, deterministic=True, return_episode_rewards=True
    )
    return [float(r) for r in returns]


def checkpoint_callback(eval_at: Sequence[int], evaluate: Callable[[Any], Any]):
    """An SB3 callback calling ``evaluate(model)`` once the run passes each step count of
    ``eval_at`` (vectorised envs step several at a time); results in ``.results``."""
    from stable_baselines3.common.callbacks import BaseCallback

    class Checkpoints(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.todo, self.results = sorted(eval_at), []

        def _on_step(self) -> bool:
            while self.todo and self.num_timesteps >= self.todo[0]:
                self.todo.pop(0)
                self.results.append(evaluate(self.model))
            return True

    return Checkpoints()


def _log(env: Any) -> dict[str, list]:
    return {
        "episode_returns": list(env.get_episode_rewards()),
        "episode_lengths": list(env.get_episode_lengths()),
    }


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
    return {**_log(env), "eval_returns": evals, "checkpoint_returns": checks.results}


def _scheduled(value: float, schedule: str) -> float | Callable[[float], float]:
    """A constant, or rl-zoo's ``lin_<value>``: ``value`` x the share of the budget left."""
    return value if schedule == "constant" else (lambda left: value * left)


def _normalised(venv: Any, hp: RecurrentPPOParams, training: Any = None) -> Any:
    """``venv`` as the zoo's ``normalize`` makes it when ``hp.normalize``: SB3's VecNormalize
    of observations and rewards (its return variance with the algorithm's gamma); given the
    ``training`` env (evaluation), raw rewards and its observation stats, never updated."""
    if not hp.normalize:
        return venv
    from stable_baselines3.common.vec_env import VecNormalize

    if training is None:
        return VecNormalize(venv, norm_obs=True, norm_reward=True, gamma=hp.gamma)
    out = VecNormalize(venv, norm_obs=True, norm_reward=False, training=False)
    out.obs_rms = training.obs_rms
    return out


def rppo_train(
    env_fn: EnvFn, hp: RecurrentPPOParams, total_steps: int, seed: int, evals: Evals = NO_EVALS
) -> TrainLog:
    """sb3-contrib RecurrentPPO (rl-zoo ``ppo_lstm`` settings) on ``hp.n_envs`` envs
    ``env_fn(None)`` (``make_vec_env`` seeds them), with evaluations as :func:`sac_train`.

    Episode "lengths" are the global env steps between successive episode ends, so
    curves share the x-axis of the off-policy runs (env steps summed over envs).
    """
    import numpy as np
    from sb3_contrib import RecurrentPPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env
    from torch import nn

    eval_episodes, eval_at = evals.episodes, evals.at
    ends: list[int] = []
    returns: list[float] = []

    class Episodes(BaseCallback):
        def _on_step(self) -> bool:
            for info in self.locals["infos"]:
                if "episode" in info:
                    ends.append(self.num_timesteps)
                    returns.append(float(info["episode"]["r"]))
            return True

    venv = _normalised(make_vec_env(lambda: env_fn(None), n_envs=hp.n_envs, seed=seed), hp)
    model = RecurrentPPO(
        "MlpLstmPolicy",
        venv,
        n_steps=hp.n_steps,
        batch_size=hp.batch_size,
        n_epochs=hp.n_epochs,
        learning_rate=_scheduled(hp.learning_rate, hp.schedule),
        gamma=hp.gamma,
        gae_lambda=hp.gae_lambda,
        clip_range=_scheduled(hp.clip_range, hp.schedule),
        ent_coef=hp.ent_coef,
        policy_kwargs={
            "ortho_init": False,
            "activation_fn": nn.ReLU,
            "lstm_hidden_size": hp.lstm_hidden_size,
            "enable_critic_lstm": True,
            "net_arch": {"pi": list(hp.net_arch), "vf": list(hp.net_arch)},
        },
        seed=seed,
        device=get_device(),
        verbose=0,
    )

    def env(offset: int):  # evaluation: the training stats, frozen
        return _normalised(
            make_vec_env(lambda: env_fn(None), n_envs=1, seed=seed + offset), hp, venv
        )

    check_env = env(CHECKPOINT_SEED_OFFSET)
    checks = checkpoint_callback(eval_at, lambda m: evaluate_returns(m, check_env, eval_episodes))
    silent(model).learn(total_steps, callback=[Episodes(), checks])
    eval_env = env(EVAL_SEED_OFFSET)
    return {
        "episode_returns": returns,
        "episode_lengths": np.diff([0, *ends]).tolist(),
        "eval_returns": evaluate_returns(model, eval_env, eval_episodes),
        "checkpoint_returns": checks.results,
    }


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
    return {**_log(env), "memory_size": min(hp.buffer_size, total_steps)}  # transitions kept


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
    return {**_log(env), "eval_returns": evaluate_returns(model, eval_env, evals.episodes)}


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
    return {**_log(env), "eval_returns": evaluate_returns(model, eval_env, evals.episodes)}
