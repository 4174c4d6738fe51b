"""sb3-contrib RecurrentPPO with rl-zoo's ``ppo_lstm`` settings (its hyperparameters are
:class:`memrl.agents.lstm_ppo.RecurrentPPOParams`, shared with memrl's LSTM-PPO)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from memrl.agents.contract import (
    CHECKPOINT_SEED_OFFSET,
    EVAL_SEED_OFFSET,
    NO_EVALS,
    EnvFn,
    Evals,
    TrainLog,
)
from memrl.agents.sb3 import checkpoint_callback, evaluate_returns, silent
from memrl.runtime import get_device

if TYPE_CHECKING:
    from memrl.agents.lstm_ppo import RecurrentPPOParams


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
    ``env_fn(None)`` (``make_vec_env`` seeds them), with evaluations as :func:`memrl.agents.sb3_sac.sac_train`.

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
