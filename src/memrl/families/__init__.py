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

A family runs its grid into a store (:meth:`Family.run`) and reads it back
(:meth:`Family.load`), both with the parameters the caller already holds; reading never
trains. Pricing what a run will cost is the pipeline's side (:mod:`memrl.estimate`).
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
    parse_overrides,
    read_params,
    resolved,
)
from memrl.executors import Executed, execute
from memrl.fingerprint import job_code, module_closure
from memrl.profiles import PROFILES
from memrl.runs import MissingRunsError, RunStore
from memrl.runtime import cache_dir, repo_root


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

    def store(self, profile: str, runs_dir: str | Path = "", overrides: Any = None) -> RunStore:
        """Where the runs for ``profile`` live: ``runs_dir`` when given (what the DVC stage
        passes: the profile's run store), else a cache store of this profile and
        ``overrides`` (JupyterLab, nbval), which :meth:`run` fills."""
        overrides = parse_overrides(overrides)
        if runs_dir and overrides:
            raise ConfigError(
                "overrides change the runs made here; stored runs (runs_dir) were made with "
                "params.yaml's values: leave runs_dir empty to run the overridden jobs"
            )
        if runs_dir:
            path = Path(runs_dir)
            return RunStore(path if path.is_absolute() else repo_root() / path)
        name = profile
        if overrides:
            text = json.dumps(overrides, sort_keys=True, default=str)
            name += "+" + hashlib.sha256(text.encode()).hexdigest()[:8]
        return RunStore(cache_dir() / "runs" / self.name / name)

    def run(
        self,
        cfg: Any,
        profile: str,
        store: RunStore,
        executor: str | None = None,
        specs: list[Any] | None = None,
    ) -> Executed:
        """Run the family's jobs for ``cfg`` (``specs``: its grid, when the caller built it
        already) into ``store``, skipping stored ones; then prune stale results and write the
        manifest (what :meth:`load` checks)."""
        rt = load_runtime()
        self.preflight(cfg)  # e.g. a missing model or data set fails here, before any job
        specs = specs if specs is not None else self.grid(cfg)
        store.root.mkdir(parents=True, exist_ok=True)
        (store.root / "manifest.json").unlink(missing_ok=True)  # written again once all are in
        done = execute(specs, store, executor, rt.processes, rt.torch_threads, desc=self.name)
        store.prune(specs)
        meta = {"family": self.name, "profile": profile, "params": params_fingerprint(cfg)}
        store.write_manifest(specs, meta)
        return done

    def load(self, cfg: Any, profile: str, store: RunStore) -> list[dict[str, Any]]:
        """The results in ``store``, checked to have been made for ``profile`` with ``cfg``'s
        parameters; a clear error says which command makes them."""
        man = store.manifest()
        if man.get("profile") != profile or man.get("params") != params_fingerprint(cfg):
            raise MissingRunsError(
                f"the runs in {store.root} were made for profile '{man.get('profile')}' with "
                f"other parameters than profile '{profile}' has now: run "
                f"`python -m memrl repro --profile {profile}` (or `python -m memrl runs "
                f"{self.name} --profile {profile}`)"
            )
        try:
            return store.results()
        except MissingRunsError as err:  # a run file lost or corrupt since the runs stage
            raise MissingRunsError(
                f"{err}: `python -m memrl runs {self.name} --profile {profile}` runs them again"
            ) from None


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
