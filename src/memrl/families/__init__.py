"""The one registry of method families.

Each family is a package ``memrl.families.<name>`` holding

- ``params.py``  its section of ``params.yaml`` as a pydantic model (``FAMILY_PARAMS``),
- ``jobs.py``    ``grid(cfg) -> list[JobSpec]`` and the job functions (nothing about claims),
- ``claims.py``  the claims as declared data, one small function each (``claims(cfg, runs)``),
- ``tables.py``  ``load(records)`` -> the family's tables, curves and ``PLOTS`` for ``dvc plots``.

:data:`FAMILIES` (in report order) is what ``dvc.yaml``'s stages and ``plots:``
(``python -m memrl.pipeline dvc-yaml``), the report's order and the params validation
come from. The code a family's jobs run is found by following its ``jobs.py``'s imports,
so the training stage's DVC deps and each job's code fingerprint never miss a module.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.util
import json
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from memrl.runtime import repo_root

SRC = Path(__file__).resolve().parents[1]  # .../src/memrl


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

    def analysis_sources(self) -> list[str]:
        """Every source file the family's notebook stage reads: the ``memrl`` modules its
        notebook imports (from the jupytext twin) and the stage command, with their imports."""
        notebook = repo_root() / "notebooks" / f"{self.name}.py"
        mods = _imports(notebook, "") | {"memrl.pipeline"}
        return sorted(set().union(*(module_closure(m) for m in mods)))

    @property
    def floors(self) -> ModuleType | None:
        """``memrl.families.<name>.floors``: the grid of the family's floor jobs, if any."""
        name = f"memrl.families.{self.name}.floors"
        return importlib.import_module(name) if importlib.util.find_spec(name) else None

    def grid(self, cfg: Any) -> list[Any]:
        """The profile's jobs, then its floor jobs, each stamped with the fingerprint of the
        code it runs: the closure of its job function's module (the family's ``jobs.py``
        for its runs; ``memrl.floors`` or the family's ``floors.py`` for its floors), so a
        floor added or changed never moves a run's key."""
        specs = list(self.module("jobs").grid(cfg))
        if self.floors is not None:
            specs += self.floors.grid(cfg)
        return [replace(s, code=job_code(s.fn), gpu=self.gpu) for s in specs]


# the runner's own code (memrl/jobs.py, this registry) does not change results
RUNNER = frozenset({"src/memrl/jobs.py", "src/memrl/families/__init__.py"})


@cache
def job_code(fn: str) -> str:
    """The fingerprint of the code a job function runs: its module and every ``memrl``
    module that module imports, the runner left out."""
    from memrl.jobs import code_fingerprint

    return code_fingerprint(set(module_closure(fn.partition(":")[0])) - RUNNER, repo_root())


FAMILIES: tuple[Family, ...] = (
    Family("recurrent_off_policy", "Recurrent off-policy RL on POMDPs", gpu=True),
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


# =========================================================================== import closure
def _module_file(name: str) -> Path | None:
    parts = name.split(".")
    if parts[0] != "memrl":
        return None
    base = SRC.joinpath(*parts[1:])
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    return None


def _imports(path: Path, package: str) -> set[str]:
    """Names of the ``memrl`` modules ``path`` imports anywhere (``from x import y``: both x
    and x.y, since y may be a module)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)
    return {m for m in out if m == "memrl" or m.startswith("memrl.")}


@cache
def module_closure(module: str) -> list[str]:
    """Repo-relative source files of ``module`` and every ``memrl`` module it imports,
    transitively (with the packages' ``__init__.py`` that importing them runs)."""
    seen: set[Path] = set()
    todo = [module]
    while todo:
        name = todo.pop()
        parts = name.split(".")
        for i in range(1, len(parts) + 1):  # importing a.b.c runs a/__init__, a/b/__init__
            f = _module_file(".".join(parts[:i]))
            if f is None or f in seen:
                continue
            seen.add(f)
            pkg = ".".join(parts[:i]) if f.name == "__init__.py" else ".".join(parts[: i - 1])
            todo.extend(_imports(f, pkg))
    root = repo_root()
    return sorted(str(p.relative_to(root)) for p in seen)
