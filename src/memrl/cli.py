"""memrl's command line: ``python -m memrl <verb>``; every make target calls it.

Reproduce and look:
    repro     validate a profile, then `dvc repro` its pipeline (make repro)
    estimate  price what repro would run, from the stored runs' measured seconds
    design    check every comparison can decide at the profile's seeds, before any run
    verify    rerun a sample of stored jobs here, compare them byte for byte
    site      the offline results site of a profile (make site)
    plots     the dvc plots, drawn offline to one page (make plots)

One job, as rl-zoo's train.py runs one configuration:
    list      a family's jobs for a profile
    run       one job of a family, stored in the cache (never in the pipeline's stores)

The pipeline's stages (dvc.yaml runs these) and its upkeep:
    params    validate a profile's parameters and write them resolved
    runs      run a family's jobs into its run store
    notebook  run a family's notebook on its stored runs
    report    REPORT.md and report.json from the families' claims
    dvc-yaml  write every profile's dvc.yaml from the family registry
    data      pull, rebuild or verify data/
    notebooks regenerate notebooks/*.ipynb from their jupytext twins (make notebooks)

`python -m memrl <verb> --help` says more. A profile is smoke, default or paper; `--set
key=value` overrides one of a family's parameters for this command (a dotted path in its
section of params.yaml, the value read as YAML), validated like params.yaml.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path
from typing import Any

import yaml

# memrl draws its own progress (MEMRL_PROGRESS); the Hugging Face libraries' bars for loading
# local weights (under a second each) would only interleave with it, in every job worker and
# notebook kernel this process starts (they inherit the environment)
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
# ...and every other library's plain tqdm bar (transformers' "de-quantizing GGUF tensors" in
# every LLM job): tqdm reads TQDM_* as its defaults, and memrl's own bars pass ``disable``
os.environ.setdefault("TQDM_DISABLE", "1")

PROFILE_HELP = "smoke | default | paper (default: default)"


def seed_number(text: str) -> int:
    from memrl.onejob import seed_number

    return seed_number(text)


def select(specs: list[Any], job: str, seed: int) -> Any:
    """:func:`memrl.onejob.select` (benchmarks and tests pick a job by its label here)."""
    from memrl.onejob import select

    return select(specs, job, seed)


def overrides(pairs: list[str]) -> dict[str, Any]:
    """``["a.b=1", "c=[1, 2]"]`` -> ``{"a.b": 1, "c": [1, 2]}``: dotted keys, values read
    as YAML (merged into the parameters by :func:`memrl.config.apply_overrides`)."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            from memrl.config import ConfigError

            raise ConfigError(f"--set takes key=value, not {pair!r}")
        out[key] = _value(value)
    return out


def _value(text: str) -> Any:
    """YAML, plus the floats YAML 1.1 reads as strings (``3e-4``)."""
    value = yaml.safe_load(text)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    return value


def family_params(family: str, profile: str, sets: list[str]) -> Any:
    """The family's validated parameters for ``profile`` with ``--set`` overrides."""
    from memrl.families import load_family

    return load_family(family, profile, overrides=overrides(sets))


def _estimate(
    names: list[str], profile: str, sets: list[str], fresh: bool = False, calibrate: bool = False
) -> int:
    from memrl import families
    from memrl.config import ConfigError, load_runtime
    from memrl.estimate import estimate_families, render
    from memrl.llm.server import ServerError

    try:
        fams = [families.get(n).name for n in names or families.NAMES]
        if sets and len(fams) != 1:
            raise ValueError("--set changes one family's parameters: name that family")
        configs = {f: family_params(f, profile, sets) for f in fams}
        measured = None
        if calibrate:  # after the input is checked: it runs jobs
            from memrl.calibrate import calibrate as run_calibration

            measured = run_calibration(workers=load_runtime().processes)
        out = estimate_families(profile, configs, fresh=fresh, calibration=measured)
    except (ValueError, ConfigError, ServerError) as err:
        print(f"memrl: {err}", file=sys.stderr)
        return 2
    print(render(out, profile, fresh=fresh))
    return 0


def _design(a: argparse.Namespace) -> int:
    """What the runs stage checks before its jobs (:mod:`memrl.design_check`), for the
    families named (default: all), with ``--set`` to ask "what if" for one: exit 1 naming
    each comparison no outcome could decide."""
    from memrl import design_check, families
    from memrl.config import ConfigError
    from memrl.runner import pipeline_store

    unchecked = []
    try:
        fams = [families.get(n) for n in a.families or families.NAMES]
        if a.set and len(fams) != 1:
            raise ValueError("--set changes one family's parameters: name that family")
        cfgs = {fam.name: family_params(fam.name, a.profile, a.set) for fam in fams}
        for fam in fams:  # the published shapes pulled where absent (a fresh clone)
            pull = a.profile in design_check.DECIDING
            store, _ = pipeline_store(fam, a.profile, pull=pull)
            line = design_check.check(
                fam, cfgs[fam.name], a.profile, fam.grid(cfgs[fam.name]), store
            )
            print(line, flush=True)
            unchecked += [fam.name] if pull and " not checked" in line else []
    except design_check.DesignError as err:
        print(f"memrl: {err}", file=sys.stderr)
        return 1
    except (ValueError, ConfigError) as err:
        print(f"memrl: {err}", file=sys.stderr)
        return 2
    if unchecked:  # "checked nothing" must not read as a pass
        print(
            f"memrl: design not checked for {', '.join(unchecked)} (above: what it needs)",
            file=sys.stderr,
        )
        return 1
    return 0


def _run(a: argparse.Namespace) -> int:
    """``list`` and ``run`` (:mod:`memrl.onejob`), on the family's validated parameters."""
    from memrl import families, onejob
    from memrl.config import ConfigError

    try:
        fam = families.get(a.family)
        cfg = family_params(a.family, a.profile, a.set)
    except (ValueError, ConfigError) as err:
        print(f"memrl: {err}", file=sys.stderr)
        return 2
    if a.verb == "list":
        return onejob.list_jobs(fam, a.profile, fam.grid(cfg))
    return onejob.run_one(fam, a.profile, fam.grid(cfg), a.job, a.seed, a.store)


def _verify(a: argparse.Namespace) -> int:
    from memrl import families
    from memrl.config import check_profile, load_runtime
    from memrl.verify import run

    check_profile(a.profile)
    for name in a.family:
        families.get(name)  # an unknown family: one line, before any job
    return run(a.profile, a.family, a.sample, load_runtime().processes, a.cached, a.job)


def _stage(a: argparse.Namespace) -> int:
    """A pipeline stage: Ctrl-C and SIGTERM stop it cleanly (finished jobs kept, published
    results unchanged); bad parameters or a missing model exit 2 with one message."""
    from memrl import executors, families, pipeline, report
    from memrl.config import ConfigError, check_profile
    from memrl.llm.server import ServerError

    # DVC ignores SIGINT while a stage runs and its children inherit that: take it back
    signal.signal(signal.SIGINT, signal.default_int_handler)
    executors.raise_on_sigterm()
    what = getattr(a, "family", a.verb)
    try:
        check_profile(a.profile)
        if a.verb == "report":
            results = a.results or Path("results") / a.profile
            print(f"wrote {report.write(results, list(families.FAMILIES))}")
            return 0
        if a.verb == "params":
            print(f"wrote {pipeline.write_params(a.profile)}")
        elif a.verb == "runs":
            print(f"{a.family}: {pipeline.run_stage(a.family, a.profile, a.executor)}")
        else:
            print(f"wrote {pipeline.run_notebook(a.family, a.profile)}")
    except (ConfigError, FileNotFoundError, ServerError) as err:  # bad parameters, a missing
        # model or data, an LLM server that cannot score
        print(f"memrl: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"\n{what}: interrupted; finished jobs are kept, results unchanged", file=sys.stderr)
        return 130
    return 0


def _site(a: argparse.Namespace) -> int:
    from memrl.runtime import repo_root
    from memrl.site import build

    results = a.results or repo_root() / "results" / a.profile
    print(f"wrote {build(results, a.out or results / 'site')}")
    return 0


def _plots(a: argparse.Namespace) -> int:
    from memrl.config import ConfigError
    from memrl.dvc_plots import render

    try:
        out = render(a.profile, a.revs, a.out)
    except (RuntimeError, ConfigError) as e:
        print(f"memrl plots: {e}", file=sys.stderr)
        return 2
    print(f"wrote {out}")
    return 0


def _data(a: argparse.Namespace) -> int:
    from memrl import data

    if a.action == "ensure":
        data.ensure()
    elif a.action == "build":
        print("built " + ", ".join(map(str, data.build())))
    else:
        ok = data.verify()
        if ok:
            print("data/ matches data.dvc")
            return 0
        print(
            "memrl: data/ is missing or differs from data.dvc: `make data` (python -m memrl "
            "data ensure) pulls it, else rebuilds it",
            file=sys.stderr,
        )
        return 1
    return 0


def _repro(a: argparse.Namespace, rest: list[str]) -> int:
    from memrl.pipeline import repro

    return repro(a.profile, rest)


def _dvc_yaml(a: argparse.Namespace) -> int:
    from memrl.dvcfile import write_all

    return write_all(a.check)


def _isa(a: argparse.Namespace) -> int:
    """The pinned instruction set: its variables and what numpy and torch compute with."""
    import numpy  # noqa: F401  (loaded after the pin: check() reads what it chose)
    import torch  # noqa: F401

    from memrl import isa
    from memrl.runtime import set_torch_threads

    pinned = isa.LEVELS[isa.level()]
    if a.kernel_env:  # `make lab`: the kernel's environment, for ipykernel install --env
        print(" ".join(f"--env {k} {v}" for k, v in isa.environment().items()))
        return 0
    try:
        set_torch_threads(1)
        seen = isa.check()
    except isa.ISAError as err:
        print(f"memrl isa: {err}", file=sys.stderr)
        return 2
    print(f"level {seen.pop('level')} (MEMRL_ISA; see memrl.isa)")
    for k, v in pinned.items():
        print(f"  {k}={v}")
    print("computing with: " + ", ".join(f"{k} {v}" for k, v in seen.items()))
    from memrl.engines import pin  # the accelerated engine's pin (jax is not loaded here)

    one = ", one core a process" if pin.device() == "cpu" else ""
    vers = ", ".join(f"{k} {v}" for k, v in pin.versions().items())
    print(f"engine {pin.KEY} (memrl.engines.pin; engine jobs' keys carry it): {vers}{one}")
    for k, v in pin.environment().items():
        print(f"  {k}={v}")
    return 0


class Parser(argparse.ArgumentParser):
    """argparse, whose errors are one ``memrl:`` line (the usage is for --help)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        verb = self.prog.removeprefix("python -m memrl").strip()
        where = f"{verb}: " if verb else ""
        print(f"memrl: {where}{message} (--help says more)", file=sys.stderr)
        raise SystemExit(2)


def parser() -> argparse.ArgumentParser:

    ap = Parser(
        prog="python -m memrl",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = ap.add_subparsers(dest="verb", required=True, metavar="VERB")

    def verb(name: str, text: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=text, description=text)

    def profile(p: argparse.ArgumentParser, sets: bool = True) -> None:
        p.add_argument("--profile", default="default", help=PROFILE_HELP)
        if sets:
            p.add_argument(
                "--set",
                action="append",
                default=[],
                metavar="KEY=VALUE",
                help="override a parameter, e.g. rsac.learning_rate=3e-4",
            )  # noqa: E501

    p = verb(
        "repro",
        "validate a profile, then `dvc repro` its pipeline, or only the stages named (with "
        "what they need); options go to dvc",
    )
    profile(p, sets=False)
    p = verb(
        "design",
        "check that every comparison of the profile's claims can decide at its seeds, on "
        "phantom runs shaped by the stored ones (the runs stage does it before its jobs)",
    )
    p.add_argument("families", nargs="*", help="default: every family")
    profile(p)
    p = verb(
        "estimate", "price the jobs not yet stored (core-seconds, wall time), from stored runs"
    )
    p.add_argument("families", nargs="*", help="default: every family")
    profile(p)
    p.add_argument("--fresh", action="store_true", help="every job, as on a fresh clone")
    p.add_argument(
        "--calibrate",
        action="store_true",
        help="first time a few smoke jobs here (~1 min) and scale the published timings by "
        "this machine's measured speed",
    )
    p = verb(
        "verify",
        "rerun a sample of stored jobs (the same ones on every machine), each in a fresh "
        "process, and compare every stored field byte for byte; exit 0 only if all agree",
    )
    p.add_argument("--family", action="append", default=[], help="default: every family")
    p.add_argument("--sample", type=int, default=12, help="jobs to rerun (default: 12)")
    p.add_argument(
        "--job",
        action="append",
        default=[],
        help="sample only jobs whose label contains this (case-insensitive; repeatable), "
        "e.g. --job 'stream Q' --job PPO-FFM",
    )
    p.add_argument(
        "--cached",
        action="store_true",
        help="rerun nothing: compare every job computed here already (the cache: JupyterLab, "
        "nbval) with the store",
    )
    profile(p, sets=False)
    p = verb("site", "build a profile's offline results site (no training)")
    p.add_argument("results", nargs="?", type=Path, help="default: results/<profile>")
    p.add_argument("--out", type=Path, help="default: <results>/site")
    profile(p, sets=False)
    p = verb("plots", "draw the dvc plots offline to results/<profile>/dvc_plots.html")
    profile(p, sets=False)
    p.add_argument("revs", nargs="*", help="git revisions to overlay (dvc plots diff)")
    p.add_argument("-o", "--out", type=Path, help="default: results/<profile>/dvc_plots.html")
    p = verb("list", "list a family's jobs for a profile")
    p.add_argument("family")
    profile(p)
    p = verb("run", "run one job of a family; stored in the cache, reused when run again")
    p.add_argument("family")
    p.add_argument("job", help="words of the job's label, e.g. 'RSAC-LSTM Pendulum-V'")
    p.add_argument("--seed", type=seed_number, default=0, help="default: 0")
    p.add_argument("--store", type=Path, help="result folder (default: the cache's)")
    profile(p)
    p = verb("params", "stage: validate a profile's parameters, write them resolved")
    profile(p, sets=False)
    for name, text in (
        ("runs", "stage: run a family's jobs into its run store"),
        ("notebook", "stage: run a family's notebook on its stored runs"),
    ):  # noqa: E501
        p = verb(name, text)
        p.add_argument("family")
        profile(p, sets=False)
        if name == "runs":
            p.add_argument("--executor", choices=("process", "ray"), default=None)
    p = verb("report", "stage: REPORT.md and report.json from the families' claims")
    p.add_argument("results", nargs="?", type=Path, help="default: results/<profile>")
    profile(p, sets=False)
    p = verb("dvc-yaml", "write every profile's dvc.yaml from the family registry")
    p.add_argument("--check", action="store_true", help="fail if a dvc.yaml is out of date")
    p = verb("data", "data/: pull it, else rebuild it (ensure); rebuild (build); check (verify)")
    p.add_argument("action", choices=("ensure", "build", "verify"))
    p = verb("isa", "the pinned instruction set every run computes with, and what it uses here")
    p.add_argument("--kernel-env", action="store_true", help=argparse.SUPPRESS)
    p = verb("notebooks", "regenerate .ipynb from jupytext .py twins, run on the smoke profile")
    p.add_argument("paths", nargs="+", type=Path, help="notebooks/NAME.py ...")
    return ap


def _notebooks(a: argparse.Namespace) -> int:
    from memrl.nbtools import refresh

    for p in a.paths:
        if p.suffix != ".py" or not p.is_file():
            print(f"memrl notebooks: not a jupytext .py notebook: {p}", file=sys.stderr)
            return 2
        print(f"refreshed {refresh(p)}", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run a verb. A user's error (bad parameters or YAML, missing data or runs, an unknown
    family, an LLM server that cannot score, a CPU without the pinned kernels) is one line
    and exit 2; ``MEMRL_DEBUG=1`` shows its traceback instead."""
    import os

    try:
        return _main(argv)
    except KeyboardInterrupt:
        print("\nmemrl: interrupted; finished jobs are kept", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `memrl list ... | head`: the reader left; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as err:
        line = None if os.environ.get("MEMRL_DEBUG") else user_error(err)
        if line is None:
            raise
        print(f"memrl: {line}", file=sys.stderr)
        return 2


def user_error(err: BaseException) -> str | None:
    """The one line a user's error prints, with its fix (None: not the user's to fix)."""
    from memrl.config import ConfigError
    from memrl.isa import ISAError
    from memrl.llm.server import ServerError
    from memrl.runs import MissingRunsError

    if isinstance(err, MissingRunsError):
        return f"{err}: `make repro` (or `python -m memrl runs <family>`) runs them"
    if isinstance(err, FileNotFoundError):
        name = str(err.filename or err)
        in_data = "/data/" in name or name.startswith("data")
        fix = "; `make data` restores data/" if in_data and "make data" not in name else ""
        return f"{err.strerror or 'not found'}: {name}{fix}" if err.filename else f"{err}{fix}"
    if isinstance(err, ConfigError | ServerError | ISAError):
        return str(err).replace("\n", " ")
    if type(err).__name__ == "PapermillExecutionError":  # a notebook's cell raised
        ename, evalue = getattr(err, "ename", ""), getattr(err, "evalue", "")
        if ename in ("MissingRunsError", "ConfigError", "FileNotFoundError"):
            return f"{evalue} (in {err.exec_count and f'cell {err.exec_count}' or 'a cell'})"
    if isinstance(err, ValueError) and str(err).startswith("unknown family"):
        return str(err)
    return None


def _main(argv: list[str] | None = None) -> int:
    ap = parser()
    a, rest = ap.parse_known_args(argv)
    if a.verb == "repro":
        return _repro(a, rest)  # the rest goes to dvc repro
    if rest:
        ap.error(f"unrecognized arguments: {' '.join(rest)}")
    if a.verb == "estimate":
        return _estimate(a.families, a.profile, a.set, a.fresh, a.calibrate)
    if a.verb == "verify":
        return _verify(a)
    if a.verb == "design":
        return _design(a)
    if a.verb in ("list", "run"):
        return _run(a)
    if a.verb in ("params", "runs", "notebook", "report"):
        return _stage(a)
    verbs = {"site": _site, "plots": _plots, "data": _data, "dvc-yaml": _dvc_yaml}
    return {**verbs, "notebooks": _notebooks, "isa": _isa}[a.verb](a)
