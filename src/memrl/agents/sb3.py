"""Turn a validated hyperparameter block into stable-baselines3 keyword arguments."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from memrl.runtime import get_device


def sb3_kwargs(hp: BaseModel, seed: int, **overrides: Any) -> dict[str, Any]:
    """``hp``'s fields as SB3 constructor kwargs; ``net_arch`` moves into ``policy_kwargs``.

    The device is picked automatically (CUDA when present, else CPU).
    """
    kwargs = hp.model_dump()
    kwargs["policy_kwargs"] = {"net_arch": list(kwargs.pop("net_arch"))}
    kwargs.update(seed=seed, device=get_device(), verbose=0)
    kwargs.update(overrides)
    return kwargs
