"""The cost estimate: prices jobs not yet stored from stored runs' seconds (no training)."""

from __future__ import annotations

import pytest

from memrl.__main__ import main
from memrl.estimate import FamilyEstimate, job_group, packed_wall, predict, rates, render
from memrl.jobs import JobSpec, RunStore


def spec(label: str, cost: float, steps: int) -> JobSpec:
    return JobSpec("tests.fake:job", {"label": label, "steps": steps}, cost, label=label)


def test_job_group_drops_seed_and_run() -> None:
    assert job_group("RSAC-LSTM · Pendulum-V · seed 3") == "RSAC-LSTM · Pendulum-V"
    assert job_group("REMEMBERER rlem · run 2") == "REMEMBERER rlem"
    assert job_group("FFM vs GRU timing") == "FFM vs GRU timing"


def test_packed_wall_is_longest_first_on_free_workers() -> None:
    assert packed_wall([], 2) == 0
    assert packed_wall([3, 3, 2, 2, 2], 2) == 7  # {3, 2, 2} and {3, 2}
    assert packed_wall([10, 1, 1, 1], 2) == 10
    assert packed_wall([5, 5], 1) == 10
    with pytest.raises(ValueError):
        packed_wall([1], 0)


def test_a_changed_budget_is_priced_from_the_old_runs(tmp_path) -> None:
    store = RunStore(tmp_path / "runs")
    old = [spec(f"RSAC · P · seed {s}", cost=0.02 * 6000, steps=6000) for s in range(2)]
    for s, seconds in zip(old, (100.0, 140.0), strict=True):
        store.save(s, {"x": 1}, seconds)
    new = [spec(f"RSAC · P · seed {s}", cost=0.02 * 18000, steps=18000) for s in range(2)]
    cal = [("", rates(store.records(old)))]
    preds = predict([*new, old[0]], store, cal)
    assert [p.basis for p in preds] == ["group", "group", "stored"]
    assert preds[0].seconds == pytest.approx(3 * 120.0)  # median rate x the tripled cost
    assert preds[2].seconds == 0.0
    fresh = predict([old[0]], store, cal, fresh=True)[0]
    assert (fresh.basis, fresh.seconds) == ("measured", 100.0)


def test_unmeasured_groups_fall_back_to_other_profiles_then_the_family(tmp_path) -> None:
    store = RunStore(tmp_path / "empty")
    a, b = spec("A · seed 0", 10, 1), spec("B · seed 0", 10, 2)
    cal = [("", {}), ("smoke", {"A": [2.0]})]
    pa, pb = predict([a, b], store, cal)
    assert (pa.basis, pa.seconds) == ("group, smoke", 20.0)
    assert (pb.basis, pb.seconds) == ("family", 20.0)  # the family's median rate
    summary = FamilyEstimate("fam", 1, [pa, pb]).summary()
    assert "1 from another profile's runs" in summary and "1 roughly" in summary
    (pu,) = predict([b], store, [("", {})])
    assert (pu.basis, pu.seconds) == ("unknown", None)


def test_summary_and_render_name_what_is_left_and_how_it_was_priced(tmp_path) -> None:
    store = RunStore(tmp_path / "runs")
    a, b = spec("A · seed 0", 60, 1), spec("B · seed 0", 60, 2)
    preds = predict([a, b], store, [("", {"A": [1.0]})])
    text = render([FamilyEstimate("fam", 2, preds)], "default")
    assert "fam: 2 of 2 jobs to run, ~120 core-s, ~1.0 min on 2 workers" in text
    assert "1 roughly, from the family's median rate" in text
    assert "total: 120 core-s" in text
    store.save(a, {"x": 1}, 5.0)
    store.save(b, {"x": 1}, 5.0)
    done = FamilyEstimate("fam", 2, predict([a, b], store, [("", {})]))
    assert done.summary() == "fam: all 2 jobs already stored"
    unpriced = FamilyEstimate("fam", 2, predict([spec("C · seed 0", 1, 3)], store, [("", {})]))
    assert "1 not priced: no measured run" in unpriced.summary()


def test_cli_prices_the_real_grid_and_rejects_bad_input(capsys) -> None:
    assert main(["estimate", "experience_replay", "--profile", "smoke"]) == 0
    out = capsys.readouterr().out
    assert "experience_replay:" in out and "total:" in out
    assert main(["estimate", "nope"]) == 2
    assert main(["estimate", "--set", "seeds=3"]) == 2  # --set needs one family
    assert main(["estimate", "experience_replay", "--set", "seeds=zero"]) == 2
