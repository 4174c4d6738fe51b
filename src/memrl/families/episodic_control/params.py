"""Schema of the ``episodic_control`` section of ``params.yaml`` (MFEC, NEC, MFEC with state aggregation).

Loaded by :func:`memrl.families.load_family`, which finds it by the family's name:
a family's schema lives in its own module so that changing it reruns only that
family's DVC stage.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from memrl.agents.mfec import MFECParams
from memrl.agents.nec import NECParams
from memrl.agents.sb3_dqn import DQNParams, MinAtarDQNParams
from memrl.schema import EnvId, PosFloat, PosInt, StrictModel


def method_label(method: str, merge_radius: float = 0.0) -> str:
    return f"MFEC r={merge_radius:g}" if method == "MFEC" and merge_radius > 0 else method


class ECEnvParams(StrictModel):
    """One environment of the episodic-control comparison and the methods run on it."""

    env_id: EnvId
    total_timesteps: PosInt
    methods: list[Literal["DQN", "MFEC", "NEC"]] = Field(min_length=1)


class AggregationParams(StrictModel):
    """MFEC with state aggregation (Pinto 2020): merge radii swept on one env."""

    env_id: EnvId
    merge_radii: list[PosFloat] = Field(min_length=1)


class EpisodicControlParams(StrictModel):
    seeds: Annotated[int, Field(ge=2, strict=True)]
    bootstrap_reps: PosInt
    curve_points: Annotated[int, Field(ge=2, strict=True)]
    early_fraction: Annotated[float, Field(gt=0, le=1)]
    envs: list[ECEnvParams] = Field(min_length=1)
    dqn_minatar: MinAtarDQNParams  # MinAtar's own DQN (Young & Tian 2019), as ER-8's
    dqn_classic: DQNParams
    mfec: MFECParams
    nec: NECParams
    aggregation: AggregationParams

    def dqn_for(self, env_id: str) -> MinAtarDQNParams | DQNParams:
        """The DQN baseline's block for ``env_id`` (MinAtar's own DQN or rl-zoo classic control)."""
        from memrl.envs.registry import MINATAR_PREFIX

        return self.dqn_minatar if env_id.startswith(MINATAR_PREFIX) else self.dqn_classic

    @model_validator(mode="after")
    def _consistent(self) -> EpisodicControlParams:
        ids = [e.env_id for e in self.envs]
        if len(set(ids)) != len(ids):
            raise ValueError(f"envs lists an env twice: {ids}")
        mfec_envs = [e.env_id for e in self.envs if "MFEC" in e.methods]
        if self.aggregation.env_id not in mfec_envs:
            raise ValueError(
                f"aggregation.env_id '{self.aggregation.env_id}' must be one of the envs running "
                f"MFEC (its exact-match runs are the baseline): {mfec_envs}"
            )
        for e in self.envs:
            if "DQN" in e.methods and self.dqn_for(e.env_id).learning_starts >= e.total_timesteps:
                raise ValueError(f"DQN learning_starts must be below {e.env_id}'s budget")
            if "NEC" in e.methods and self.nec.learning_starts >= e.total_timesteps:
                raise ValueError(f"nec.learning_starts must be below {e.env_id}'s budget")
        return self


FAMILY_PARAMS = EpisodicControlParams
