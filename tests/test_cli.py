"""``python -m memrl``: one job from the command line, with validated overrides."""

from __future__ import annotations

import json

import pytest

from memrl.cli import family_params, main, overrides
from memrl.config import ConfigError


def test_overrides_read_yaml_values():
    assert overrides(["rsac.learning_rate=3e-4", "seeds=3", "tmaze.lengths=[2, 4]"]) == {
        "rsac.learning_rate": 3e-4,
        "seeds": 3,
        "tmaze.lengths": [2, 4],
    }
    with pytest.raises(SystemExit):
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
    with pytest.raises(SystemExit, match="matches no job"):
        main(["run", "recurrent_off_policy", "XYZ", "--profile", "smoke"])
    with pytest.raises(SystemExit, match="several"):
        main(["run", "recurrent_off_policy", "SACD-GRU", "--profile", "smoke"])
    with pytest.raises(SystemExit, match="no seed 7"):
        main(
            [
                "run",
                "recurrent_off_policy",
                "SACD-GRU T-Maze L=2",
                "--profile",
                "smoke",
                "--seed",
                "7",
            ]
        )


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
    with pytest.raises(SystemExit, match="several"):
        select(specs, "rsac pendulum", 0)
