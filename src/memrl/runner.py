"""A family's jobs run into a store and read back: the one place this happens, for the runs
stage (:func:`memrl.pipeline.run_stage`) and for a family notebook opened on its own
(JupyterLab, nbconvert, papermill, nbval), which reads the pipeline's runs and runs only what
they lack into a cache store (:func:`family_runs`, :func:`own_runs`).

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
    own, :func:`own_runs` (the pipeline's runs, and only what they lack run here)."""
    if runs_dir:
        return load_runs(fam, cfg, profile, open_store(fam, profile, runs_dir, overrides))
    parse_overrides(overrides)  # checked as the stage's path checks them
    return own_runs(fam, cfg, profile)


RECOMPUTE = "MEMRL_RECOMPUTE"  # "1": a notebook on its own reads no pipeline store (nbval)
PUBLISHED = ("default", "smoke")  # the profiles whose run stores the in-repo DVC remote holds


def pipeline_store(fam: Family, profile: str, pull: bool = True) -> tuple[RunStore, str]:
    """The runs stage's store of ``fam`` for ``profile`` (``results/<profile>/<family>/runs``)
    and a line saying where its runs came from; with ``pull``, a published profile's store
    absent here is first pulled from the in-repo DVC remote (``dvc pull``)."""
    store = RunStore(repo_root() / fam.runs_dir(profile))
    if any(store.root.glob("*.json")):
        return store, f"{len(store.keys())} runs in {fam.runs_dir(profile)}"
    if not (pull and profile in PUBLISHED):
        return store, f"no runs in {fam.runs_dir(profile)}"
    failed = pull_published(fam, profile)
    if failed:
        return store, f"no runs in {fam.runs_dir(profile)}: {failed}"
    return store, f"{len(store.keys())} published runs pulled into {fam.runs_dir(profile)}"


def pull_command(fam: Family, profile: str) -> str:
    """The ``dvc pull`` that brings ``fam``'s published runs of ``profile``."""
    pipeline = "" if profile == "default" else f"results/{profile}/dvc.yaml:"
    return f"dvc pull {pipeline}runs_{fam.name}"


def pull_published(fam: Family, profile: str) -> str:
    """Pull ``fam``'s published store of ``profile`` from the in-repo DVC remote: "" when it
    came, else why not (with the command to try)."""
    import subprocess
    import sys

    from memrl.executors import say

    dvc = Path(sys.executable).with_name("dvc")
    command = pull_command(fam, profile)
    say(f"{fam.name}: pulling the published runs ({command}) ...")
    try:
        done = subprocess.run(
            [str(dvc), *command.split()[1:], "-q"],
            cwd=repo_root(),
            capture_output=True,
            text=True,
        )
    except OSError as err:
        return f"`{command}` could not start ({err})"
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or ["no message"])[-1]
        return f"`{command}` failed ({why})"
    return ""


def own_runs(fam: Family, cfg: Any, profile: str, workers: int | None = None) -> list[dict]:
    """A notebook opened on its own (JupyterLab, nbconvert, papermill without ``runs_dir``):
    each job's run is read from the pipeline's store for ``profile`` (pulled from the in-repo
    DVC remote when absent, as ``memrl verify`` does) or this machine's cache
    (``.cache/runs/<family>/<profile>/``, every job computed here for the profile, whatever
    the overrides: a key names its job); only the jobs neither holds run, into the cache,
    priced first (:mod:`memrl.estimate`) with the executor's progress in the terminal too.
    With the default profile and the published runs pulled, nothing runs.
    ``MEMRL_RECOMPUTE=1`` reads no pipeline store: every job is computed here (nbval does
    it, so ``memrl verify --cached`` has the jobs to compare with the published ones)."""
    import os

    from memrl.estimate import estimate_family
    from memrl.executors import say

    specs = fam.grid(cfg)
    cache = RunStore(cache_dir() / "runs" / fam.name / profile)
    if os.environ.get(RECOMPUTE, "") not in ("", "0"):
        store, where = None, f"{RECOMPUTE}=1: no pipeline store read"
    else:
        store, where = pipeline_store(fam, profile)
    stored = [s for s in specs if store is not None and store.has(s)]
    have = {s.key for s in stored}
    cached = [s for s in specs if s.key not in have and cache.has(s)]
    have |= {s.key for s in cached}
    todo = [s for s in specs if s.key not in have]
    say(
        f"{fam.name} ({profile}): {len(stored)} of {len(specs)} jobs read from the pipeline's "
        f"store ({where}), {len(cached)} from this machine's cache ({_portable(cache.root)})"
    )
    if todo:
        rt = load_runtime()
        fam.preflight(cfg)  # e.g. a missing model or data set fails here, before any job
        priced = estimate_family(fam.name, profile, todo, workers or rt.processes).summary()
        head = f"{fam.name}: {len(todo)} of {len(todo)} jobs to run, "
        say(f"{fam.name}: {len(todo)} jobs to run here, {priced.removeprefix(head)}")
        cache.root.mkdir(parents=True, exist_ok=True)
        execute(todo, cache, None, workers or rt.processes, rt.torch_threads, desc=fam.name)
    by_store = {s.key: store for s in stored} | {s.key: cache for s in cached + todo}
    return [r for s in specs for r in by_store[s.key].results([s])]


def _portable(path: Path) -> str:
    try:
        return str(path.relative_to(repo_root()))
    except ValueError:
        return str(path)
