"""Turn a validated hyperparameter block into stable-baselines3 keyword arguments."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from memrl.runtime import get_device
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


class SACParams(StrictModel):
    """SB3 SAC keyword arguments (``net_arch`` goes to ``policy_kwargs``)."""

    learning_rate: PosFloat
    batch_size: PosInt
    buffer_size: PosInt
    learning_starts: NonNegInt
    gamma: Annotated[float, Field(gt=0, le=1)]
    tau: Annotated[float, Field(gt=0, le=1)]
    net_arch: list[PosInt] = Field(min_length=1)


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
