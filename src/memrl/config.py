"""Load ``params.yaml``, select a profile and validate it before any training starts.

``params.yaml`` is the single source of truth for hyperparameters.  Its layout::

    profile: default            # smoke | default | paper
    <family>:
      default: {...}            # the full CPU reproduction; every key lives here
      smoke:   {...}            # overrides, deep-merged onto ``default``
      paper:   {...}            # overrides, deep-merged onto ``default``

Each family declares a pydantic model of its parameters; a wrong type, a
non-positive budget or an unknown key fails here with one clear message that
names the offending key, never halfway through a run.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from memrl.runtime import repo_root

PROFILES = ("smoke", "default", "paper")

PosInt = Annotated[int, Field(gt=0, strict=True)]
NonNegInt = Annotated[int, Field(ge=0, strict=True)]
PosFloat = Annotated[float, Field(gt=0)]
Prob = Annotated[float, Field(ge=0, le=1)]


def _registered_env(env_id: str) -> str:
    import gymnasium as gym

    from memrl.envs.registry import MINATAR_PREFIX, register_minatar

    if env_id.startswith(MINATAR_PREFIX):
        register_minatar()
    if env_id not in gym.envs.registry:
        close = [k for k in gym.envs.registry if env_id.split("-")[0].lower() in k.lower()][:5]
        raise ValueError(
            f"unknown gymnasium env '{env_id}'" + (f"; did you mean {close}?" if close else "")
        )
    return env_id


EnvId = Annotated[str, AfterValidator(_registered_env)]


class ConfigError(ValueError):
    """Raised for any invalid parameter file, profile or value."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# --------------------------------------------------------------------------- experience replay
class QReplayParams(_Strict):
    """Tabular Q-learning with experience replay (Szlak & Shamir 2021)."""

    n_states: PosInt
    p_forward: Annotated[float, Field(gt=0, le=1)]
    gamma: Annotated[float, Field(gt=0, lt=1)]
    lr_exponent: Annotated[float, Field(gt=0.5, le=1)]
    env_steps: PosInt
    eval_every: PosInt
    replay_counts: list[NonNegInt] = Field(min_length=1)
    replay_every: list[PosInt] = Field(min_length=1)


class CliffwalkParams(_Strict):
    """Blind Cliffwalk (Schaul et al. 2016, Fig. 1)."""

    n_states: list[Annotated[int, Field(ge=2, le=20, strict=True)]] = Field(min_length=2)
    lr: PosFloat
    alpha: Annotated[float, Field(ge=0)]
    epsilon: PosFloat
    mse_threshold: PosFloat
    max_updates: PosInt


class DQNParams(_Strict):
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


class PerDQNParams(_Strict):
    env_id: EnvId
    total_timesteps: PosInt
    eval_episodes: PosInt
    alpha: Annotated[float, Field(ge=0)]
    beta0: Prob
    lr_scale: PosFloat
    dqn: DQNParams


class HerParams(_Strict):
    n_bits: list[PosInt] = Field(min_length=1)
    steps_per_bit: PosInt
    n_sampled_goal: PosInt
    goal_selection_strategy: Literal["future", "final", "episode"]
    eval_episodes: PosInt
    success_threshold: Prob
    dqn: DQNParams


class PriorDataParams(_Strict):
    """The 'previous experiment' whose replay RaE reuses (tracked by data.dvc)."""

    path: str
    seed: NonNegInt
    total_timesteps: PosInt


class SACParams(_Strict):
    """SB3 SAC keyword arguments (``net_arch`` goes to ``policy_kwargs``)."""

    learning_rate: PosFloat
    batch_size: PosInt
    buffer_size: PosInt
    learning_starts: NonNegInt
    gamma: Annotated[float, Field(gt=0, le=1)]
    tau: Annotated[float, Field(gt=0, le=1)]
    net_arch: list[PosInt] = Field(min_length=1)


class RaEParams(_Strict):
    env_id: EnvId
    total_timesteps: PosInt
    eval_episodes: PosInt
    prior_fraction: Annotated[float, Field(gt=0, lt=1)]
    early_fraction: Annotated[float, Field(gt=0, lt=1)]
    small_fraction: Annotated[float, Field(gt=0, lt=1)]
    sac: SACParams


class ExperienceReplayParams(_Strict):
    seeds: Annotated[int, Field(ge=2, strict=True)]
    bootstrap_reps: PosInt
    q_replay: QReplayParams
    cliffwalk: CliffwalkParams
    per_dqn: PerDQNParams
    her: HerParams
    prior_data: PriorDataParams
    rae: RaEParams

    @model_validator(mode="after")
    def _budgets_fit(self) -> ExperienceReplayParams:
        if self.per_dqn.dqn.learning_starts >= self.per_dqn.total_timesteps:
            raise ValueError("per_dqn.dqn.learning_starts must be below per_dqn.total_timesteps")
        if self.rae.sac.learning_starts >= self.rae.total_timesteps:
            raise ValueError("rae.sac.learning_starts must be below rae.total_timesteps")
        if self.q_replay.eval_every > self.q_replay.env_steps:
            raise ValueError("q_replay.eval_every must not exceed q_replay.env_steps")
        return self


# --------------------------------------------------------------------------- episodic control
class ECEnvParams(_Strict):
    """One environment of the episodic-control comparison and the methods run on it."""

    env_id: EnvId
    total_timesteps: PosInt
    methods: list[Literal["DQN", "MFEC", "NEC"]] = Field(min_length=1)


class MFECParams(_Strict):
    """Model-Free Episodic Control (Blundell et al. 2016)."""

    key_dim: PosInt
    k: PosInt
    capacity: PosInt
    gamma: Annotated[float, Field(gt=0, le=1)]
    epsilon_start: Prob
    epsilon_final: Prob
    exploration_fraction: Prob
    merge_radius: Annotated[float, Field(ge=0)] = 0.0


class NECParams(_Strict):
    """Neural Episodic Control (Pritzel et al. 2017)."""

    key_dim: PosInt
    capacity: PosInt
    neighbours: PosInt
    delta: PosFloat
    alpha: Prob
    learning_rate: PosFloat
    dnd_learning_rate: Annotated[float, Field(ge=0)]
    buffer_size: PosInt
    batch_size: PosInt
    n_step: PosInt
    gamma: Annotated[float, Field(gt=0, le=1)]
    train_freq: PosInt
    learning_starts: NonNegInt
    epsilon_start: Prob
    epsilon_final: Prob
    exploration_fraction: Prob


class AggregationParams(_Strict):
    """MFEC with state aggregation (Pinto 2020): merge radii swept on one env."""

    env_id: EnvId
    merge_radii: list[PosFloat] = Field(min_length=1)


class EpisodicControlParams(_Strict):
    seeds: Annotated[int, Field(ge=2, strict=True)]
    bootstrap_reps: PosInt
    curve_points: Annotated[int, Field(ge=2, strict=True)]
    early_fraction: Annotated[float, Field(gt=0, le=1)]
    envs: list[ECEnvParams] = Field(min_length=1)
    dqn_minatar: DQNParams
    dqn_classic: DQNParams
    mfec: MFECParams
    nec: NECParams
    aggregation: AggregationParams

    def dqn_for(self, env_id: str) -> DQNParams:
        """The DQN baseline's block for ``env_id`` (MinAtar network or rl-zoo classic control)."""
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


class RuntimeParams(_Strict):
    workers: PosInt = 2
    torch_threads: PosInt = 1


FAMILIES: dict[str, type[BaseModel]] = {
    "experience_replay": ExperienceReplayParams,
    "episodic_control": EpisodicControlParams,
}


# --------------------------------------------------------------------------- loading
def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``base`` with ``override`` merged in (dicts recursively, all else replaced)."""
    out = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def read_params(path: str | Path | None = None) -> dict[str, Any]:
    """Read the raw params file (``params.yaml`` at the repo root by default)."""
    path = Path(path) if path is not None else repo_root() / "params.yaml"
    if not path.is_file():
        raise ConfigError(f"parameter file not found: {path}")
    with path.open() as fh:
        raw = yaml.safe_load(fh)
    if not isinstance(raw, dict):
        raise ConfigError(f"{path} must hold a mapping at the top level")
    return raw


def _format_errors(family: str, profile: str, err: ValidationError) -> str:
    lines = [f"invalid parameters for family '{family}' (profile '{profile}'):"]
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"])
        got = f" (got {e.get('input')!r})" if loc else ""  # whole-model checks: no dump
        lines.append(f"  {family}{'.' + loc if loc else ''}: {e['msg']}{got}")
    return "\n".join(lines)


def load_family(family: str, profile: str | None = None, path: str | Path | None = None) -> Any:
    """Load, merge and validate one family's parameters for ``profile``.

    ``profile=None`` takes the ``profile`` key of the params file.
    """
    if family not in FAMILIES:
        raise ConfigError(f"unknown family '{family}'; known: {', '.join(sorted(FAMILIES))}")
    raw = read_params(path)
    profile = raw.get("profile", "default") if profile is None else profile
    if profile not in PROFILES:
        raise ConfigError(f"unknown profile '{profile}'; choose one of {', '.join(PROFILES)}")
    section = raw.get(family)
    if not isinstance(section, dict) or "default" not in section:
        raise ConfigError(f"params file has no '{family}.default' section")
    unknown = set(section) - set(PROFILES)
    if unknown:
        raise ConfigError(f"'{family}' has unknown profile keys: {sorted(unknown)}")
    merged = section["default"]
    if profile != "default":
        merged = deep_merge(merged, section.get(profile) or {})
    try:
        return FAMILIES[family].model_validate(merged)
    except ValidationError as err:
        raise ConfigError(_format_errors(family, profile, err)) from None


def load_runtime(path: str | Path | None = None) -> RuntimeParams:
    raw = read_params(path)
    try:
        return RuntimeParams.model_validate(raw.get("runtime") or {})
    except ValidationError as err:
        raise ConfigError(_format_errors("runtime", "-", err)) from None


def validate_all(path: str | Path | None = None) -> None:
    """Validate every family under every profile (used by tests and ``make``)."""
    raw = read_params(path)
    if raw.get("profile", "default") not in PROFILES:
        raise ConfigError(f"unknown profile '{raw.get('profile')}'; choose one of {PROFILES}")
    load_runtime(path)
    for family in FAMILIES:
        for profile in PROFILES:
            load_family(family, profile, path)
