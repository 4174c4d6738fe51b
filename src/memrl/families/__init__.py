"""The one registry of method families.

Each family is a package ``memrl.families.<name>`` holding

- ``params.py``  its section of ``params.yaml`` as a pydantic model (``FAMILY_PARAMS``),
- ``jobs.py``    ``grid(cfg) -> list[JobSpec]`` and the job functions (nothing about claims),
- ``claims.py``  the claims as declared data, one small function each (``claims(cfg, runs)``),
- ``tables.py``  ``load(records)`` -> the family's tables, curves and ``PLOTS`` for ``dvc plots``.

:data:`FAMILIES` (in report order) is what ``dvc.yaml``'s stages and ``plots:``
(``python -m memrl dvc-yaml``), the report's order and the params validation
come from: :func:`load_family` reads a family's section of ``params.yaml`` through the
generic loader of :mod:`memrl.config`, which knows no family. The files a family's jobs may
run are found by following its ``jobs.py``'s imports (the training stage's DVC deps); each
job's key holds exactly the code its function runs (:mod:`memrl.fingerprint`).

The registry only registers: running a family's grid into a store and reading it back is
:mod:`memrl.runner`'s (:func:`~memrl.runner.family_runs`); pricing it is :mod:`memrl.estimate`'s.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType
from typing import Any

from pydantic import BaseModel

from memrl.config import (
    ConfigError,
    check_profile,
    load_runtime,
    load_section,
    read_params,
    resolved,
)
from memrl.fingerprint import job_code, module_closure
from memrl.profiles import PROFILES


@dataclass(frozen=True)
class Plot:
    """A CSV table written by the family notebook, drawn by ``dvc plots show``."""

    file: str  # under results/<profile>/<family>/plots/
    x: str
    y: tuple[str, ...]  # one column per method (IQM over seeds): one colour each
    title: str
    x_label: str  # the axes' titles, with units
    y_label: str


@dataclass(frozen=True)
class Family:
    name: str
    title: str
    data: tuple[str, ...] = ()  # data folders its jobs read (DVC deps of its runs stage)
    gpu: bool = False  # its jobs train torch networks: on a cluster with GPUs, ask for one
    artefacts: tuple[str, ...] = ()  # files its notebook writes that the report publishes

    def module(self, part: str) -> ModuleType:
        return importlib.import_module(f"memrl.families.{self.name}.{part}")

    @property
    def plots(self) -> tuple[Plot, ...]:
        return tuple(self.module("tables").PLOTS)

    def results_dir(self, profile: str) -> str:
        """Where the family's outputs for ``profile`` go (repo-relative): each profile has
        a results tree of its own, so a smoke run never touches the default results."""
        return f"results/{profile}/{self.name}"

    def runs_dir(self, profile: str) -> str:
        """The family's run store for ``profile``: one file per finished job."""
        return f"{self.results_dir(profile)}/runs"

    def timings_path(self, profile: str) -> str:
        """The per-job-group speed of the profile's stored runs, kept in git beside the
        results (repo-relative): what ``python -m memrl estimate`` prices a fresh clone from."""
        return f"{self.results_dir(profile)}/timings.json"

    def plot_path(self, profile: str, plot: Plot) -> str:
        """Where the notebook writes ``plot``'s CSV for ``profile`` (repo-relative)."""
        return f"{self.results_dir(profile)}/plots/{plot.file}"

    def preflight(self, cfg: Any) -> None:
        """The family's own checks on ``cfg`` before any job runs (``jobs.preflight``, if it
        has one: e.g. the model or data set the profile names is on this machine)."""
        check = getattr(self.module("jobs"), "preflight", None)
        if check is not None:
            check(cfg)

    def job_sources(self) -> list[str]:
        """Every source file the family's jobs may import (repo-relative), found by
        following the ``memrl`` imports of ``jobs.py`` and of its floors' job modules,
        function-level ones included."""
        mods = {f"memrl.families.{self.name}.jobs"}
        if self.floors is not None:  # it imports the job functions its grid names
            mods.add(self.floors.__name__)
        return sorted(set().union(*(module_closure(m) for m in mods)))

    @property
    def floors(self) -> ModuleType | None:
        """``memrl.families.<name>.floors``: the grid of the family's floor jobs, if any."""
        name = f"memrl.families.{self.name}.floors"
        return importlib.import_module(name) if importlib.util.find_spec(name) else None

    def grid(self, cfg: Any) -> list[Any]:
        """The profile's jobs, then its floor jobs, each stamped with the fingerprint of the
        code its job function runs (:func:`memrl.fingerprint.job_code`): a floor added or
        changed, or another algorithm edited, never moves a run's key."""
        specs = list(self.module("jobs").grid(cfg))
        if self.floors is not None:
            specs += self.floors.grid(cfg)
        return [replace(s, code=job_code(s.fn), gpu=self.gpu) for s in specs]


FAMILIES: tuple[Family, ...] = (
    Family(
        "recurrent_off_policy",
        "Recurrent off-policy RL on POMDPs",
        gpu=True,
        data=("data/tmaze",),
        artefacts=("memory_card.json",),
    ),
    Family("episodic_control", "Episodic control", gpu=True),
    Family("experience_replay", "Experience replay", data=("data/prior_experiments",)),
    Family("llm_memory_rl", "LLM memory RL", data=("data/shop", "data/dialogues"), gpu=True),
)
NAMES = tuple(f.name for f in FAMILIES)


def get(name: str) -> Family:
    for f in FAMILIES:
        if f.name == name:
            return f
    raise ValueError(f"unknown family '{name}'; known: {', '.join(NAMES)}")


def params_fingerprint(cfg: Any) -> str:
    """A hash of a family's effective parameters (what its stored runs were made for)."""
    payload = json.dumps(cfg.model_dump(mode="json"), sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


# =========================================================================== parameters
def family_schema(family: str) -> type[BaseModel]:
    """The pydantic model of ``family``'s section (``memrl.families.<family>.params``)."""
    if family not in NAMES:
        raise ConfigError(f"unknown family '{family}'; known: {', '.join(NAMES)}")
    return get(family).module("params").FAMILY_PARAMS


def load_family(
    family: str,
    profile: str = "default",
    path: str | Path | None = None,
    overrides: Mapping[str, Any] | str | None = None,
) -> Any:
    """Load, merge and validate one family's parameters for ``profile``, with ``overrides``
    (a mapping or YAML text, see :func:`memrl.config.apply_overrides`) put in before
    validation."""
    schema = family_schema(family)
    check_profile(profile)
    return load_section(read_params(path, NAMES), family, schema, profile, overrides)


def load_profile(profile: str, path: str | Path | None = None) -> dict[str, Any]:
    """Every family's validated parameters for ``profile`` (``{family: params}``); all the
    families' errors in one :class:`ConfigError`, not only the first one's."""
    check_profile(profile)
    load_runtime(path)
    out, errors = {}, []
    for family in NAMES:
        try:
            out[family] = load_family(family, profile, path)
        except ConfigError as err:
            errors.append(str(err))
    if errors:
        raise ConfigError("\n".join(errors))
    return out


def effective_params(profile: str, path: str | Path | None = None) -> dict[str, Any]:
    """What ``profile`` runs with, every default and override resolved (what ``dvc params
    diff`` compares): see :func:`memrl.config.resolved`."""
    return resolved(load_runtime(path), load_profile(profile, path))


def validate_all(path: str | Path | None = None) -> None:
    """Validate every family under every profile (used by tests)."""
    errors = []
    for profile in PROFILES:
        try:
            load_profile(profile, path)
        except ConfigError as err:
            errors.append(str(err))
    if errors:
        raise ConfigError("\n".join(errors))
