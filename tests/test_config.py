import pytest
import yaml

from memrl.config import ConfigError, apply_overrides, read_params
from memrl.families import NAMES, load_family, load_profile, validate_all
from memrl.runtime import repo_root


def test_repo_params_validate_for_every_profile():
    validate_all()
    smoke = load_family("experience_replay", "smoke")
    default = load_family("experience_replay", "default")
    assert smoke.seeds == 2 and default.seeds >= 5
    # overrides deep-merge: smoke keeps default's other keys
    assert smoke.per_dqn.dqn == default.per_dqn.dqn
    assert smoke.per_dqn.total_timesteps < default.per_dqn.total_timesteps


def test_unknown_profile_and_family():
    with pytest.raises(ConfigError, match="unknown profile 'fast'"):
        load_family("experience_replay", "fast")
    with pytest.raises(ConfigError, match="unknown family 'nope'"):
        load_family("nope", "smoke")


def test_every_family_in_params_has_a_schema_module_and_stages():
    """A family is a ``memrl/families/<family>/params.py`` schema, a params.yaml section and
    two DVC stages (its runs, then its notebook)."""
    raw = read_params()
    sections = {k for k in raw if k != "runtime"}
    assert set(NAMES) == sections
    stages = yaml.safe_load((repo_root() / "dvc.yaml").read_text())["stages"]
    for fam in NAMES:
        assert f"src/memrl/families/{fam}/params.py" in stages[f"runs_{fam}"]["deps"]
        assert f"src/memrl/families/{fam}/claims.py" in stages[fam]["deps"]


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda r: r["experience_replay"]["default"].update(seeds="5"), "seeds"),
        (lambda r: r["experience_replay"]["default"].update(seeds=1), "seeds"),
        (
            lambda r: r["experience_replay"]["default"]["per_dqn"].update(total_timesteps=0),
            "per_dqn.total_timesteps",
        ),
        (lambda r: r["experience_replay"]["default"]["her"].update(n_bits=[10, -3]), "her.n_bits"),
        (lambda r: r["experience_replay"]["default"]["rae"].update(typo_key=3), "typo_key"),
        (
            lambda r: r["experience_replay"]["default"]["her"].update(
                goal_selection_strategy="best"
            ),
            "goal_selection_strategy",
        ),
        (
            lambda r: r["experience_replay"]["smoke"]["per_dqn"].update(total_timesteps=500),
            "learning_starts",
        ),
        (lambda r: r.update(profile="smoke"), "names a profile"),  # chosen per run, not here
        (lambda r: r.update(experience_replays={}), "unknown top-level keys"),
        (
            lambda r: r["experience_replay"]["default"]["rae"].update(env_id="Pendulum-v9"),
            "unknown gymnasium env 'Pendulum-v9'",
        ),
        (lambda r: r["experience_replay"].update(fast={}), "unknown profile keys"),
    ],
)
def test_bad_values_fail_before_training(params_with, mutate, message):
    path = params_with(mutate)
    with pytest.raises(ConfigError, match=message):
        validate_all(path)


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_family("experience_replay", "smoke", tmp_path / "none.yaml")


def test_every_failing_family_is_named_at_once(params_with):
    def two_bad(r):
        r["experience_replay"]["smoke"].update(seeds=0)
        r["episodic_control"]["smoke"].update(seeds="two")

    path = params_with(two_bad)
    with pytest.raises(ConfigError) as err:
        load_profile("smoke", path)
    assert "'experience_replay'" in str(err.value) and "'episodic_control'" in str(err.value)


def test_overrides_take_dotted_or_nested_keys_and_list_indices():
    base = {
        "seeds": 5,
        "per_dqn": {"total_timesteps": 100, "dqn": {"gamma": 0.99}},
        "envs": [{"steps": 1}, {"steps": 2}],
    }
    out = apply_overrides(
        base,
        {
            "seeds": 3,
            "per_dqn.dqn.gamma": 0.9,
            "envs.1.steps": 7,
            "per_dqn": {"total_timesteps": 50},
        },
    )
    assert out == {
        "seeds": 3,
        "per_dqn": {"total_timesteps": 50, "dqn": {"gamma": 0.9}},
        "envs": [{"steps": 1}, {"steps": 7}],
    }
    assert base["per_dqn"]["dqn"]["gamma"] == 0.99  # the base is not changed
    with pytest.raises(ConfigError, match="envs has 2 items"):
        apply_overrides(base, {"envs.5.steps": 1})
    with pytest.raises(ConfigError, match="seeds is a value"):
        apply_overrides(base, {"seeds.x": 1})


def test_overrides_are_validated_like_params_yaml():
    cfg = load_family(
        "experience_replay", "smoke", overrides={"seeds": 3, "per_dqn.total_timesteps": 20000}
    )
    assert cfg.seeds == 3 and cfg.per_dqn.total_timesteps == 20000
    assert load_family("experience_replay", "smoke", overrides="{seeds: 4}").seeds == 4  # text
    with pytest.raises(ConfigError, match=r"(?s)smoke \+ overrides.*per_dqn.typo"):
        load_family("experience_replay", "smoke", overrides={"per_dqn.typo": 1})
    with pytest.raises(ConfigError, match="experience_replay.seeds"):
        load_family("experience_replay", "smoke", overrides={"seeds": "many"})
    with pytest.raises(ConfigError, match="mapping"):
        load_family("experience_replay", "smoke", overrides="[1, 2]")


def test_a_wrong_value_reads_as_one_line_with_its_fix():
    """An unknown key names the known one it resembles; a value outside a union (an integer
    or 'auto') is one line naming both, not pydantic's branch-by-branch internals."""
    with pytest.raises(ConfigError) as typo:
        load_family("experience_replay", "default", overrides={"gama": 0.9})
    assert "experience_replay.gama: Extra inputs are not permitted; did you mean 'gamma'?" in str(
        typo.value
    )
    from pydantic import ValidationError

    from memrl.config import _format_errors
    from memrl.schema import RuntimeParams

    with pytest.raises(ValidationError) as bad:
        RuntimeParams.model_validate({"workers": "lots"})
    text = _format_errors("runtime", "-", bad.value, RuntimeParams)
    assert text.splitlines()[1:] == [
        "  runtime.workers: Input should be a valid integer, or 'auto' (got 'lots')"
    ]


def test_a_yaml_error_names_the_line_that_opened_it(tmp_path):
    """A bracket left open on line 4 is noticed on line 5: the message names both."""
    path = tmp_path / "params.yaml"
    path.write_text("runtime:\n  a: 1\nx:\n  seeds: [1, 2\n  other: 3\n")
    with pytest.raises(ConfigError, match=r"params.yaml:5:.*opened at line 4\); fix line 4 or 5"):
        read_params(path, ("x",))


def test_memrl_repro_reads_params_yaml_once(monkeypatch, capsys):
    """Every layer before DVC starts (the CLI, preflight, the price, the targets) takes the
    same parse: one read of params.yaml per process (it was 15)."""
    from memrl import cli, config, pipeline

    class Done:  # DVC, finished at once: the count is what happened before it
        pid, returncode = 0, 0

        def __init__(self, *args, **kwargs) -> None:
            pass

        def poll(self) -> int:
            return 0

    monkeypatch.setattr(pipeline.subprocess, "Popen", Done)
    monkeypatch.setattr(pipeline.signal, "signal", lambda *a: None)
    config._parse.cache_clear()
    assert cli.main(["repro", "--profile", "smoke"]) == 0
    assert config._parse.cache_info().misses == 1
    assert config._parse.cache_info().hits >= 5  # the layers that asked again


def test_a_wrong_value_in_params_yaml_names_its_line(tmp_path):
    """A wrong type names the key and the line it was written on, in the profile's block
    where it was set there; a renamed key is one line ("did you mean"), with neither its
    new name's "Field required" nor the section it sits in dumped."""
    from memrl.families import load_family
    from memrl.runtime import repo_root

    lines = (repo_root() / "params.yaml").read_text().splitlines()
    at = next(i for i, x in enumerate(lines) if x.strip().startswith("p_forward:"))
    renamed = next(i for i, x in enumerate(lines) if x.strip().startswith("eval_every:"))
    assert renamed > at  # both in experience replay's q_replay block
    lines[at] = lines[at].replace("p_forward:", "p_forward: high #")
    lines[renamed] = lines[renamed].replace("eval_every:", "eval_evry:")
    path = tmp_path / "params.yaml"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError) as err:
        load_family("experience_replay", "smoke", path)
    text = str(err.value)
    assert f"experience_replay.q_replay.p_forward (params.yaml:{at + 1}): Input should be" in text
    assert (
        f"experience_replay.q_replay.eval_evry (params.yaml:{renamed + 1}): Extra inputs are "
        "not permitted; did you mean 'eval_every'? ('eval_every' is required and missing)"
    ) in text
    assert "Field required" not in text and "{" not in text  # no section dumped
