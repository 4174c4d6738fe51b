"""The design check before a family's runs (memrl.design_check): phantom runs copied from
the store, the comparisons no outcome could decide named, an error for the profiles that
decide only."""

import numpy as np
import pandas as pd
import pytest
from test_verdict_rule import claim_of

from memrl import design_check, families, runner
from memrl.families import load_family
from memrl.jobs import JobSpec
from memrl.runs import RunStore
from memrl.stats.aggregate import reference
from memrl.stats.bootstrap import arm
from memrl.stats.claims import ClaimResult, Comparison


def toy_result(n_a: int, n_b: int) -> ClaimResult:
    """A with ``n_a`` seeds against B with ``n_b`` and against the constant 0."""
    rng = np.random.default_rng(0)
    est = {
        "A": arm(rng.normal(1, 1, n_a), "SIM", "A"),
        "B": arm(rng.normal(0, 1, n_b), "SIM", "B"),
        "zero": reference(0.0),
    }
    return claim_of(est, [Comparison("A", "B"), Comparison("A", "zero")], "a toy")


def test_a_comparison_no_outcome_could_decide_is_named_with_the_seeds_that_could():
    # 3 seeds against 3 reach p = 1/20 at best; 5 against a constant 1/32 (> 2.5% each)
    assert design_check.undecidable(toy_result(3, 3)) == [
        "SIM: A > B (~4 seeds per arm could)",
        "SIM: A > zero (~6 seeds per arm could)",
    ]
    assert design_check.undecidable(toy_result(5, 4)) == ["SIM: A > zero (~6 seeds per arm could)"]
    assert design_check.undecidable(toy_result(6, 4)) == []


def _spec(group: str, seed: int) -> JobSpec:
    return JobSpec("toy_jobs:square", {"x": group, "seed": seed}, label=f"{group} · seed {seed}")


def test_phantom_runs_copy_another_seed_of_the_group_and_name_groups_never_run(tmp_path):
    store = RunStore(tmp_path)
    store.save(_spec("A", 0), {"seed": 0, "value": 1.5}, 1.0)
    store.save(_spec("A", 1), {"seed": 1, "value": 2.5}, 1.0)
    specs = [_spec("A", s) for s in range(4)] + [_spec("BB", 0)]
    records, missing = design_check.phantom_records(specs, store)
    assert [r["seed"] for r in records] == [0, 1, 2, 3]
    assert [r["value"] for r in records[:2]] == [1.5, 2.5]  # stored jobs as they are
    assert records[2]["value"] == records[3]["value"] in (1.5, 2.5)  # a copy, reseeded
    assert missing == ["BB"]


@pytest.fixture
def judged_as(monkeypatch):
    def use(result: ClaimResult) -> None:
        monkeypatch.setattr(design_check, "judged", lambda *a: [result])

    return use


def test_the_check_fails_before_the_runs_of_a_profile_that_decides(tmp_path, judged_as):
    fam = families.get("experience_replay")
    cfg = load_family(fam.name, "smoke")
    store = RunStore(tmp_path)
    spec = _spec("A", 0)
    store.save(spec, {"seed": 0}, 1.0)
    judged_as(toy_result(3, 3))
    with pytest.raises(design_check.DesignError, match=r"2 comparisons cannot decide(.|\n)*A > B"):
        design_check.check(fam, cfg, "default", [spec, _spec("A", 1)], store)
    # smoke's two seeds test the wiring: not checked, and said so
    assert "not checked" in design_check.check(fam, cfg, "smoke", [spec], store)
    # a job group never run gives no shape to copy: not checked, and said so
    line = design_check.check(fam, cfg, "default", [spec, _spec("C", 0)], store)
    assert "not checked" in line and "C" in line
    judged_as(toy_result(6, 4))
    assert "can decide" in design_check.check(fam, cfg, "default", [spec], store)


def test_the_check_builds_a_familys_claims_from_its_phantom_runs(tmp_path):
    """The whole path on a real family: the smoke grid's stored shapes (ER, fabricated
    here), the default's 10 seeds decide, 3 seeds name the comparisons they cannot."""
    from test_claims import er_runs

    fam = families.get("experience_replay")
    cfg = load_family(fam.name, "default").model_copy(update={"bootstrap_reps": 200})
    runs = er_runs(cfg, True)
    records = [{"kind": kind, **row} for kind, df in runs.items() for row in df.to_dict("records")]
    paper = load_family(fam.name, "paper")
    assert design_check.faults(fam, cfg, records, paper) == []
    three = [r for r in records if r["seed"] < 3]
    faults = design_check.faults(fam, cfg.model_copy(update={"seeds": 3}), three, paper)
    assert any(f.startswith("ER-3: DQN+PER > DQN") for f in faults), faults


@pytest.mark.parametrize("profile", design_check.DECIDING)
def test_the_committed_profiles_can_decide_every_comparison(profile):
    """Before anything runs, on each family's fabricated runs of the profile's grid (their
    seeds and items; the values do not enter the design): no comparison of a profile meant
    to decide is one no outcome could decide. (The runs stage checks the same on the stored
    runs' shapes, which also cover the timing, card and truncation studies.)"""
    from test_claims import ec_runs, er_runs, llm_runs
    from test_recurrent_off_policy import fake_runs

    def chance(cfg) -> pd.DataFrame:  # RO-7 against chance's runs, as the grid's floors
        rng = np.random.default_rng(1)
        return pd.DataFrame(
            [
                {"floor": "chance", "env": f"T-Maze L={n}", "seed": s, "episode_returns": e}
                for n in cfg.tmaze.lengths
                for s in range(cfg.seeds)
                for e in [rng.integers(0, 2, cfg.tmaze.eval_episodes)]
            ]
        )

    build = {
        "recurrent_off_policy": lambda cfg: fake_runs(cfg, -150.0, -1200.0),
        "episodic_control": lambda cfg: ec_runs(cfg, True),
        "experience_replay": lambda cfg: er_runs(cfg, True),
        "llm_memory_rl": lambda cfg: llm_runs(cfg, True),
    }
    faults = []
    for fam in families.FAMILIES:
        cfg = load_family(fam.name, profile).model_copy(update={"bootstrap_reps": 200})
        claims = fam.module("claims").claims
        extra = {}
        if fam.name == "recurrent_off_policy":
            extra = {"floors": chance(cfg), "paper": load_family(fam.name, "paper")}
        for r in claims(cfg, build[fam.name](cfg), **extra):
            faults += design_check.undecidable(r)
    assert not faults, faults


def test_the_design_verb_names_what_cannot_decide_and_exits_1(monkeypatch, capsys):
    """`python -m memrl design`: the runs stage's check on its own, with --set for one
    family; exit 1 naming the comparisons, 2 for bad input, 0 when all can decide."""
    from memrl.cli import main

    monkeypatch.setattr(design_check, "phantom_records", lambda specs, store: ([], []))
    monkeypatch.setattr(runner, "pull_published", lambda fam, profile: "")  # no dvc pull
    seeds = {}

    def judged(fam, cfg, records, paper):
        seeds["seen"] = cfg.seeds  # the --set value reaches the check
        return [toy_result(cfg.seeds, cfg.seeds)]

    monkeypatch.setattr(design_check, "judged", judged)
    assert main(["design", "experience_replay", "--set", "seeds=3"]) == 1
    assert seeds["seen"] == 3 and "SIM: A > B (~4 seeds per arm could)" in capsys.readouterr().err
    assert main(["design", "experience_replay", "--set", "seeds=6"]) == 0
    assert "can decide" in capsys.readouterr().out
    assert main(["design", "experience_replay", "llm_memory_rl", "--set", "seeds=6"]) == 2
    assert main(["design", "--profile", "smoke"]) == 0
    assert capsys.readouterr().out.count("not checked") == len(families.FAMILIES)
