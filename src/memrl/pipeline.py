"""The pipeline's commands: each family's two DVC stages, ``dvc.yaml`` itself, and ``repro``.

    python -m memrl.pipeline runs FAMILY [--profile P]      # stage runs_<family>: the jobs
    python -m memrl.pipeline notebook FAMILY [--profile P]  # stage <family>: claims, plots
    python -m memrl.pipeline dvc-yaml [--check]             # dvc.yaml from the registry
    python -m memrl.pipeline repro [DVC ARGS...]            # dvc repro, cleanly interruptible

``runs`` executes the jobs its store lacks (:mod:`memrl.jobs`), removes results no longer in
the grid and writes ``manifest.json`` last. ``notebook`` runs the family notebook with
papermill into a staging folder and moves its outputs over the last good ones only when
it succeeded, so a failed or interrupted stage never leaves half-written or missing
results (the stages' outputs are ``persist``-ed: DVC does not delete them first).
"""

from __future__ import annotations

import argparse
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
from memrl.config import load_family, load_runtime, read_params
from memrl.jobs import MissingRunsError, Report, RunStore, execute, raise_on_sigterm
from memrl.runtime import cache_dir, repo_root

PROFILE_PARAM = "${profile}"


# =========================================================================== stage runs_<family>
def run_jobs(
    family: str, profile: str | None = None, store_dir: str | Path | None = None,
    executor: str | None = None,
) -> Report:  # fmt: skip
    """Run the family's jobs for ``profile`` into ``store_dir`` (default: the profile's folder
    in its runs folder, so profiles never prune each other's runs), skipping stored ones;
    then prune stale results and write the manifest."""
    fam = families.get(family)
    profile = profile or _profile()
    cfg = load_family(family, profile)
    rt = load_runtime()
    preflight = getattr(fam.module("jobs"), "preflight", None)
    if preflight is not None:
        preflight(cfg)  # e.g. a missing model or data set fails here, before any job
    specs = fam.grid(cfg)
    store = RunStore(store_dir if store_dir is not None else repo_root() / fam.runs_dir / profile)
    store.root.mkdir(parents=True, exist_ok=True)
    (store.root / "manifest.json").unlink(missing_ok=True)  # written again once all are in
    report = execute(specs, store, executor, rt.workers, rt.torch_threads, desc=family)
    store.prune(specs)
    store.write_manifest(
        specs,
        {"family": family, "profile": profile, "params": families.params_fingerprint(cfg)},
    )  # fmt: skip
    return report


def _profile() -> str:
    return read_params().get("profile", "default")


def load_results(family: str, profile: str, runs_dir: str = "") -> list[dict[str, Any]]:
    """The family's stored results for ``profile``.

    With ``runs_dir`` (what the DVC stage passes), read the profile's store in it and check
    it was made for these parameters. Without it (JupyterLab, nbval), run the jobs
    into a cache store first: stored ones are reused, missing ones run.
    """
    if not runs_dir:
        store_dir = cache_dir() / "runs" / family / profile
        run_jobs(family, profile, store_dir)
        return RunStore(store_dir).results()
    fam = families.get(family)
    cfg = load_family(family, profile)
    root = Path(runs_dir) if Path(runs_dir).is_absolute() else repo_root() / runs_dir
    store = RunStore(root / profile)
    man = store.manifest()
    if man.get("profile") != profile or man.get("params") != families.params_fingerprint(cfg):
        raise MissingRunsError(
            f"the runs in {store.root} were made for profile '{man.get('profile')}' with other "
            f"parameters than profile '{profile}' has now: run `dvc repro runs_{fam.name}` "
            f"(or `python -m memrl.pipeline runs {fam.name} --profile {profile}`)"
        )
    return store.results()


# =========================================================================== stage <family>
def run_notebook(family: str, profile: str | None = None) -> Path:
    """Execute ``notebooks/<family>.ipynb`` on the stored runs; publish its outputs (the
    executed notebook, figures, tables, plots, claims and metrics) only if it succeeded."""
    import papermill as pm

    fam = families.get(family)
    root = repo_root()
    out = root / fam.results
    staging = out / ".staging"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        pm.execute_notebook(
            str(root / "notebooks" / f"{family}.ipynb"),
            str(staging / f"{family}.ipynb"),
            parameters={
                "profile": profile or _profile(),
                "output_dir": str(staging),
                "runs_dir": fam.runs_dir,
            },
            kernel_name="python3",
            progress_bar=False,
            cwd=str(root),
        )
        _publish(staging, out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out


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


def dvc_yaml() -> dict[str, Any]:
    """The pipeline, derived from :data:`memrl.families.FAMILIES`."""
    py = "python -m memrl.pipeline"
    stages: dict[str, Any] = {}
    runner = ["src/memrl/pipeline.py", "src/memrl/jobs.py", "src/memrl/families/__init__.py"]
    for fam in families.FAMILIES:
        f, res = fam.name, fam.results
        stages[f"runs_{f}"] = {
            "cmd": f"{py} runs {f} --profile {PROFILE_PARAM}",
            "deps": _code({*fam.job_sources(), *runner}) + list(fam.data),
            "params": ["profile", "runtime", f],
            "outs": [{fam.runs_dir: {"persist": True}}],
        }
        outs: list[Any] = [{f"{res}/{f}.ipynb": {"persist": True}}]
        outs += [{f"{res}/{d}": {"persist": True}} for d in NOTEBOOK_OUTPUTS]
        outs += [{f"{res}/claims.json": {"cache": False, "persist": True}}]
        outs += [{f"{res}/plots/{p.file}": {"cache": False, "persist": True}} for p in fam.plots]
        stages[f] = {
            "cmd": f"{py} notebook {f} --profile {PROFILE_PARAM}",
            "deps": [f"notebooks/{f}.ipynb"]
            + _code({*fam.analysis_sources(), *runner})
            + list(fam.data)
            + [fam.runs_dir],
            "params": ["profile", f],
            "outs": outs,
            "metrics": [{f"{res}/metrics.json": {"cache": False, "persist": True}}],
        }
    stages["report"] = {
        "cmd": "python -m memrl.report results",
        "deps": ["src/memrl/report.py", "src/memrl/families/__init__.py", "src/memrl/stats/claims.py"]
        + [f"{fam.results}/claims.json" for fam in families.FAMILIES],
        "outs": [{"results/REPORT.md": {"cache": False}}, {"results/report.json": {"cache": False}}],
    }  # fmt: skip
    plots = [
        {f"{fam.results}/plots/{p.file}": {"x": p.x, "y": list(p.y), "title": p.title}}
        for fam in families.FAMILIES
        for p in fam.plots
    ]
    return {"stages": stages, "plots": plots}


HEADER = """\
# Generated by `python -m memrl.pipeline dvc-yaml` from the family registry
# (src/memrl/families/__init__.py); tests/test_pipeline.py fails when it is out of date.
# Per family: runs_<family> executes its jobs into results/<family>/runs (one file per job,
# kept across runs: an interrupted stage resumes), then <family> runs its notebook on them.
"""


def render_dvc_yaml() -> str:
    return HEADER + yaml.safe_dump(dvc_yaml(), sort_keys=False, width=100)


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


def repro(args: list[str]) -> int:
    """``dvc repro ARGS`` in its own process group; SIGINT or SIGTERM stop its stages (and
    their workers) cleanly, then anything left in the group after 30 s."""
    proc = subprocess.Popen(["dvc", "repro", *args], start_new_session=True)
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
        return proc.returncode
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # anything still left in the group
    except ProcessLookupError:
        pass
    print("\nmemrl: stopped; finished jobs are kept, `make repro` resumes", file=sys.stderr)
    return 128 + stopping[0]


# =========================================================================== CLI
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m memrl.pipeline", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("runs", "notebook"):
        p = sub.add_parser(name)
        p.add_argument("family", choices=families.NAMES)
        p.add_argument("--profile", default=None)
        if name == "runs":
            p.add_argument("--executor", choices=("process", "ray"), default=None)
    p = sub.add_parser("dvc-yaml")
    p.add_argument("--check", action="store_true", help="fail if dvc.yaml is out of date")
    sub.add_parser("repro", add_help=False)
    args, rest = ap.parse_known_args(argv)
    if args.cmd == "repro":
        return repro(rest)
    if rest:
        ap.error(f"unrecognized arguments: {' '.join(rest)}")
    if args.cmd == "dvc-yaml":
        path, text = repo_root() / "dvc.yaml", render_dvc_yaml()
        if not args.check:
            path.write_text(text)
            print(f"wrote {path}")
        elif path.read_text() != text:
            print("dvc.yaml is out of date: run `python -m memrl.pipeline dvc-yaml`")
            return 1
        return 0
    # DVC ignores SIGINT while a stage runs and its children inherit that: take it back, so
    # Ctrl-C (like SIGTERM) stops a stage cleanly
    signal.signal(signal.SIGINT, signal.default_int_handler)
    raise_on_sigterm()
    try:
        if args.cmd == "runs":
            print(f"{args.family}: {run_jobs(args.family, args.profile, executor=args.executor)}")
        else:
            print(f"wrote {run_notebook(args.family, args.profile)}")
    except KeyboardInterrupt:
        print(f"\n{args.family}: interrupted; finished jobs are kept, results unchanged",
              file=sys.stderr)  # fmt: skip
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
