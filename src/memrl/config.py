"""Load ``params.yaml``, select a profile and validate it before any training starts.

``params.yaml`` is the single source of truth for hyperparameters.  Its layout::

    profile: default            # smoke | default | paper
    <family>:
      default: {...}            # the full CPU reproduction; every key lives here
      smoke:   {...}            # overrides, deep-merged onto ``default``
      paper:   {...}            # overrides, deep-merged onto ``default``

Each family declares a pydantic model of its parameters in
``memrl/families/<family>/params.py`` (shared blocks and types live here); a wrong type, a
non-positive budget or an unknown key fails here with one clear message that
names the offending key, never halfway through a run.
"""

from __future__ import annotations

import copy
import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

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


class StrictModel(BaseModel):
    """Base of every parameter block: unknown keys are errors and values are frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


# --------------------------------------------------------------------------- shared blocks
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


class SACParams(StrictModel):
    """SB3 SAC keyword arguments (``net_arch`` goes to ``policy_kwargs``)."""

    learning_rate: PosFloat
    batch_size: PosInt
    buffer_size: PosInt
    learning_starts: NonNegInt
    gamma: Annotated[float, Field(gt=0, le=1)]
    tau: Annotated[float, Field(gt=0, le=1)]
    net_arch: list[PosInt] = Field(min_length=1)


class RuntimeParams(StrictModel):
    workers: PosInt = 2
    torch_threads: PosInt = 1


# --------------------------------------------------------------------------- loading
def families() -> list[str]:
    """The known families, in report order (from :data:`memrl.families.FAMILIES`)."""
    from memrl.families import NAMES

    return list(NAMES)


def family_schema(family: str) -> type[BaseModel]:
    """The pydantic model of ``family``'s section (``memrl.families.<family>.params``)."""
    known = families()
    if family not in known:
        raise ConfigError(f"unknown family '{family}'; known: {', '.join(known)}")
    return importlib.import_module(f"memrl.families.{family}.params").FAMILY_PARAMS


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
    schema = family_schema(family)
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
        return schema.model_validate(merged)
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
    for family in families():
        for profile in PROFILES:
            load_family(family, profile, path)
