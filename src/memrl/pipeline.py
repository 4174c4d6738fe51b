"""The pipeline's stages and ``repro``: the top floor, imported by the command line only.

    python -m memrl params [--profile P]          # stage params: validate, resolve
    python -m memrl runs FAMILY [--profile P]     # stage runs_<family>: the jobs
    python -m memrl notebook FAMILY [--profile P] # stage <family>: claims, plots
    python -m memrl report [results/<profile>]    # stage report
    python -m memrl repro [--profile P] [DVC ARGS...]  # validate, then dvc repro

Each profile has a pipeline (:mod:`memrl.dvcfile`) and a results tree of its own
(``results/<profile>/``), so switching profiles never rewrites ``params.yaml`` and a smoke
run never touches the default results. Its first stage, ``params``, validates every
family's parameters for the profile and writes them resolved to
``results/<profile>/params.yaml``: the stages depend on their family's section there, so DVC
reruns exactly the stages whose effective parameters changed and ``dvc params diff`` shows
them. ``runs`` prices, then executes the jobs its store lacks (:func:`run_stage`), removes
results no longer in the grid and writes ``manifest.json`` last. ``notebook`` runs the
family notebook with papermill into a staging folder and moves its outputs over the last
good ones only when it succeeded, so a failed or interrupted stage never leaves half-written
or missing results (every stage's outputs are ``persist``-ed: DVC does not delete them first).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from memrl import families
from memrl.config import ConfigError, check_profile, load_runtime, resolved
from memrl.executors import Executed
from memrl.families import load_family, load_profile
from memrl.profiles import pipeline_file, results_root
from memrl.runner import open_store, run_jobs
from memrl.runs import write_timings
from memrl.runtime import atomic_write_text, cache_dir, publish, repo_root


# =========================================================================== stage params
def preflight(profile: str) -> dict[str, Any]:
    """Every family's parameters for ``profile``, validated (all the families' errors in one
    message), and each family's own checks (e.g. a model or data set the profile names is
    on this machine): what must hold before any stage starts or deletes anything. The
    resolved parameters also carry the ``paper`` profile's (``paper.<family>``): the
    notebooks set the papers' values beside ours in their deviation texts."""
    cfgs = load_profile(profile)  # each family validated once, its errors and the others'
    for fam in families.FAMILIES:
        fam.preflight(cfgs[fam.name])
    paper = cfgs if profile == "paper" else load_profile("paper")
    return resolved(load_runtime(), cfgs) | {
        "paper": {f: c.model_dump(mode="json") for f, c in paper.items()}
    }


def write_params(profile: str) -> Path:
    """Stage ``params``: :func:`preflight`, then the resolved parameters to
    ``results/<profile>/params.yaml`` (atomically)."""
    params = preflight(profile)
    path = repo_root() / results_root(profile) / "params.yaml"
    header = (
        f"# The '{profile}' profile's parameters, resolved (every default and override merged)\n"
        "# by `python -m memrl params`: generated, do not edit; edit params.yaml.\n"
    )
    atomic_write_text(path, header + yaml.safe_dump(params, sort_keys=False, width=100))
    return path


# =========================================================================== stage runs_<family>
def run_stage(family: str, profile: str = "default", executor: str | None = None) -> Executed:
    """Stage ``runs_<family>``: price the jobs the profile's store lacks (from the stored and
    published timings), check that their claims' design can decide (:mod:`memrl.design_check`),
    run them, then write the store's speed beside the results (kept in git: what a fresh
    clone's estimate prices from)."""
    from memrl import design_check
    from memrl.estimate import estimate_family

    fam = families.get(family)
    cfg = load_family(family, profile)
    store = open_store(fam, profile, fam.runs_dir(profile))
    specs = fam.grid(cfg)  # built once: priced, then run
    priced = estimate_family(family, profile, specs, load_runtime().processes)
    if priced.todo:  # with nothing to run, the executor's own count says so
        # a design no outcome could decide fails here, before its compute is spent
        print(design_check.check(fam, cfg, profile, specs, store), flush=True)
        print(priced.summary(), flush=True)
    done = run_jobs(fam, cfg, profile, store, executor, specs)
    timings = repo_root() / fam.timings_path(profile)
    if publishing(profile) or not timings.exists():  # else the published ones stay
        write_timings(timings, store.records())
    return done


PUBLISH = "MEMRL_PUBLISH"  # "1": this run publishes a smoke or paper profile (docs/publishing.md)


def publishing(profile: str) -> bool:
    """Whether this run's measurements become the profile's published ones (its
    ``timings.json``, kept in git; its ``dvc.lock``): always for ``default`` (a default run is
    a republish: its claims and report in git change too), for ``smoke`` and ``paper`` only
    with ``MEMRL_PUBLISH=1``. A smoke try leaves every tracked file as it found it: this
    machine's seconds stay in its store's records (what :mod:`memrl.estimate` prices this
    machine from), its pipeline's lock in the cache (:func:`local_lock`)."""
    return profile == "default" or os.environ.get(PUBLISH, "") not in ("", "0")


# =========================================================================== stage <family>
# the kernel's own log at ERROR: ipykernel warns on every start that its local TCP sockets are
# unencrypted (they listen on 127.0.0.1 only); the notebook's own warnings still show
QUIET_KERNEL = ["--IPKernelApp.log_level=ERROR"]


def run_notebook(family: str, profile: str = "default") -> Path:
    """Execute ``notebooks/<family>.ipynb`` on the stored runs; publish its outputs (the
    executed notebook, figures, tables, plots, claims and metrics) only if it succeeded."""
    import papermill as pm

    fam = families.get(family)
    root = repo_root()
    out = root / fam.results_dir(profile)
    staging = out / ".staging"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        pm.execute_notebook(
            str(root / "notebooks" / f"{family}.ipynb"),
            str(staging / f"{family}.ipynb"),
            parameters={  # relative to the repository: published notebooks name no machine
                "profile": profile,
                "output_dir": str(staging.relative_to(root)),
                "runs_dir": str(fam.runs_dir(profile)),
            },
            kernel_name="python3",
            progress_bar=False,
            cwd=str(root),
            extra_arguments=QUIET_KERNEL,
        )
        for plot in fam.plots:
            _complete_plot(staging / "plots" / plot.file, plot)
        _relative_paths(staging / f"{family}.ipynb", root, out)
        publish(staging, out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out


def _relative_paths(notebook: Path, root: Path, published: Path) -> None:
    """papermill records the paths it read and wrote in the notebook's metadata: written
    relative to the repository (the published file's own place), so no published notebook
    names the machine that ran it."""
    import nbformat

    if not notebook.exists():  # nothing executed (a stand-in executor): nothing to rewrite
        return
    nb = nbformat.read(str(notebook), as_version=4)
    meta = nb.metadata.get("papermill", {})
    for field, path in (
        ("input_path", root / "notebooks" / notebook.name),
        ("output_path", published / notebook.name),
    ):
        if field in meta:
            meta[field] = str(Path(path).relative_to(root))
    nbformat.write(nb, str(notebook))


def _complete_plot(csv: Path, plot: families.Plot) -> None:
    """Make ``csv`` hold every column ``plot`` declares: a method the profile did not run
    (e.g. smoke's fewer ablations) gets an empty column, so DVC draws the others instead of
    refusing the plot; a file the profile has no data for at all (an env smoke skips) is
    written header-only, so DVC's declared outputs exist."""
    import pandas as pd

    cols = [plot.x, *plot.y]
    if not csv.exists():
        csv.parent.mkdir(parents=True, exist_ok=True)
        csv.write_text(",".join(cols) + "\n")
        return
    df = pd.read_csv(csv)
    missing = [c for c in cols if c not in df.columns]
    if missing:
        df.assign(**dict.fromkeys(missing, float("nan"))).to_csv(csv, index=False)


# =========================================================================== repro
def _group_members(pgid: int) -> list[int]:
    """PIDs of the processes in process group ``pgid`` (Linux: read from /proc)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid:
            out.append(int(stat.parent.name))
    return out


def _stop_stages(dvc_pid: int) -> None:
    """SIGTERM every process DVC started (its group but DVC itself): a stage cleans up
    (stops its workers, keeps its finished jobs) and exits, then DVC fails the stage and
    exits cleanly, releasing its locks. Not on Linux: SIGTERM the whole group."""
    if not Path("/proc").is_dir():
        os.killpg(dvc_pid, signal.SIGTERM)
        return
    for pid in _group_members(dvc_pid):
        if pid != dvc_pid:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass


def repro(profile: str, args: list[str]) -> int:
    """Validate ``profile`` (:func:`preflight`: every family, every model it names), then
    ``dvc repro`` its pipeline with ``args``, in its own process group; SIGINT or SIGTERM stop
    its stages (and their workers) cleanly, then anything left in the group after 30 s. An
    invalid profile fails here, before DVC starts any stage or deletes anything."""
    from memrl.llm.server import ServerError  # here: the notebook stages never need it

    try:
        check_profile(profile)
        preflight(profile)
    except (ConfigError, FileNotFoundError, ServerError) as err:
        print(f"memrl: {err}", file=sys.stderr)
        return 2
    targets = dvc_targets(profile, args)
    _announce(profile, announced_families(targets))
    with local_lock(profile):
        return _dvc_repro(profile, targets)


def _lock_paths(profile: str) -> tuple[Path, Path, Path]:
    """(the profile's ``dvc.lock``, this machine's own lock, the published one while this
    machine's is in its place)."""
    here = cache_dir() / "locks" / profile
    return repo_root() / Path(pipeline_file(profile)).with_name("dvc.lock"), *(
        here / name for name in ("dvc.lock", "published.lock")
    )


@contextlib.contextmanager
def local_lock(profile: str):
    """While a smoke or paper run that does not publish (:func:`publishing`) runs, DVC reads
    and writes this machine's own ``dvc.lock`` (kept in ``.cache/locks/<profile>/``), in
    the place of the published one, which is put back after, byte for byte (also after a
    failure or Ctrl-C; after a kill, the next run first): DVC cannot keep a lock outside its
    pipeline's folder nor read a git-ignored one, and the published lock is what `dvc pull`
    of the published smoke store reads. A try thus leaves git's tree clean, and this
    machine's next run knows what it has done."""
    lock, mine, published = _lock_paths(profile)
    if publishing(profile):
        yield
        return
    _put_back(lock, mine, published)  # a run killed while swapped: first undo it
    mine.parent.mkdir(parents=True, exist_ok=True)
    if lock.exists():
        shutil.copy2(lock, published)
    else:
        published.write_bytes(b"")  # "there was none": removed again after
    if mine.exists():
        shutil.copy2(mine, lock)
    try:
        yield
    finally:
        _put_back(lock, mine, published)


def _put_back(lock: Path, mine: Path, published: Path) -> None:
    """Keep the lock in place as this machine's and restore the published one."""
    if not published.exists():
        return
    if lock.exists():
        shutil.copy2(lock, mine)
    if published.stat().st_size:
        os.replace(published, lock)
    else:
        lock.unlink(missing_ok=True)
        published.unlink()


def _dvc_repro(profile: str, targets: list[str]) -> int:
    whole = targets[0] == pipeline_file(profile)  # else only the stages named (no report)
    venv = Path(sys.executable).parent  # dvc and the stages' `python` from this venv
    env = {**os.environ, "PATH": f"{venv}{os.pathsep}{os.environ.get('PATH', '')}"}
    proc = subprocess.Popen([str(venv / "dvc"), "repro", *targets], start_new_session=True, env=env)
    stopping: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, frame: stopping.append(signum))
    signal.signal(signal.SIGTERM, lambda signum, frame: stopping.append(signum))
    deadline = None
    while proc.poll() is None:
        if stopping:
            deadline = deadline or time.monotonic() + 30
            _stop_stages(proc.pid)  # again and again: a stage DVC starts meanwhile stops too
            if time.monotonic() > deadline:
                os.killpg(proc.pid, signal.SIGKILL)
        time.sleep(0.2)
    if not stopping:
        if proc.returncode == 0 and whole:
            print(f"report: {results_root(profile)}/REPORT.md")
        return proc.returncode
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # anything still left in the group
    except ProcessLookupError:
        pass
    print("\nmemrl: stopped; finished jobs are kept, `make repro` resumes", file=sys.stderr)
    return 128 + stopping[0]


# dvc repro's options that take a value (the next argument is not a stage)
_VALUED = {"-j", "--jobs"}


def dvc_targets(profile: str, args: list[str]) -> list[str]:
    """``dvc repro``'s arguments for ``args`` under ``profile``: the profile's whole pipeline,
    or, where ``args`` name stages, those stages of the profile's pipeline file alone (and what
    they depend on). A bare stage name beside the pipeline file would run the whole pipeline."""
    stages, out, value = [], [], False
    for a in args:
        if value or a.startswith("-"):
            out.append(a)
            value = a in _VALUED
        else:
            stages.append(a)
    file = pipeline_file(profile)
    named = [s if ":" in s or s.endswith((".yaml", ".yml")) else f"{file}:{s}" for s in stages]
    # DVC's own lines ("Running stage", the `git add dvc.lock` hint) only with -v: each stage
    # says what it does itself, and DVC's errors show either way
    loud = {"-v", "--verbose", "-q", "--quiet"} & set(out)
    return [*(named or [file]), *out, *([] if loud else ["-q"])]


def announced_families(targets: list[str]) -> list[str]:
    """The families whose jobs ``dvc repro targets`` may run: those a named stage belongs to
    (``<family>`` or ``runs_<family>``; ``params`` runs none), every family for the whole
    pipeline, the report or a stage not known here."""
    named = [t.rsplit(":", 1)[1] for t in targets if ":" in t]
    if not named:
        return list(families.NAMES)
    out = []
    for stage in named:
        fam = stage.removeprefix("runs_")
        if fam in families.NAMES:
            out += [fam] if fam not in out else []
        elif stage != "params":
            return list(families.NAMES)
    return out


def _announce(profile: str, names: list[str] | None = None) -> None:
    """One line before DVC starts: what the jobs not yet stored of the profile's families
    ``names`` (default: all) will cost (see :mod:`memrl.estimate`). A failing estimate is
    reported and skipped: it never stops a run."""
    from memrl.estimate import estimate_families

    names = list(families.NAMES) if names is None else names
    if not names:
        return
    try:
        priced = estimate_families(profile, {f: load_family(f, profile) for f in names})
    except Exception as err:  # noqa: BLE001 - an estimate is advice, not a step of the run
        print(f"memrl: no cost estimate ({type(err).__name__}: {err})", flush=True)
        return
    todo = sum(len(e.todo) for e in priced)
    if not todo:
        return
    unknown = sum(p.seconds is None for e in priced for p in e.todo)
    core = sum(e.core_seconds for e in priced)
    wall = sum(e.wall_seconds for e in priced)
    print(
        f"memrl: {todo} jobs to run for profile {profile}"
        + ("" if len(names) == len(families.NAMES) else f" ({', '.join(names)})")
        + f": ~{core:,.0f} core-s, ~{wall / 60:,.0f}"
        f" min of job stages on {priced[0].workers} workers"
        + (" (one per core)" if load_runtime().workers == "auto" else "")
        + (f" ({unknown} not priced)" if unknown else "")
        + "; `python -m memrl estimate` itemises it; Ctrl-C stops it and keeps the finished jobs.",
        flush=True,
    )
