"""The pipeline comes from the family registry: each profile's dvc.yaml, its stages, their
deps, the plots, the report's order; profiles never share a file; a failed notebook stage
keeps the last good results; an unknown profile fails before anything runs."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from memrl import cli, dvcfile, families, pipeline, runner
from memrl.config import PROFILES, ConfigError
from memrl.families import FAMILIES, effective_params
from memrl.fingerprint import module_closure
from memrl.jobs import JobSpec
from memrl.runs import MissingRunsError, RunStore
from memrl.runtime import repo_root

ROOT = repo_root()
DVC = yaml.safe_load((ROOT / "dvc.yaml").read_text())
RESOLVED = "results/default/params.yaml"


def test_every_profiles_dvc_yaml_is_generated_from_the_registry():
    for profile in PROFILES:
        path = ROOT / dvcfile.pipeline_file(profile)
        assert path.read_text() == dvcfile.render_dvc_yaml(profile), (
            f"{path.name} is out of date: run `python -m memrl dvc-yaml`"
        )
    assert dvcfile.pipeline_file("default") == "dvc.yaml"  # plain `dvc repro` runs default


def _outs(stage):
    return [next(iter(o)) for o in stage.get("outs", []) + stage.get("metrics", [])]


@pytest.mark.parametrize("profile", PROFILES)
def test_a_profile_writes_only_into_its_own_results_tree(profile):
    """Switching profiles rewrites nothing shared: params.yaml is only read, and every output
    of a profile's pipeline lies in results/<profile>/."""
    dvc = yaml.safe_load((ROOT / dvcfile.pipeline_file(profile)).read_text())
    nested = profile != "default"
    for name, stage in dvc["stages"].items():
        assert all(o.startswith(f"results/{profile}/") for o in _outs(stage)), name
        assert f"--profile {profile}" in stage["cmd"] or stage["cmd"].endswith(f"results/{profile}")
        assert stage.get("wdir") == ("../.." if nested else None)  # paths are repo-relative
        assert "params.yaml" not in _outs(stage)
        if name not in ("params", "report"):  # the others read the resolved parameters
            (params,) = stage["params"]
            assert list(params) == [f"results/{profile}/params.yaml"]
    assert "params.yaml" in dvc["stages"]["params"]["deps"]


def test_dvc_finds_every_profiles_pipeline():
    """A nested dvc.yaml in a git-ignored folder is invisible to DVC: check it sees them."""
    dvc = str(Path(sys.executable).parent / "dvc")
    res = subprocess.run(
        [dvc, "stage", "list", "--all"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    for profile in ("smoke", "paper"):
        for stage in ("params", "runs_episodic_control", "report"):
            assert f"results/{profile}/dvc.yaml:{stage} " in res.stdout, res.stdout


def test_stages_depend_on_their_familys_resolved_parameters_only():
    for fam in FAMILIES:
        assert DVC["stages"][f"runs_{fam.name}"]["params"] == [{RESOLVED: ["runtime", fam.name]}]
        # the notebook: its family's parameters and the paper profile's (deviation texts)
        assert DVC["stages"][fam.name]["params"] == [{RESOLVED: [fam.name, f"paper.{fam.name}"]}]


def test_resolved_parameters_change_only_where_the_profile_changes(params_with):
    """A smoke-only edit leaves default's resolved parameters (what its stages depend on)
    as they were, so DVC reruns no default stage; a default edit shows in both."""
    base = effective_params("default")
    smoke_edit = params_with(lambda r: r["experience_replay"]["smoke"].update(seeds=3))
    assert effective_params("default", smoke_edit) == base
    assert effective_params("smoke", smoke_edit)["experience_replay"]["seeds"] == 3
    assert base["experience_replay"]["per_dqn"]["total_timesteps"] > 0  # every key resolved
    assert set(base) == {"runtime", *families.NAMES}


def test_write_params_writes_the_resolved_profile(tmp_path, monkeypatch):
    monkeypatch.setattr(pipeline, "repo_root", lambda: tmp_path)
    monkeypatch.setattr(pipeline, "preflight", lambda p: effective_params(p))
    path = pipeline.write_params("smoke")
    assert path == tmp_path / "results/smoke/params.yaml"
    assert yaml.safe_load(path.read_text()) == effective_params("smoke")


def test_an_unknown_profile_fails_in_a_second_and_touches_nothing():
    before = {p: p.read_bytes() for p in (ROOT / "params.yaml", ROOT / "dvc.yaml")}
    start = time.monotonic()
    res = subprocess.run(
        ["make", "-s", "repro", "PROFILE=foo"], cwd=ROOT, capture_output=True, text=True
    )
    assert res.returncode != 0 and "unknown profile 'foo'" in res.stderr
    assert "smoke, default, paper" in res.stderr
    assert time.monotonic() - start < 5
    assert before == {p: p.read_bytes() for p in before}
    assert not (ROOT / "results" / "foo").exists()


def test_repro_validates_the_profile_before_dvc_starts(monkeypatch, capsys):
    def no_dvc(*a, **k):
        raise AssertionError("dvc was started")

    monkeypatch.setattr(subprocess, "Popen", no_dvc)
    assert cli.main(["repro", "--profile", "foo"]) == 2
    assert "unknown profile 'foo'" in capsys.readouterr().err

    def bad(profile):
        raise ConfigError("invalid parameters for family 'x': seeds")

    monkeypatch.setattr(pipeline, "preflight", bad)
    assert cli.main(["repro", "--profile", "smoke"]) == 2
    assert "seeds" in capsys.readouterr().err


def test_repro_runs_the_stages_it_is_given_and_only_those():
    assert pipeline.dvc_targets("default", []) == ["dvc.yaml", "-q"]  # DVC's hints: only -v
    assert pipeline.dvc_targets("default", ["episodic_control", "-f", "-v"]) == [
        "dvc.yaml:episodic_control",
        "-f",
        "-v",
    ]
    smoke = dvcfile.pipeline_file("smoke")
    assert pipeline.dvc_targets("smoke", ["-j", "2", "report"]) == [
        f"{smoke}:report",
        "-j",
        "2",
        "-q",
    ]


def test_profiles_script_runs_without_the_package():
    script = ROOT / "src" / "memrl" / "profiles.py"
    ok = subprocess.run([sys.executable, "-I", str(script), "smoke"], capture_output=True)
    bad = subprocess.run(
        [sys.executable, "-I", str(script), "Smoke"], capture_output=True, text=True
    )
    assert ok.returncode == 0 and bad.returncode == 2 and "unknown profile 'Smoke'" in bad.stderr


def test_import_closure_follows_function_level_imports():
    files = module_closure("memrl.families.recurrent_off_policy.jobs")
    assert "src/memrl/agents/recurrent_sac.py" in files  # imported inside rsac_job
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
    # an algorithm's config lives beside its loop (issue 54), so a notebook stage depends on
    # the agents whose configs its family validates; their code changes the runs anyway
    assert fam.runs_dir("default") in notebook["deps"]
    assert f"notebooks/{fam.name}.ipynb" in notebook["deps"]
    assert set(fam.data) <= set(runs["deps"])


def test_the_report_stage_depends_on_everything_the_report_imports():
    """A change to the verdict rule reruns the report that prints it (the stage named
    stats/claims.py and compare.py by hand, not stats/verdict.py, where the rule moved)."""
    deps = set(DVC["stages"]["report"]["deps"])
    code = {f for f in module_closure("memrl.report") if (ROOT / f).stat().st_size}
    assert "src/memrl/stats/verdict.py" in code
    assert code <= deps, sorted(code - deps)


def test_plots_and_report_order_come_from_the_registry():
    declared = [next(iter(p)) for p in DVC["plots"]]
    res = {f.name: f.results_dir("default") for f in FAMILIES}
    assert declared == [f"{res[f.name]}/plots/{p.file}" for f in FAMILIES for p in f.plots]
    for f in FAMILIES:  # each plot file is an output of its family's notebook stage
        outs = [next(iter(o)) for o in DVC["stages"][f.name]["outs"]]
        assert all(f"{res[f.name]}/plots/{p.file}" in outs for p in f.plots)
    for p in DVC["plots"]:  # axis titles, and a colour per method (the template's)
        spec = next(iter(p.values()))
        assert spec["x_label"] and spec["y_label"] and spec["template"] == "memrl_lines"
    template = json.loads((ROOT / ".dvc/plots/memrl_lines.json").read_text())
    band, line = template["layer"]  # the method's colour (not the revision's) on both marks
    assert band["encoding"]["color"]["field"] == line["encoding"]["color"]["field"] == "field"
    assert line["encoding"]["strokeDash"]["field"] == "rev"
    assert band["mark"]["type"] == "area" and band["encoding"]["y2"]["field"] == "ci_high"
    smoke = yaml.safe_load((ROOT / "results/smoke/dvc.yaml").read_text())
    nested = [next(iter(p)) for p in smoke["plots"]]  # relative to results/smoke/dvc.yaml
    assert nested == [d.removeprefix("results/default/") for d in declared]


def test_results_outlive_a_failed_or_interrupted_notebook_stage(tmp_path, monkeypatch):
    """DVC does not delete persisted outputs first; the stage publishes only on success."""
    fam = families.get("episodic_control")
    monkeypatch.setattr(pipeline, "repo_root", lambda: tmp_path)
    out = tmp_path / fam.results_dir("smoke")
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
        (staged / "plots" / "CartPole.csv").write_text("step,NEC,DQN\n1,2.0,3.0\n")
        (staged / "claims.json").write_text("[2]")

    monkeypatch.setattr(papermill, "execute_notebook", full_run)
    pipeline.run_notebook(fam.name, "smoke")
    assert (out / "claims.json").read_text() == "[2]"
    # every declared plot column exists (DVC refuses a plot whose field is missing): a
    # method the profile did not run is an empty column, a plot without data header-only
    plots = {p.file: p for p in fam.plots}
    assert (out / "plots" / "CartPole.csv").read_text() == "step,NEC,DQN,MFEC,floor\n1,2.0,3.0,,\n"
    assert set(plots["CartPole.csv"].y) == {"NEC", "DQN", "MFEC", "floor"}
    for name, plot in plots.items():
        if name != "CartPole.csv":
            assert (out / "plots" / name).read_text() == ",".join((plot.x, *plot.y)) + "\n"


def test_stored_runs_of_another_profile_or_other_parameters_are_refused(tmp_path):
    store = RunStore(tmp_path / "default")  # each profile's runs in a folder of their own
    store.write_manifest([JobSpec("m:f", {})], {"profile": "default", "params": "x"})
    fam = families.get("episodic_control")

    def load(profile: str, runs_dir: str, overrides=None):
        cfg = families.load_family(fam.name, profile)
        return runner.load_runs(
            fam, cfg, profile, runner.open_store(fam, profile, runs_dir, overrides)
        )

    with pytest.raises(MissingRunsError, match="other parameters"):
        load("default", str(tmp_path / "default"))
    with pytest.raises(MissingRunsError, match="profile 'default'"):
        load("smoke", str(tmp_path / "default"))
    with pytest.raises(MissingRunsError, match="no stored runs"):
        load("smoke", str(tmp_path / "smoke"))
    with pytest.raises(ConfigError, match="leave runs_dir empty"):
        load("default", str(tmp_path), {"seeds": 3})
    assert json.loads((tmp_path / "default" / "manifest.json").read_text())["jobs"][0]["key"]


def test_the_resolved_parameters_carry_the_paper_profile_for_the_deviation_texts():
    params = pipeline.preflight("smoke")
    assert set(params) == {"runtime", *families.NAMES, "paper"}
    assert params["paper"] == {f: effective_params("paper")[f] for f in families.NAMES}


def test_a_published_notebook_names_no_machine(tmp_path):
    """papermill's metadata keeps the paths it read and wrote: published relative to the
    repository, so results/ never holds the publishing machine's absolute paths."""
    import nbformat

    root = tmp_path / "repo"
    staged = root / "results" / "default" / "fam" / ".staging" / "fam.ipynb"
    staged.parent.mkdir(parents=True)
    nb = nbformat.v4.new_notebook()
    nb.metadata["papermill"] = {"input_path": "/abs/x.ipynb", "output_path": str(staged)}
    nbformat.write(nb, staged)
    pipeline._relative_paths(staged, root, root / "results" / "default" / "fam")
    meta = nbformat.read(staged, as_version=4).metadata["papermill"]
    assert meta["input_path"] == "notebooks/fam.ipynb"
    assert meta["output_path"] == "results/default/fam/fam.ipynb"
    assert str(tmp_path) not in staged.read_text()


def test_a_runs_stage_committed_part_way_resumes_and_a_complete_one_reruns_nothing(tmp_path):
    """Each family's runs stage is always called (``always_changed``): DVC would otherwise take
    a store committed part-way (a long stage stopped, its finished jobs pushed) for a complete
    one. Checked on DVC itself, with the same stage shape: a 'runs' stage that adds what its
    store lacks to a persisted folder, and a 'notebook' stage over that folder."""
    for profile in PROFILES:
        stages = yaml.safe_load((ROOT / dvcfile.pipeline_file(profile)).read_text())["stages"]
        for fam in FAMILIES:
            assert stages[f"runs_{fam.name}"].get("always_changed") is True
    runs = (  # adds the jobs 'want' names that the store lacks
        "import pathlib; d = pathlib.Path('store'); d.mkdir(exist_ok=True); "
        "want = pathlib.Path('want').read_text().split(); "
        "[(d / j).write_text(j) for j in want if not (d / j).exists()]"
    )
    stages = {
        "runs": {
            "cmd": f'{sys.executable} -c "{runs}"',
            "deps": ["want"],
            "outs": [{"store": {"persist": True}}],
            "always_changed": True,
        },
        "notebook": {
            # each call appends the store's size to 'calls'
            "cmd": f'{sys.executable} -c "import os; '
            "open('calls', 'a').write(str(len(os.listdir('store'))) + ' ')\"",
            "deps": ["store"],
            "outs": [{"calls": {"cache": False, "persist": True}}],
        },
    }
    (tmp_path / "dvc.yaml").write_text(yaml.safe_dump({"stages": stages}))
    (tmp_path / "want").write_text("a b c")
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}

    def dvc(*args: str) -> None:
        subprocess.run(
            [sys.executable, "-m", "dvc", *args],
            cwd=tmp_path,
            env=env,
            check=True,
            capture_output=True,
        )

    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    dvc("init", "-q")
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "a").write_text("a")  # a store stopped after one job...
    dvc("commit", "-f", "runs")  # ...and committed as it was: DVC's lock says "done"
    dvc("repro", "-q")
    assert sorted(p.name for p in (tmp_path / "store").iterdir()) == ["a", "b", "c"]
    dvc("repro", "-q")  # nothing left: the runs stage is called, the notebook is not
    assert (tmp_path / "calls").read_text() == "3 "


def test_a_notebook_on_its_own_reads_the_pipelines_store_and_runs_only_what_it_lacks(
    tmp_path, monkeypatch, capsys
):
    """Opened on its own (no ``runs_dir``), a notebook reads the runs stage's store of its
    profile, pulled when absent, and runs only the jobs it lacks, priced, into the cache;
    nothing when the store has them all (the default profile's published runs), every job
    under MEMRL_RECOMPUTE=1 (nbval: `verify --cached` then has them all to compare)."""
    from memrl import estimate

    specs = [JobSpec("toy_jobs:square", {"x": i}, label=f"square {i}") for i in range(4)]
    published = RunStore(tmp_path / "pipeline")

    class Toy:  # a family's shape: its grid, its stores
        name = "toy"

        def grid(self, cfg):
            return specs

        def runs_dir(self, profile):
            return str(published.root)  # absolute: repo_root() / it is it

        def preflight(self, cfg):
            pass

    pulls = []

    def pull(fam, profile):  # the published store: the first two jobs
        pulls.append(profile)
        for s in specs[:2]:
            published.save(s, {"x": s.kwargs["x"], "y": -1}, 1.0)
        return ""

    class Priced:
        def __init__(self, family, profile, todo, workers):
            self.todo = todo

        def summary(self):
            return f"toy: {len(self.todo)} of {len(self.todo)} jobs to run, ~9 core-s (priced)"

    monkeypatch.setenv("MEMRL_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(runner.RECOMPUTE, raising=False)
    monkeypatch.setattr(runner, "pull_published", pull)
    monkeypatch.setattr(estimate, "estimate_family", Priced)
    cache = RunStore(tmp_path / "cache" / "runs" / "toy" / "default")

    runs = runner.own_runs(Toy(), None, "default", workers=1)
    assert pulls == ["default"] and [r["y"] for r in runs] == [-1, -1, 4, 9]  # 2 read, 2 run
    assert sorted(cache.keys()) == sorted(s.key for s in specs[2:])  # the store untouched
    assert len(published.keys()) == 2
    out = capsys.readouterr().out
    assert "2 of 4 jobs read from the pipeline's store" in out and "2 jobs to run here" in out
    runner.own_runs(Toy(), None, "default", workers=1)  # nothing left: no job, no price
    out = capsys.readouterr().out
    assert "2 from this machine's cache" in out and "to run" not in out and pulls == ["default"]
    monkeypatch.setenv(runner.RECOMPUTE, "1")
    assert [r["y"] for r in runner.own_runs(Toy(), None, "default", workers=1)] == [0, 1, 4, 9]
    assert len(cache.keys()) == 4


def test_under_papermill_the_price_and_progress_reach_the_terminal(tmp_path):
    """papermill shows a cell counter only; the executor's bar and a notebook's price line
    also go to the terminal that started the kernel (ipykernel keeps its stderr there)."""
    import nbformat

    here, store = str(Path(__file__).parent), str(tmp_path / "store")
    code = (
        f"import sys; sys.path.insert(0, {here!r})\n"
        "import memrl\n"
        "from memrl.executors import execute, say\n"
        "from memrl.jobs import JobSpec\n"
        "from memrl.runs import RunStore\n"
        "say('toy: 3 jobs to run here, ~1 core-s')\n"
        "specs = [JobSpec('toy_jobs:square', dict(x=i)) for i in range(3)]\n"
        f"execute(specs, RunStore({store!r}), workers=1, desc='toybar')\n"
    )
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(code)]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, tmp_path / "in.ipynb")
    papermill = Path(sys.executable).with_name("papermill")
    done = subprocess.run(
        [
            str(papermill),
            str(tmp_path / "in.ipynb"),
            str(tmp_path / "out.ipynb"),
            "--no-progress-bar",
        ],
        # ipykernel leaves fd 2 alone within pytest: a kernel as a user's papermill starts it
        env={k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
        | {"MEMRL_PROGRESS": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    terminal = done.stdout + done.stderr
    assert "toy: 3 jobs to run here" in terminal and "toybar: 100%" in terminal
