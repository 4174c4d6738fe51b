"""``python -m memrl``: one job from the command line, with validated overrides."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from memrl.cli import family_params, main, overrides
from memrl.config import ConfigError


def test_overrides_read_yaml_values():
    assert overrides(["rsac.learning_rate=3e-4", "seeds=3", "tmaze.lengths=[2, 4]"]) == {
        "rsac.learning_rate": 3e-4,
        "seeds": 3,
        "tmaze.lengths": [2, 4],
    }
    with pytest.raises(ValueError, match="key=value"):  # a ConfigError: one line, exit 2
        overrides(["seeds"])


def test_set_is_validated_like_params_yaml():
    cfg = family_params("recurrent_off_policy", "smoke", ["envs.0.total_timesteps=1234", "seeds=3"])
    assert cfg.envs[0].total_timesteps == 1234 and cfg.seeds == 3
    with pytest.raises(ConfigError, match="bogus"):
        family_params("recurrent_off_policy", "smoke", ["rsac.bogus=1"])
    with pytest.raises(ConfigError, match="seeds"):
        family_params("recurrent_off_policy", "smoke", ["seeds=many"])
    with pytest.raises(ConfigError, match="items"):
        family_params("recurrent_off_policy", "smoke", ["envs.99.total_timesteps=1"])


def test_run_stores_one_job_and_reuses_it(tmp_path, capsys):
    args = [
        "run",
        "recurrent_off_policy",
        "SACD-GRU T-Maze L=2",
        "--profile",
        "smoke",
        "--seed",
        "1",
        "--set",
        "tmaze.episodes=4",
        "--store",
        str(tmp_path),
    ]
    assert main(args) == 0
    out = capsys.readouterr().out
    path = out.strip().splitlines()[-1].removeprefix("result: ")
    record = json.loads(open(path).read())
    assert record["spec"]["kwargs"]["seed"] == 1
    assert record["result"]["method"] == "SACD-GRU" and record["result"]["episodes"] == 4
    assert main(args) == 0
    assert "already stored" in capsys.readouterr().out


def test_bad_job_family_or_seed_fail_before_running(capsys):
    assert main(["list", "no_such_family"]) == 2
    assert "unknown family" in capsys.readouterr().err
    for job, seed, words in (
        ("XYZ", 0, "matches no job"),
        ("SACD-GRU", 0, "several"),
        ("SACD-GRU T-Maze L=2", 7, "no seed 7 in this profile; its seeds: [0, 1]"),
    ):
        args = ["run", "recurrent_off_policy", job, "--profile", "smoke", "--seed", str(seed)]
        assert main(args) == 2
        assert words in capsys.readouterr().err


def test_a_job_is_picked_by_whole_words_of_its_label_first():
    """'RSAC-LSTM Pendulum-V' is that job, not also RSAC-LSTM-shared's; parts of words still
    find a job when no label has the whole words."""
    from memrl.cli import select
    from memrl.jobs import JobSpec

    specs = [
        JobSpec("m:f", {"seed": 0}, label=f"{m} · Pendulum-V · seed 0")
        for m in ("RSAC-LSTM", "RSAC-LSTM-shared")
    ]
    assert select(specs, "RSAC-LSTM Pendulum-V", 0) is specs[0]
    assert select(specs, "shared", 0) is specs[1]
    with pytest.raises(LookupError, match="several"):
        select(specs, "rsac pendulum", 0)


def _memrl(*args: str, root=None, **env: str):
    import os
    import subprocess
    import sys

    env = {**os.environ, "MEMRL_PROGRESS": "0", **env}
    if root is not None:
        env["MEMRL_ROOT"] = str(root)
    env.pop("MEMRL_DEBUG", None) if "MEMRL_DEBUG" not in env else None
    return subprocess.run(
        [sys.executable, "-m", "memrl", *args], env=env, capture_output=True, text=True
    )


def _corrupt(tmp_path):
    """A checkout whose smoke run store for experience replay has one corrupt run file."""
    import shutil

    from memrl import families
    from memrl.families import load_family
    from memrl.runtime import repo_root

    root = tmp_path / "corrupt"
    (root / "notebooks").mkdir(parents=True)
    for name in ("params.yaml", "dvc.yaml", "notebooks/experience_replay.ipynb"):
        shutil.copy(repo_root() / name, root / name)
    fam = families.get("experience_replay")
    store = root / fam.runs_dir("smoke")
    store.mkdir(parents=True)
    fingerprint = families.params_fingerprint(load_family("experience_replay", "smoke"))
    manifest = {"profile": "smoke", "params": fingerprint, "jobs": [{"key": "k", "label": "x"}]}
    (store / "manifest.json").write_text(json.dumps(manifest))
    (store / "k.json").write_text("{broken")
    return root


def test_user_errors_are_one_line_with_their_fix_and_exit_2(tmp_path):
    """A YAML syntax error, an unknown family, missing data, a site without results, a
    served LLM that is down, a corrupt run file before the notebook stage: one line naming
    the fix, no traceback; MEMRL_DEBUG=1 shows the traceback."""
    import shutil

    from memrl.runtime import repo_root

    for name in ("params.yaml", "dvc.yaml"):
        shutil.copy(repo_root() / name, tmp_path / name)  # a checkout without data/
    cases = [
        (("runs", "nonsense", "--profile", "smoke"), None, "unknown family 'nonsense'"),
        (
            (
                "run",
                "experience_replay",
                "RaE (all prior data)",
                "--profile",
                "smoke",
                "--store",
                str(tmp_path / "s"),
            ),
            tmp_path,
            "make data",
        ),
    ]
    broken = tmp_path / "broken"
    broken.mkdir()
    shutil.copy(tmp_path / "dvc.yaml", broken / "dvc.yaml")
    (broken / "params.yaml").write_text((tmp_path / "params.yaml").read_text() + "x: [1\n")
    cases.append((("list", "experience_replay"), broken, "params.yaml:"))
    # the results site of a profile with no results
    cases.append(
        (("site", str(tmp_path / "results" / "paper")), tmp_path, "make repro PROFILE=paper")
    )
    # one job on a served LLM when nothing listens at the URL
    from memrl.llm.serve import free_port

    down = f"http://127.0.0.1:{free_port()}"
    job = ("run", "llm_memory_rl", "REMEMBERER static · run 0", "--profile", "smoke")
    served = ("--set", "llm.backend=server", "--set", f"llm.url={down}", "--set", "llm.retries=0")
    cases.append(((*job, *served, "--store", str(tmp_path / "llm")), None, "did not answer"))
    # a run file corrupted after the runs stage, then the notebook stage
    cases.append(
        (("notebook", "experience_replay", "--profile", "smoke"), _corrupt(tmp_path), "runs")
    )
    with ThreadPoolExecutor(2) as pool:  # each case a fresh process, two at a time
        outs = list(pool.map(lambda case: _memrl(*case[0], root=case[1]), cases))
    for (*_, words), out in zip(cases, outs, strict=True):
        lines = [x for x in out.stderr.splitlines() if x.startswith("memrl:")]
        assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr[-2000:]
        assert len(lines) == 1 and words in lines[0], out.stderr[-2000:]
    debug = _memrl("runs", "nonsense", "--profile", "smoke", MEMRL_DEBUG="1")
    assert debug.returncode != 0 and "Traceback" in debug.stderr


def test_other_libraries_bars_are_off_and_memrls_own_are_not():
    """transformers' GGUF bar (a plain tqdm) printed in every LLM job; memrl's bars pass
    ``disable`` themselves and follow MEMRL_PROGRESS only. tqdm reads TQDM_* when it loads:
    checked in a process of its own, as a stage or a job worker starts."""
    import subprocess
    import sys

    code = (
        "import io, memrl.cli; from tqdm.auto import tqdm\n"
        "theirs, ours = io.StringIO(), io.StringIO()\n"
        "for _ in tqdm(range(3), desc='theirs', file=theirs): pass\n"
        "for _ in tqdm(range(3), desc='ours', file=ours, disable=False): pass\n"
        "print(repr(theirs.getvalue()), 'ours' in ours.getvalue())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["''", "True"]


def test_a_reader_that_leaves_early_is_no_error():
    """`memrl list ... | head -1`: the pipe closes early; no traceback, exit 0."""
    import subprocess
    import sys

    out = subprocess.run(
        f"{sys.executable} -m memrl list recurrent_off_policy --profile smoke | head -1",
        shell=True,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.startswith("recurrent_off_policy:") and "Traceback" not in out.stderr


def test_report_and_site_take_a_profile_like_every_verb(capsys):
    assert main(["report", "--profile", "nope"]) == 2
    assert "unknown profile 'nope'" in capsys.readouterr().err


def test_an_unknown_job_names_the_nearest_labels_not_all(capsys):
    """'Cliffwalk n=3 uniformm' (a typo) lists the labels nearest it, not all 30."""
    args = ["run", "experience_replay", "Cliffwalk n=3 uniformm", "--profile", "smoke"]
    assert main(args) == 2
    err = capsys.readouterr().err
    listed = [x.strip() for x in err.splitlines() if x.startswith("  ")]
    assert "nearest" in err and listed[0] == "Cliffwalk n=3 uniform" and len(listed) <= 5
    assert "`python -m memrl list experience_replay` lists all 30" in err


@pytest.mark.parametrize("seed", ["-1", "x"])
def test_a_bad_seed_is_one_memrl_line_not_argparses_usage(seed, capsys):
    with pytest.raises(SystemExit) as done:
        main(["run", "experience_replay", "PER", "--profile", "smoke", "--seed", seed])
    err = capsys.readouterr().err
    assert done.value.code == 2 and "usage:" not in err and len(err.strip().splitlines()) == 1
    assert err.startswith("memrl: run: argument --seed: a seed is") and "seeds=0" not in err


def test_a_seed_above_the_profiles_says_how_to_run_it(capsys):
    assert main(["run", "experience_replay", "PER", "--profile", "smoke", "--seed", "4"]) == 2
    assert "its seeds: [0, 1] (`--set seeds=5` runs seeds 0 to 4)" in capsys.readouterr().err


def test_list_prices_every_job_group(capsys):
    assert main(["list", "experience_replay", "--profile", "smoke"]) == 0
    lines = capsys.readouterr().out.splitlines()
    groups = [x for x in lines if x.startswith("  ")]
    assert groups and all(" x ~" in x and x.endswith("core-s a job") for x in groups)
    assert lines[-1].startswith("total ~") and "core-s" in lines[-1]


def test_run_announces_its_length_and_price_and_shows_its_progress(capsys, monkeypatch):
    """`run` says the job's budget and price before it starts; its bar measures CPU time
    against that price: a percentage, the price, and the share of the budget ("~")."""
    import threading
    import time

    from memrl import families, onejob

    fam = families.get("recurrent_off_policy")
    specs = fam.grid(families.load_family(fam.name, "smoke"))
    spec = onejob.select(specs, "RSAC-LSTM Pendulum-V", 0)
    assert onejob.budget(spec) == ("env steps", spec.kwargs["total_timesteps"])
    price, source = onejob.price_of(fam.name, "smoke", spec)
    assert price is not None and price > 0 and ("priced" in source or "took" in source)
    monkeypatch.setenv("MEMRL_PROGRESS", "1")
    stop = threading.Event()
    bar = threading.Thread(target=onejob._progress, args=(spec.name, 4.0, ("env steps", 600), stop))
    bar.start()
    end = time.process_time() + 1.5
    while time.process_time() < end:  # burn CPU: the bar follows this process's CPU time
        pass
    time.sleep(1.2)
    stop.set()
    bar.join()
    err = capsys.readouterr().err
    assert "/4 core-s" in err and "%" in err and "of 600 env steps" in err


def test_a_job_past_its_price_keeps_its_bar(capsys, monkeypatch):
    """A job that outruns its price (a control priced ~0 from a smaller profile's runs) kept
    a bar past its total, which tqdm then failed to format: the job's thread crashed."""
    import threading
    import time

    from memrl import onejob

    monkeypatch.setenv("MEMRL_PROGRESS", "1")
    errors = []
    monkeypatch.setattr(threading, "excepthook", lambda a: errors.append(a.exc_value))
    stop = threading.Event()
    bar = threading.Thread(target=onejob._progress, args=("job", 0.2, ("env steps", 10), stop))
    bar.start()
    end = time.process_time() + 2.5  # 2.5 core-s against a price of 1 (the bar's minimum)
    while time.process_time() < end:
        pass
    stop.set()
    bar.join()
    assert errors == []
    assert "100%" in capsys.readouterr().err


def test_design_on_a_fresh_clone_pulls_or_says_what_it_needs(monkeypatch, tmp_path, capsys):
    """No stored run to take the jobs' shapes from (a fresh clone whose pull failed): each
    family says so and names the `dvc pull` that gives them; exit 1, not "checked nothing, 0"."""
    from memrl import runner

    pulled = []
    monkeypatch.setattr(runner, "repo_root", lambda: tmp_path)  # no store here
    monkeypatch.setattr(
        runner, "pull_published", lambda fam, profile: pulled.append(fam.name) or "no remote"
    )
    assert main(["design", "experience_replay"]) == 1
    out, err = capsys.readouterr()
    assert pulled == ["experience_replay"]
    assert "design not checked" in out and "`dvc pull runs_experience_replay`" in out
    assert "memrl: design not checked for experience_replay" in err


def test_verify_cached_names_what_fills_the_cache(monkeypatch, tmp_path, capsys):
    """After `make repro PROFILE=smoke` the cache --cached reads is empty: the message names
    what fills it (the notebooks computing on their own: `make nbval`), not `make repro`."""
    from memrl import families, verify

    fam = families.get("experience_replay")
    specs = fam.grid(families.load_family(fam.name, "smoke"))
    rec = {"key": specs[0].key, "spec": specs[0].to_json(), "result": {}}
    monkeypatch.setattr(
        verify, "stored", lambda family, profile: {verify.identity(rec["spec"]): rec}
    )
    monkeypatch.setenv("MEMRL_CACHE", str(tmp_path))  # nothing computed here
    assert main(["verify", "--profile", "smoke", "--cached", "--family", fam.name]) == 2
    out = capsys.readouterr().out
    assert "make nbval" in out and ".cache/runs/experience_replay/smoke/" in out
    assert "`make repro PROFILE=smoke` makes them" not in out
