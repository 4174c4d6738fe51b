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
import re
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

    from memrl.envs.registry import register_for

    register_for(env_id)
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


# --------------------------------------------------------------------------- recurrent off-policy
_CORES = {"GRU": "gru", "LSTM": "lstm", "FFM": "ffm", "window": "window"}
_METHOD = re.compile(r"^(SAC|RPPO|(RSAC|RTD3|SACD)-(GRU|LSTM|FFM|window)(-shared)?)$")


def _method_name(name: str) -> str:
    if not _METHOD.match(name):
        raise ValueError(
            f"unknown method '{name}': use SAC (SB3, no memory), RPPO (sb3-contrib), or "
            "<RSAC|RTD3|SACD>-<GRU|LSTM|FFM|window>[-shared], e.g. RSAC-LSTM or RTD3-GRU-shared"
        )
    return name


MethodName = Annotated[str, AfterValidator(_method_name)]


def parse_method(name: str) -> tuple[str, str | None, bool]:
    """``"RSAC-LSTM-shared"`` -> ``("RSAC", "lstm", True)``; ``"SAC"`` -> ``("SAC", None, False)``."""
    parts = _method_name(name).split("-")
    core = _CORES[parts[1]] if len(parts) > 1 else None
    return parts[0], core, parts[-1] == "shared"


class RecurrentParams(_Strict):
    """Recurrent SAC / TD3 / SAC-discrete (the method name sets ``core`` and ``shared_encoder``)."""

    core: Literal["gru", "lstm", "ffm", "window"] = "lstm"
    shared_encoder: bool = False
    hidden_size: PosInt
    head: list[PosInt] = Field(min_length=1)
    learning_rate: PosFloat
    gamma: Annotated[float, Field(gt=0, le=1)]
    tau: Annotated[float, Field(gt=0, le=1)]
    buffer_size: PosInt
    seq_len: PosInt
    batch_size: PosInt
    learning_starts: NonNegInt
    train_freq: PosInt
    gradient_steps: PosInt
    context: PosInt = 4  # window core: frames seen (the current one and K - 1 before)
    ffm_memory: PosInt = 8  # FFM: trace size m
    ffm_context: PosInt = 4  # FFM: frequencies c
    expl_noise: Annotated[float, Field(ge=0)] = 0.1  # TD3 (Fujimoto et al. 2018)
    target_noise: Annotated[float, Field(ge=0)] = 0.2
    noise_clip: Annotated[float, Field(ge=0)] = 0.5
    policy_delay: PosInt = 2
    target_entropy_ratio: Prob = 0.98  # SAC-discrete (Christodoulou 2019)


class RecurrentPPOParams(_Strict):
    """sb3-contrib RecurrentPPO keyword arguments (rl-zoo ``ppo_lstm.yml``)."""

    n_envs: PosInt
    n_steps: PosInt
    batch_size: PosInt
    n_epochs: PosInt
    learning_rate: PosFloat
    gamma: Annotated[float, Field(gt=0, le=1)]
    gae_lambda: Prob
    clip_range: PosFloat
    ent_coef: Annotated[float, Field(ge=0)]
    lstm_hidden_size: PosInt
    net_arch: list[PosInt] = Field(min_length=1)


class ROEnvParams(_Strict):
    """One POMDP of the recurrent off-policy family and the methods run on it."""

    env_id: EnvId
    total_timesteps: PosInt
    methods: list[MethodName] = Field(min_length=1)


class TMazeParams(_Strict):
    """Passive T-Maze sweep (Cherepanov et al.): success against corridor length."""

    lengths: list[PosInt] = Field(min_length=2)
    episodes: PosInt  # training episodes at every length
    eval_episodes: PosInt  # deterministic-policy episodes scoring success
    methods: list[MethodName] = Field(min_length=2)


class RecurrentOffPolicyParams(_Strict):
    seeds: Annotated[int, Field(ge=2, strict=True)]
    bootstrap_reps: PosInt
    curve_points: Annotated[int, Field(ge=2, strict=True)]
    eval_episodes: PosInt  # deterministic-policy episodes after training: the claims' score
    near_optimal: dict[str, float]  # env id -> return counted as "near-optimal"
    envs: list[ROEnvParams] = Field(min_length=1)
    tmaze: TMazeParams
    rsac: RecurrentParams
    rtd3: RecurrentParams
    sacd: RecurrentParams
    sac: SACParams
    rppo: RecurrentPPOParams
    benchmark: dict[str, PosInt]  # FFM vs GRU timing: batch, steps, inputs, hidden, repeats

    def agent_params(self, method: str) -> RecurrentParams:
        """The hyperparameters of a recurrent method, its core and encoder sharing set."""
        algo, core, shared = parse_method(method)
        block = {"RSAC": self.rsac, "RTD3": self.rtd3, "SACD": self.sacd}[algo]
        return block.model_copy(update={"core": core, "shared_encoder": shared})

    @model_validator(mode="after")
    def _consistent(self) -> RecurrentOffPolicyParams:
        ids = [e.env_id for e in self.envs]
        if len(set(ids)) != len(ids):
            raise ValueError(f"envs lists an env twice: {ids}")
        for e in self.envs:
            for m in e.methods:
                algo = parse_method(m)[0]
                if algo in ("RSAC", "RTD3", "SAC", "SACD"):
                    hp = self.sac if algo == "SAC" else self.agent_params(m)
                    if hp.learning_starts >= e.total_timesteps:
                        raise ValueError(f"{m}: learning_starts must be below {e.env_id}'s budget")
        if max(self.tmaze.lengths) > self.sacd.seq_len:
            raise ValueError(
                f"sacd.seq_len ({self.sacd.seq_len}) must cover the longest T-Maze "
                f"({max(self.tmaze.lengths)} steps): windows start from a zero memory"
            )
        missing = {"batch", "steps", "inputs", "hidden", "repeats"} - set(self.benchmark)
        if missing:
            raise ValueError(f"benchmark needs {sorted(missing)}")
        return self


class RuntimeParams(_Strict):
    workers: PosInt = 2
    torch_threads: PosInt = 1


FAMILIES: dict[str, type[BaseModel]] = {
    "experience_replay": ExperienceReplayParams,
    "episodic_control": EpisodicControlParams,
    "recurrent_off_policy": RecurrentOffPolicyParams,
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
