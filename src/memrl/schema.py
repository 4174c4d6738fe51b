"""The parameter schema: typed blocks shared by the families, and the runtime block.

No I/O and no messages: loading ``params.yaml``, merging a profile and reporting errors is
:mod:`memrl.config`. Each family's own block is ``memrl/families/<family>/params.py``, built
from these types; an agent's hyperparameters are a block like :class:`DQNParams`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from memrl.runtime import available_cores

PosInt = Annotated[int, Field(gt=0, strict=True)]
NonNegInt = Annotated[int, Field(ge=0, strict=True)]
PosFloat = Annotated[float, Field(gt=0)]
Prob = Annotated[float, Field(ge=0, le=1)]


def _registered_env(env_id: str) -> str:
    import gymnasium as gym

    from memrl.envs.registry import register_for

    register_for(env_id)
    if env_id not in gym.envs.registry:
        close = [k for k in gym.envs.registry if env_id.split("-")[0].lower() in k.lower()][:5]
        raise ValueError(
            f"unknown gymnasium env '{env_id}'" + (f"; did you mean {close}?" if close else "")
        )
    return env_id


EnvId = Annotated[str, AfterValidator(_registered_env)]


class StrictModel(BaseModel):
    """Base of every parameter block: unknown keys are errors and values are frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


# --------------------------------------------------------------------------- shared blocks
class RuntimeParams(StrictModel):
    """How jobs run: ``workers`` processes at a time (``auto``: one per core this process may
    use, divided by ``torch_threads``), each with ``torch_threads`` torch/BLAS threads."""

    workers: PosInt | Literal["auto"] = "auto"
    torch_threads: PosInt = 1

    @property
    def processes(self) -> int:
        """The number of jobs run at a time: ``workers``, or what ``auto`` means here."""
        if self.workers == "auto":
            return max(1, available_cores() // self.torch_threads)
        return self.workers


def beside_paper(ours: BaseModel, paper: BaseModel, fields: Sequence[str]) -> str:
    """Our values of ``fields`` beside the ``paper`` profile's, where they differ:
    ``hidden_size 64 (paper 128), lr 0.001 (paper 0.0003)``; the papers' values are typed once,
    in ``params.yaml``'s ``paper`` profile."""

    def text(v: object) -> str:
        return f"{v:g}" if isinstance(v, float) else str(v)

    out = []
    for name in fields:
        a, b = getattr(ours, name), getattr(paper, name)
        out.append(f"{name} {text(a)}" + ("" if a == b else f" (paper {text(b)})"))
    return ", ".join(out)
