"""A family's jobs run into a store and read back: the one place this happens, for the runs
stage (:func:`memrl.pipeline.run_stage`) and for a family notebook opened on its own
(JupyterLab, nbval), which runs its jobs into a cache store first (:func:`family_runs`).

The registry (:mod:`memrl.families`) only says which families exist and where their parts
are; the store (:mod:`memrl.runs`) knows no family; the executors run what they are given.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from memrl.config import ConfigError, load_runtime, parse_overrides
from memrl.executors import Executed, execute
from memrl.families import Family, params_fingerprint
from memrl.runs import MissingRunsError, RunStore
from memrl.runtime import cache_dir, repo_root


def open_store(
    fam: Family, profile: str, runs_dir: str | Path = "", overrides: Any = None
) -> RunStore:
    """Where ``fam``'s runs for ``profile`` live: ``runs_dir`` when given (what the DVC
    stage passes: the profile's run store), else a cache store of this profile and
    ``overrides``, which :func:`run_jobs` fills."""
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
    return RunStore(cache_dir() / "runs" / fam.name / name)


def run_jobs(
    fam: Family,
    cfg: Any,
    profile: str,
    store: RunStore,
    executor: str | None = None,
    specs: list[Any] | None = None,
) -> Executed:
    """Run ``fam``'s jobs for ``cfg`` (``specs``: its grid, when the caller built it
    already) into ``store``, skipping stored ones; then prune stale results and write the
    manifest (what :func:`load_runs` checks)."""
    rt = load_runtime()
    fam.preflight(cfg)  # e.g. a missing model or data set fails here, before any job
    specs = specs if specs is not None else fam.grid(cfg)
    store.root.mkdir(parents=True, exist_ok=True)
    (store.root / "manifest.json").unlink(missing_ok=True)  # written again once all are in
    done = execute(specs, store, executor, rt.processes, rt.torch_threads, desc=fam.name)
    store.prune(specs)
    meta = {"family": fam.name, "profile": profile, "params": params_fingerprint(cfg)}
    store.write_manifest(specs, meta)
    return done


def load_runs(fam: Family, cfg: Any, profile: str, store: RunStore) -> list[dict[str, Any]]:
    """The results in ``store``, checked to have been made for ``profile`` with ``cfg``'s
    parameters; reading never trains, and a clear error says which command makes them."""
    man = store.manifest()
    if man.get("profile") != profile or man.get("params") != params_fingerprint(cfg):
        raise MissingRunsError(
            f"the runs in {store.root} were made for profile '{man.get('profile')}' with "
            f"other parameters than profile '{profile}' has now: run "
            f"`python -m memrl repro --profile {profile}` (or `python -m memrl runs "
            f"{fam.name} --profile {profile}`)"
        )
    try:
        return store.results()
    except MissingRunsError as err:  # a run file lost or corrupt since the runs stage
        raise MissingRunsError(
            f"{err}: `python -m memrl runs {fam.name} --profile {profile}` runs them again"
        ) from None


def family_runs(
    fam: Family, cfg: Any, profile: str, runs_dir: str = "", overrides: Any = None
) -> list[dict[str, Any]]:
    """What a family notebook reads: the runs stage's store (``runs_dir``), or, opened on its
    own, ``fam``'s jobs run here first into a cache store (stored ones reused)."""
    store = open_store(fam, profile, runs_dir, overrides)
    if not runs_dir:
        run_jobs(fam, cfg, profile, store)
    return load_runs(fam, cfg, profile, store)
