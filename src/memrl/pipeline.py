"""The pipeline's commands: one DVC pipeline per profile, its stages, and ``repro``.

    python -m memrl.pipeline params [--profile P]           # stage params: validate, resolve
    python -m memrl.pipeline runs FAMILY [--profile P]      # stage runs_<family>: the jobs
    python -m memrl.pipeline notebook FAMILY [--profile P]  # stage <family>: claims, plots
    python -m memrl.pipeline dvc-yaml [--check]             # every profile's dvc.yaml
    python -m memrl.pipeline repro [--profile P] [DVC ARGS...]  # validate, then dvc repro

Each profile has a pipeline and a results tree of its own (``results/<profile>/``), so
switching profiles never rewrites ``params.yaml`` and a smoke run never touches the default
results. ``default``'s pipeline is ``dvc.yaml`` at the root (plain ``dvc repro`` runs it);
the others' are ``results/<profile>/dvc.yaml``. Its first stage, ``params``, validates every
family's parameters for the profile and writes them resolved to
``results/<profile>/params.yaml``: the stages depend on their family's section there, so DVC
reruns exactly the stages whose effective parameters changed and ``dvc params diff`` shows
them. ``runs`` executes the jobs its store lacks (:mod:`memrl.jobs`), removes results no
longer in the grid and writes ``manifest.json`` last. ``notebook`` runs the family notebook
with papermill into a staging folder and moves its outputs over the last good ones only when
it succeeded, so a failed or interrupted stage never leaves half-written or missing results
(every stage's outputs are ``persist``-ed: DVC does not delete them first).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from memrl import families
from memrl.config import (
    PROFILES,
    ConfigError,
    check_profile,
    load_family,
    load_profile,
    load_runtime,
    parse_overrides,
    resolved,
)
from memrl.jobs import MissingRunsError, Report, RunStore, execute, raise_on_sigterm
from memrl.runtime import atomic_write_text, cache_dir, repo_root


def results_root(profile: str) -> str:
    """The profile's results tree (repo-relative)."""
    return f"results/{profile}"


def pipeline_file(profile: str) -> str:
    """The profile's ``dvc.yaml`` (repo-relative): the root one for ``default``."""
    return "dvc.yaml" if profile == "default" else f"{results_root(profile)}/dvc.yaml"


# =========================================================================== stage params
def preflight(profile: str) -> dict[str, Any]:
    """Every family's parameters for ``profile``, validated (all the families' errors in one
    message), and each family's own checks (e.g. a model or data set the profile names is
    on this machine): what must hold before any stage starts or deletes anything."""
    cfgs = load_profile(profile)  # each family validated once, its errors and the others'
    for fam in families.FAMILIES:
        fam.preflight(cfgs[fam.name])
    return resolved(load_runtime(), cfgs)


def write_params(profile: str) -> Path:
    """Stage ``params``: :func:`preflight`, then the resolved parameters to
    ``results/<profile>/params.yaml`` (atomically)."""
    params = preflight(profile)
    path = repo_root() / results_root(profile) / "params.yaml"
    header = (
        f"# The '{profile}' profile's parameters, resolved (every default and override merged)\n"
        "# by `python -m memrl.pipeline params`: generated, do not edit; edit params.yaml.\n"
    )
    atomic_write_text(path, header + yaml.safe_dump(params, sort_keys=False, width=100))
    return path


# =========================================================================== stage runs_<family>
def run_jobs(
    family: str, profile: str = "default", store_dir: str | Path | None = None,
    executor: str | None = None, overrides: Mapping[str, Any] | None = None,
) -> Report:  # fmt: skip
    """Run the family's jobs for ``profile`` (with ``overrides``) into ``store_dir`` (default:
    the profile's run store), skipping stored ones; then prune stale results and write the
    manifest."""
    fam = families.get(family)
    cfg = load_family(family, profile, overrides=overrides)
    rt = load_runtime()
    fam.preflight(cfg)  # e.g. a missing model or data set fails here, before any job
    specs = fam.grid(cfg)
    store = RunStore(store_dir if store_dir is not None else repo_root() / fam.runs_dir(profile))
    store.root.mkdir(parents=True, exist_ok=True)
    (store.root / "manifest.json").unlink(missing_ok=True)  # written again once all are in
    if store_dir is None:  # what this stage is about to run, priced from the stored runs
        from memrl.estimate import estimate_family

        priced = estimate_family(family, profile, specs, rt.workers)
        if priced.todo:  # with nothing to run, the executor's own count says so
            print(priced.summary(), flush=True)
    report = execute(specs, store, executor, rt.workers, rt.torch_threads, desc=family)
    store.prune(specs)
    store.write_manifest(
        specs,
        {"family": family, "profile": profile, "params": families.params_fingerprint(cfg)},
    )  # fmt: skip
    if store_dir is None:  # the speed of these runs, in git: a fresh clone's estimate
        from memrl.estimate import write_timings

        write_timings(repo_root() / fam.timings_path(profile), store.records(specs))
    return report


def load_results(
    family: str, profile: str, runs_dir: str = "",
    overrides: Mapping[str, Any] | str | None = None,
) -> list[dict[str, Any]]:  # fmt: skip
    """The family's stored results for ``profile``.

    With ``runs_dir`` (what the DVC stage passes: the profile's run store), read it and check
    it was made for these parameters. Without it (JupyterLab, nbval), run the jobs into a
    cache store first (one per profile and overrides): stored ones are reused, missing ones run.
    """
    overrides = parse_overrides(overrides)
    if not runs_dir:
        name = profile
        if overrides:
            text = json.dumps(overrides, sort_keys=True, default=str)
            name += "+" + hashlib.sha256(text.encode()).hexdigest()[:8]
        store_dir = cache_dir() / "runs" / family / name
        run_jobs(family, profile, store_dir, overrides=overrides)
        return RunStore(store_dir).results()
    if overrides:
        raise ConfigError(
            "overrides change the runs made here; stored runs (runs_dir) were made with "
            "params.yaml's values: leave runs_dir empty to run the overridden jobs"
        )
    fam = families.get(family)
    cfg = load_family(family, profile)
    store = RunStore(Path(runs_dir) if Path(runs_dir).is_absolute() else repo_root() / runs_dir)
    man = store.manifest()
    if man.get("profile") != profile or man.get("params") != families.params_fingerprint(cfg):
        raise MissingRunsError(
            f"the runs in {store.root} were made for profile '{man.get('profile')}' with other "
            f"parameters than profile '{profile}' has now: run "
            f"`python -m memrl.pipeline repro --profile {profile}` (or `python -m "
            f"memrl.pipeline runs {fam.name} --profile {profile}`)"
        )
    return store.results()


# =========================================================================== stage <family>
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
            parameters={
                "profile": profile,
                "output_dir": str(staging),
                "runs_dir": fam.runs_dir(profile),
            },
            kernel_name="python3",
            progress_bar=False,
            cwd=str(root),
        )
        for plot in fam.plots:
            _complete_plot(staging / "plots" / plot.file, plot)
        _publish(staging, out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out


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


def _publish(staging: Path, out: Path) -> None:
    """Move every entry of ``staging`` over its namesake in ``out`` (folders swapped whole)."""
    for src in sorted(staging.iterdir()):
        dst = out / src.name
        if src.is_dir():
            old = out / f".{src.name}.old"
            shutil.rmtree(old, ignore_errors=True)
            if dst.exists():
                dst.rename(old)
            src.rename(dst)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(src, dst)


NOTEBOOK_OUTPUTS = ("figures", "tables")  # folders the notebook writes besides plots/


# =========================================================================== dvc.yaml
def _code(paths) -> list[str]:
    """Source files as DVC deps, empty ones left out (DVC warns about them; a file that gets
    code makes dvc.yaml stale, which tests/test_pipeline.py catches)."""
    root = repo_root()
    return sorted(p for p in set(paths) if (root / p).stat().st_size > 0)


def _uncached() -> dict[str, bool]:
    """Small outputs kept in git (not DVC's cache), never deleted before their stage runs."""
    return {"cache": False, "persist": True}


def dvc_yaml(profile: str = "default") -> dict[str, Any]:
    """``profile``'s pipeline, derived from :data:`memrl.families.FAMILIES`. Paths are
    repo-relative (a nested pipeline's stages run at the root: ``wdir``); its ``plots:``
    are relative to its own folder, as DVC reads them."""
    check_profile(profile)
    py = "python -m memrl.pipeline"
    res = results_root(profile)
    resolved = f"{res}/params.yaml"
    runner = ["src/memrl/pipeline.py", "src/memrl/jobs.py", "src/memrl/families/__init__.py"]
    schemas = [f"memrl.families.{f.name}.params" for f in families.FAMILIES]
    stages: dict[str, Any] = {
        "params": {
            "cmd": f"{py} params --profile {profile}",
            "deps": ["params.yaml"]
            + _code({*runner, *(p for m in schemas for p in families.module_closure(m))}),
            "outs": [{resolved: _uncached()}],
        }
    }
    for fam in families.FAMILIES:
        f, out = fam.name, fam.results_dir(profile)
        stages[f"runs_{f}"] = {
            "cmd": f"{py} runs {f} --profile {profile}",
            # estimate.py prices the stage's jobs and writes its timings.json
            "deps": _code({*fam.job_sources(), *runner, "src/memrl/estimate.py"}) + list(fam.data),
            "params": [{resolved: ["runtime", f]}],
            "outs": [
                {fam.runs_dir(profile): {"persist": True}},
                {fam.timings_path(profile): _uncached()},
            ],  # fmt: skip
        }
        outs: list[Any] = [{f"{out}/{f}.ipynb": {"persist": True}}]
        outs += [{f"{out}/{d}": {"persist": True}} for d in NOTEBOOK_OUTPUTS]
        outs += [{f"{out}/claims.json": _uncached()}]
        outs += [{fam.plot_path(profile, p): _uncached()} for p in fam.plots]
        stages[f] = {
            "cmd": f"{py} notebook {f} --profile {profile}",
            "deps": [f"notebooks/{f}.ipynb"]
            + _code({*fam.analysis_sources(), *runner})
            + list(fam.data)
            + [fam.runs_dir(profile)],
            "params": [{resolved: [f]}],
            "outs": outs,
            "metrics": [{f"{out}/metrics": _uncached()}],  # one file per claim
        }
    stages["report"] = {
        "cmd": f"python -m memrl.report {res}",
        "deps": _code({"src/memrl/report.py", "src/memrl/families/__init__.py",
                       "src/memrl/stats/claims.py", "src/memrl/stats/compare.py"})
        + [f"{fam.results_dir(profile)}/claims.json" for fam in families.FAMILIES],
        "outs": [{f"{res}/REPORT.md": _uncached()}, {f"{res}/report.json": _uncached()}],
    }  # fmt: skip
    here = "" if profile == "default" else f"{res}/"  # plots: relative to the dvc.yaml
    if here:  # a nested pipeline's stages run at the root
        stages = {name: {"wdir": "../..", **stage} for name, stage in stages.items()}
    plots = [  # .dvc/plots/memrl_lines.json: a colour per method, a dash per revision
        {fam.plot_path(profile, p).removeprefix(here): {
            "template": "memrl_lines", "x": p.x, "y": list(p.y), "title": p.title,
            "x_label": p.x_label, "y_label": p.y_label}}
        for fam in families.FAMILIES
        for p in fam.plots
    ]  # fmt: skip
    return {"stages": stages, "plots": plots}


def render_dvc_yaml(profile: str = "default") -> str:
    where = (
        "at the root, so plain `dvc repro` runs it"
        if profile == "default"
        else (f"run it with `PROFILE={profile} make repro` or `dvc repro {pipeline_file(profile)}`")
    )
    header = (
        f"# The '{profile}' profile's pipeline ({where}).\n"
        "# Generated by `python -m memrl.pipeline dvc-yaml` from the family registry\n"
        "# (src/memrl/families/__init__.py); tests/test_pipeline.py fails when it is out of date.\n"
        "# params resolves and validates the profile's parameters; per family, runs_<family>\n"
        "# executes its jobs into its run store (one file per job, kept across runs: an\n"
        "# interrupted stage resumes), then <family> runs its notebook on them; report last.\n"
    )  # fmt: skip
    return header + yaml.safe_dump(dvc_yaml(profile), sort_keys=False, width=100)


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
    try:
        check_profile(profile)
        preflight(profile)
    except (ConfigError, FileNotFoundError) as err:
        print(f"memrl: {err}", file=sys.stderr)
        return 2
    _announce(profile)
    proc = subprocess.Popen(["dvc", "repro", pipeline_file(profile), *args],
                            start_new_session=True)  # fmt: skip
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
        if proc.returncode == 0:
            print(f"report: {results_root(profile)}/REPORT.md")
        return proc.returncode
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # anything still left in the group
    except ProcessLookupError:
        pass
    print("\nmemrl: stopped; finished jobs are kept, `make repro` resumes", file=sys.stderr)
    return 128 + stopping[0]


def _announce(profile: str) -> None:
    """One line before DVC starts: what the profile's jobs not yet stored will cost (see
    :mod:`memrl.estimate`). A failing estimate is reported and skipped: it never stops a run."""
    from memrl.estimate import estimate_families

    try:
        priced = estimate_families(profile, {f: load_family(f, profile) for f in families.NAMES})
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
        f"memrl: {todo} jobs to run for profile {profile}: ~{core:,.0f} core-s, ~{wall / 60:,.0f}"
        f" min of job stages on {priced[0].workers} workers"
        + (f" ({unknown} not priced)" if unknown else "")
        + "; `python -m memrl estimate` itemises it. Interrupted, finished jobs are kept.",
        flush=True,
    )


# =========================================================================== CLI
def _dvc_yaml_files(check: bool) -> int:
    """Write every profile's ``dvc.yaml`` (or, with ``check``, fail if one is stale)."""
    stale = []
    for profile in PROFILES:
        path, text = repo_root() / pipeline_file(profile), render_dvc_yaml(profile)
        if check:
            if not path.is_file() or path.read_text() != text:
                stale.append(pipeline_file(profile))
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            print(f"wrote {path}")
    if stale:
        print(f"out of date: {', '.join(stale)}: run `python -m memrl.pipeline dvc-yaml`")
    return 1 if stale else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m memrl.pipeline", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("params", "runs", "notebook", "repro"):
        p = sub.add_parser(name)
        if name in ("runs", "notebook"):
            p.add_argument("family", choices=families.NAMES)
        p.add_argument("--profile", default="default", help="smoke | default | paper")
        if name == "runs":
            p.add_argument("--executor", choices=("process", "ray"), default=None)
    p = sub.add_parser("dvc-yaml")
    p.add_argument("--check", action="store_true", help="fail if a dvc.yaml is out of date")
    args, rest = ap.parse_known_args(argv)
    if args.cmd == "repro":
        return repro(args.profile, rest)  # the rest goes to dvc repro
    if rest:
        ap.error(f"unrecognized arguments: {' '.join(rest)}")
    if args.cmd == "dvc-yaml":
        return _dvc_yaml_files(args.check)
    # DVC ignores SIGINT while a stage runs and its children inherit that: take it back, so
    # Ctrl-C (like SIGTERM) stops a stage cleanly
    signal.signal(signal.SIGINT, signal.default_int_handler)
    raise_on_sigterm()
    what = getattr(args, "family", args.cmd)
    try:
        check_profile(args.profile)
        if args.cmd == "params":
            print(f"wrote {write_params(args.profile)}")
        elif args.cmd == "runs":
            report = run_jobs(args.family, args.profile, executor=args.executor)
            print(f"{args.family}: {report}")
        else:
            print(f"wrote {run_notebook(args.family, args.profile)}")
    except (ConfigError, FileNotFoundError) as err:  # bad parameters, a missing model or data
        print(f"memrl: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"\n{what}: interrupted; finished jobs are kept, results unchanged",
              file=sys.stderr)  # fmt: skip
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
