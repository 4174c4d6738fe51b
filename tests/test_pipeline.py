"""The pipeline comes from the family registry: dvc.yaml's stages, their deps, the plots,
the report's order; a failed notebook stage keeps the last good results."""

import json

import pytest
import yaml

from memrl import families, pipeline
from memrl.families import FAMILIES, module_closure
from memrl.jobs import JobSpec, MissingRunsError, RunStore
from memrl.runtime import repo_root

ROOT = repo_root()
DVC = yaml.safe_load((ROOT / "dvc.yaml").read_text())


def test_dvc_yaml_is_generated_from_the_registry():
    assert (ROOT / "dvc.yaml").read_text() == pipeline.render_dvc_yaml(), (
        "dvc.yaml is out of date: run `python -m memrl.pipeline dvc-yaml`"
    )


def test_import_closure_follows_function_level_imports():
    files = module_closure("memrl.families.recurrent_off_policy.jobs")
    assert "src/memrl/agents/recurrent_sac.py" in files  # imported inside run_job
    assert "src/memrl/memory/cores.py" in files  # imported by the agents, transitively
    assert "src/memrl/agents/__init__.py" in files  # importing a module runs its package


@pytest.mark.parametrize("fam", FAMILIES, ids=lambda f: f.name)
def test_training_stage_deps_cover_every_module_its_jobs_import(fam):
    runs, notebook = DVC["stages"][f"runs_{fam.name}"], DVC["stages"][fam.name]
    code = [f for f in fam.job_sources() if (ROOT / f).stat().st_size]  # DVC skips empty ones
    missing = set(code) - set(runs["deps"])
    assert not missing, f"runs_{fam.name} misses deps {sorted(missing)}: regenerate dvc.yaml"
    # claims, tables and the notebook are not training inputs: editing them never retrains
    assert f"src/memrl/families/{fam.name}/claims.py" not in runs["deps"]
    assert f"src/memrl/families/{fam.name}/jobs.py" not in notebook["deps"]
    assert not [d for d in notebook["deps"] if d.startswith("src/memrl/agents/rec")]
    assert fam.runs_dir in notebook["deps"] and f"notebooks/{fam.name}.ipynb" in notebook["deps"]
    assert set(fam.data) <= set(runs["deps"])


def test_plots_and_report_order_come_from_the_registry():
    from memrl.report import FAMILY_ORDER

    assert FAMILY_ORDER == tuple(f.name for f in FAMILIES)
    declared = [next(iter(p)) for p in DVC["plots"]]
    assert declared == [f"{f.results}/plots/{p.file}" for f in FAMILIES for p in f.plots]
    for f in FAMILIES:  # each plot file is an output of its family's notebook stage
        outs = [next(iter(o)) for o in DVC["stages"][f.name]["outs"]]
        assert all(f"{f.results}/plots/{p.file}" in outs for p in f.plots)


def test_results_outlive_a_failed_or_interrupted_notebook_stage(tmp_path, monkeypatch):
    """DVC does not delete persisted outputs first; the stage publishes only on success."""
    fam = families.get("episodic_control")
    monkeypatch.setattr(pipeline, "repo_root", lambda: tmp_path)
    out = tmp_path / fam.results
    (out / "plots").mkdir(parents=True)
    (out / "claims.json").write_text("[1]")
    (out / "plots" / "CartPole.csv").write_text("old")
    (tmp_path / "notebooks").mkdir()

    def half_run(src, dst, parameters, **kw):
        staged = tmp_path / parameters["output_dir"]
        (staged / "plots").mkdir(parents=True)
        (staged / "plots" / "CartPole.csv").write_text("half")
        raise KeyboardInterrupt  # or a failing cell

    import papermill

    monkeypatch.setattr(papermill, "execute_notebook", half_run)
    with pytest.raises(KeyboardInterrupt):
        pipeline.run_notebook(fam.name, "smoke")
    assert (out / "claims.json").read_text() == "[1]"
    assert (out / "plots" / "CartPole.csv").read_text() == "old"
    assert sorted(p.name for p in out.iterdir()) == ["claims.json", "plots"]  # no staging left

    def full_run(src, dst, parameters, **kw):
        staged = tmp_path / parameters["output_dir"]
        (staged / "plots").mkdir(parents=True)
        (staged / "plots" / "CartPole.csv").write_text("new")
        (staged / "claims.json").write_text("[2]")

    monkeypatch.setattr(papermill, "execute_notebook", full_run)
    pipeline.run_notebook(fam.name, "smoke")
    assert (out / "claims.json").read_text() == "[2]"
    assert (out / "plots" / "CartPole.csv").read_text() == "new"


def test_stored_runs_of_another_profile_are_refused(tmp_path):
    store = RunStore(tmp_path / "default")  # each profile's runs in a folder of their own
    store.write_manifest([JobSpec("m:f", {})], {"profile": "default", "params": "x"})
    with pytest.raises(MissingRunsError, match="other parameters"):
        pipeline.load_results("episodic_control", "default", str(tmp_path))
    with pytest.raises(MissingRunsError, match="no stored runs"):
        pipeline.load_results("episodic_control", "smoke", str(tmp_path))
    assert json.loads((tmp_path / "default" / "manifest.json").read_text())["jobs"][0]["key"]
