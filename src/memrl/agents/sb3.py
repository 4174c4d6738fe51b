"""Stable-Baselines3 plumbing every SB3 trainer shares: a validated hyperparameter block as
SB3's keyword arguments, a policy that sets its training mode only when it changes, a silent
logger, MinAtar's torso, greedy evaluation and checkpoint callbacks, the training log.

The trainers sit beside their configs, one algorithm a module: :mod:`memrl.agents.sb3_sac`,
:mod:`memrl.agents.sb3_dqn`, :mod:`memrl.agents.sb3_rppo`. Each trains one SB3 model with
one seed and returns its per-episode training log (``episode_returns``,
``episode_lengths``) and, where asked, the returns of deterministic evaluation episodes on
an env seeded apart from training's (``seed + EVAL_SEED_OFFSET``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel

from memrl.runtime import get_device


def sb3_kwargs(hp: BaseModel, seed: int, **overrides: Any) -> dict[str, Any]:
    """``hp``'s fields as SB3 constructor kwargs; ``net_arch`` moves into ``policy_kwargs``,
    with Adam's fused kernel (``optimizer_kwargs``: one kernel per step for every parameter,
    the same update up to float rounding; ``benchmarks/sb3_levers.py`` measures it).

    The device is picked automatically (CUDA when present, else CPU).
    """
    kwargs = hp.model_dump(exclude={"anneal_from"})
    kwargs["policy_kwargs"] = {
        "net_arch": list(kwargs.pop("net_arch")),
        "optimizer_kwargs": {"fused": True},
    }
    if "train_freq_unit" in kwargs:  # DQN: every n steps or every n episodes
        kwargs["train_freq"] = (kwargs["train_freq"], kwargs.pop("train_freq_unit"))
    kwargs.update(seed=seed, device=get_device(), verbose=0)
    kwargs.update(overrides)
    return kwargs


def steady(policy: type) -> type:
    """``policy`` (an SB3 policy class) that switches its modules' training mode only when
    the mode changes: SB3 sets it on every ``predict`` (every env step) and ``train`` call,
    each time walking every module (``benchmarks/sb3_levers.py`` measures the difference)."""

    class Steady(policy):  # type: ignore[misc, valid-type]
        _mode: bool | None = None

        def set_training_mode(self, mode: bool) -> None:
            if mode != self._mode:
                super().set_training_mode(mode)
                self._mode = mode

    Steady.__name__ = Steady.__qualname__ = f"Steady{policy.__name__}"
    return Steady


def silent(model: Any) -> Any:
    """``model`` with a logger that writes nothing: SB3's default makes a ``SB3-<date>``
    folder in the temp directory on every ``learn()``, and we read our own episode logs."""
    from stable_baselines3.common.logger import Logger

    model.set_logger(Logger(folder=None, output_formats=[]))
    return model


def minatar_cnn_extractor():
    """The MinAtar network's convolutional torso (Young & Tian 2019) as an SB3 features extractor.

    One 3x3 convolution with 16 channels (stride 1), flattened; with ``net_arch=[128]``
    SB3 adds the network's 128-unit hidden layer and the Q output, giving exactly
    MinAtar's conv 16x3x3 -> 128 -> Q. (SB3's NatureCNN needs frames of at least
    36x36; MinAtar's are 10x10.)
    """
    import torch as th
    from stable_baselines3.common.torch_layers import BaseFeaturesExtractor

    class MinAtarCNN(BaseFeaturesExtractor):
        def __init__(self, observation_space) -> None:
            c, h, w = observation_space.shape
            super().__init__(observation_space, 16 * (h - 2) * (w - 2))
            self.net = th.nn.Sequential(th.nn.Conv2d(c, 16, 3), th.nn.ReLU(), th.nn.Flatten())

        def forward(self, obs: th.Tensor) -> th.Tensor:
            return self.net(obs)

    return MinAtarCNN


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


def episode_log(env: Any) -> dict[str, list]:
    """A Monitor-wrapped env's finished episodes: ``episode_returns``, ``episode_lengths``."""
    return {
        "episode_returns": list(env.get_episode_rewards()),
        "episode_lengths": list(env.get_episode_lengths()),
    }
