"""Each profile's DVC pipeline (``dvc.yaml``), generated from the family registry.

``default``'s pipeline is ``dvc.yaml`` at the root (plain ``dvc repro`` runs it); the
others' are ``results/<profile>/dvc.yaml``. Stages: ``params`` (validate and resolve the
profile's parameters), per family ``runs_<family>`` (its jobs; always called, the run store
skipping what it has) and ``<family>`` (its notebook), then ``report``. ``python -m memrl
dvc-yaml`` writes them; a test fails when one is out of date.
"""

from __future__ import annotations

from typing import Any

import yaml

from memrl import families
from memrl.config import PROFILES, check_profile
from memrl.fingerprint import imported_symbols, module_closure, symbol_files
from memrl.moves import PREVIOUS
from memrl.profiles import pipeline_file, results_root
from memrl.runtime import repo_root

NOTEBOOK_OUTPUTS = ("figures", "tables")  # folders the notebook writes besides plots/


def _code(paths) -> list[str]:
    """Source files as DVC deps, empty ones left out (DVC warns about them; a file that gets
    code makes dvc.yaml stale, which tests/test_pipeline.py catches)."""
    root = repo_root()
    return sorted(p for p in set(paths) if (root / p).stat().st_size > 0)


def _uncached() -> dict[str, bool]:
    """Small outputs kept in git (not DVC's cache), never deleted before their stage runs."""
    return {"cache": False, "persist": True}


def notebook_sources(fam: families.Family) -> list[str]:
    """Every source file ``fam``'s notebook stage runs code from: what its notebook imports
    (from the jupytext twin) and the stage command, followed symbol by symbol (an agent's
    config class, not the agent, when the family's schema names it)."""
    notebook = repo_root() / "notebooks" / f"{fam.name}.py"
    return symbol_files(imported_symbols(notebook) | {("memrl.pipeline", "run_notebook")})


def dvc_yaml(profile: str = "default") -> dict[str, Any]:
    """``profile``'s pipeline, derived from :data:`memrl.families.FAMILIES`. Paths are
    repo-relative (a nested pipeline's stages run at the root: ``wdir``); its ``plots:``
    are relative to its own folder, as DVC reads them."""
    check_profile(profile)
    py = "python -m memrl"
    res = results_root(profile)
    resolved = f"{res}/params.yaml"
    # the stage commands: the command line, the pipeline, running and loading runs, the registry
    runner = [
        f"src/memrl/{m}.py"
        for m in (
            "cli",
            "pipeline",
            "runs",
            "executors",
            "jobs",
            "fingerprint",
            "config",
            "profiles",
        )
    ]
    runner.append("src/memrl/families/__init__.py")
    schemas = [f"memrl.families.{f.name}.params" for f in families.FAMILIES]
    stages: dict[str, Any] = {
        "params": {
            "cmd": f"{py} params --profile {profile}",
            "deps": ["params.yaml"]
            + _code({*runner, *(p for m in schemas for p in module_closure(m))}),
            "outs": [{resolved: _uncached()}],
        }
    }
    for fam in families.FAMILIES:
        f, out = fam.name, fam.results_dir(profile)
        stages[f"runs_{f}"] = {
            "cmd": f"{py} runs {f} --profile {profile}",
            # the store decides what is left, job by job (a stored key is never rerun): DVC
            # calls the stage every time, so a store committed part-way (e.g. pushed when a
            # long stage was stopped) resumes on any machine instead of passing as complete;
            # with nothing left the outputs keep their bytes and the notebooks do not rerun
            "always_changed": True,
            # estimate.py prices the stage's jobs and writes its timings.json
            "deps": _code({*fam.job_sources(), *runner, "src/memrl/estimate.py"}) + list(fam.data),
            "params": [{resolved: ["runtime", f]}],
            "outs": [
                {fam.runs_dir(profile): {"persist": True}},
                {fam.timings_path(profile): _uncached()},
            ],
        }
        outs: list[Any] = [{f"{out}/{f}.ipynb": {"persist": True}}]
        outs += [{f"{out}/{d}": {"persist": True}} for d in NOTEBOOK_OUTPUTS]
        outs += [{f"{out}/claims.json": _uncached()}]
        outs += [{f"{out}/{a}": _uncached()} for a in fam.artefacts]
        outs += [{fam.plot_path(profile, p): _uncached()} for p in fam.plots]
        stages[f] = {
            "cmd": f"{py} notebook {f} --profile {profile}",
            "deps": [f"notebooks/{f}.ipynb"]
            + _code({*notebook_sources(fam), *runner})
            + list(fam.data)
            + [fam.runs_dir(profile)],
            # and the paper profile's values, which deviation texts set beside ours
            "params": [{resolved: [f, f"paper.{f}"]}],
            "outs": outs,
            "metrics": [{f"{out}/metrics": _uncached()}],  # one file per claim
        }
    stages["report"] = {
        "cmd": f"{py} report {res}",
        # everything the report imports (the verdict rule it prints lives in stats/verdict.py)
        "deps": _code(
            {
                "src/memrl/cli.py",
                "src/memrl/families/__init__.py",
                *module_closure("memrl.report"),
            }
        )
        + [f"{fam.results_dir(profile)}/claims.json" for fam in families.FAMILIES]
        + [f"{fam.results_dir(profile)}/{a}" for fam in families.FAMILIES for a in fam.artefacts]
        # the verdicts the profile last published, which report.json's since_published reads
        + ([f"{res}/{PREVIOUS}"] if (repo_root() / res / PREVIOUS).is_file() else []),
        "outs": [
            {f"{res}/REPORT.md": _uncached()},
            {f"{res}/report.json": _uncached()},
            {f"{res}/contents.json": _uncached()},
        ]
        + [{f"{res}/{a}": _uncached()} for fam in families.FAMILIES for a in fam.artefacts],
    }
    here = "" if profile == "default" else f"{res}/"  # plots: relative to the dvc.yaml
    if here:  # a nested pipeline's stages run at the root
        stages = {name: {"wdir": "../..", **stage} for name, stage in stages.items()}
    plots = [  # .dvc/plots/memrl_lines.json: a colour per method, a dash per revision
        {
            fam.plot_path(profile, p).removeprefix(here): {
                "template": "memrl_lines",
                "x": p.x,
                "y": list(p.y),
                "title": p.title,
                "x_label": p.x_label,
                "y_label": p.y_label,
            }
        }
        for fam in families.FAMILIES
        for p in fam.plots
    ]
    return {"stages": stages, "plots": plots}


def render_dvc_yaml(profile: str = "default") -> str:
    where = (
        "at the root, so plain `dvc repro` runs it"
        if profile == "default"
        else (f"run it with `PROFILE={profile} make repro` or `dvc repro {pipeline_file(profile)}`")
    )
    header = (
        f"# The '{profile}' profile's pipeline ({where}).\n"
        "# Generated by `python -m memrl dvc-yaml` from the family registry\n"
        "# (src/memrl/families/__init__.py); tests/test_pipeline.py fails when it is out of date.\n"
        "# params resolves and validates the profile's parameters; per family, runs_<family>\n"
        "# executes its jobs into its run store (one file per job, kept across runs: an\n"
        "# interrupted stage resumes), then <family> runs its notebook on them; report last.\n"
    )
    return header + yaml.safe_dump(dvc_yaml(profile), sort_keys=False, width=100)


def write_all(check: bool = False) -> int:
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
        print(f"out of date: {', '.join(stale)}: run `python -m memrl dvc-yaml`")
    return 1 if stale else 0
