"""The cost estimate: prices jobs not yet stored from stored runs' seconds (no training)."""

from __future__ import annotations

import pytest

from memrl.cli import main
from memrl.estimate import FamilyEstimate, job_group, packed_wall, predict, rates, render
from memrl.jobs import JobSpec
from memrl.runs import RunStore


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
    assert "1 priced from another profile's runs" in summary and "1 priced roughly" in summary
    # nothing was priced from this store's runs: the line says so by not naming them
    assert "stored runs" not in summary
    (pu,) = predict([b], store, [("", {})])
    assert (pu.basis, pu.seconds) == ("unknown", None)


def test_summary_and_render_name_what_is_left_and_how_it_was_priced(tmp_path) -> None:
    store = RunStore(tmp_path / "runs")
    a, b = spec("A · seed 0", 60, 1), spec("B · seed 0", 60, 2)
    preds = predict([a, b], store, [("", {"A": [1.0]})])
    text = render([FamilyEstimate("fam", 2, preds)], "default")
    assert "fam: 2 of 2 jobs to run, ~120 core-s, ~1.0 min on 2 workers" in text
    assert "1 priced from the stored runs' seconds; 1 priced roughly, from the family's" in text
    assert "total: 120 core-s" in text
    store.save(a, {"x": 1}, 5.0)
    store.save(b, {"x": 1}, 5.0)
    done = FamilyEstimate("fam", 2, predict([a, b], store, [("", {})]))
    assert done.summary() == "fam: all 2 jobs already stored"
    unpriced = FamilyEstimate("fam", 2, predict([spec("C · seed 0", 1, 3)], store, [("", {})]))
    assert "1 not priced: no measured run" in unpriced.summary()


def test_published_timings_follow_this_machine_once_it_has_stored_some_groups(tmp_path):
    """A stage stopped part-way: its stored groups ran 2-3x their published rates here, so the
    groups still to run are priced from the published rates times the median ratio."""
    from memrl.estimate import machine_scale

    assert machine_scale({"A": [4.0, 6.0]}, {"B": [1.0]}) is None
    both = machine_scale({"A": [4.0, 6.0], "B": [3.0]}, {"A": [2.0], "B": [1.0], "C": [1.0]})
    assert both is not None and both.factor == 2.75 and "over the 2 groups both price" in both.text
    store = RunStore(tmp_path / "runs")
    a, c = spec("A · seed 0", 10, 1), spec("C · seed 0", 10, 3)
    store.save(a, {"x": 1}, 50.0)  # 5 s per unit where the publishing machine took 2
    scale = machine_scale(rates(store.records([a])), {"A": [2.0], "C": [1.0]})
    assert scale is not None and scale.factor == 2.5
    (pc,) = predict([c], store, [("", {}), ("published", {"C": [1.0 * scale.factor]})])
    assert (pc.basis, pc.seconds) == ("group, published", 25.0)
    text = FamilyEstimate("fam", 1, [pc], scale=scale).summary()
    assert "published timings x 2.50, the ratio of this machine's stored runs" in text
    assert "measured on the machine that published them" not in text


def test_cli_prices_the_real_grid_and_rejects_bad_input(capsys) -> None:
    assert main(["estimate", "experience_replay", "--profile", "smoke"]) == 0
    out = capsys.readouterr().out
    assert "experience_replay:" in out and "total:" in out
    assert main(["estimate", "nope"]) == 2
    assert main(["estimate", "--set", "seeds=3"]) == 2  # --set needs one family
    assert main(["estimate", "experience_replay", "--set", "seeds=zero"]) == 2


def test_published_timings_round_trip_and_never_fail(tmp_path) -> None:
    from memrl.runs import read_timings, write_timings

    store = RunStore(tmp_path / "runs")
    specs = [spec(f"A · seed {s}", 10, s) for s in range(3)] + [spec("B · seed 0", 4, 9)]
    for s, seconds in zip(specs, (10.0, 30.0, 20.0, 2.0), strict=True):
        store.save(s, {"x": 1}, seconds)
    path = tmp_path / "timings.json"
    write_timings(path, store.records(specs))
    assert read_timings(path) == {"A": [2.0], "B": [0.5]}  # median seconds per unit of cost
    assert '"core_seconds": 60.0' in path.read_text() and '"jobs": 3' in path.read_text()
    assert read_timings(tmp_path / "missing.json") == {}
    path.write_text("{not json")
    assert read_timings(path) == {}


def test_the_runs_stage_publishes_timings_that_price_a_fresh_clone(tmp_path, monkeypatch):
    """The runs stage writes timings.json beside the results (kept in git); on a clone whose
    run store is empty, the estimate prices every job from it."""
    from memrl import estimate, families, pipeline, runner
    from memrl.executors import Executed
    from memrl.runs import ISA_FIELD

    def fake_execute(specs, store, *args, **kwargs):  # each job "took" 2 s per unit of cost
        for s in specs:  # on a CPU the run records, as run_spec records it
            store.save(s, {"x": 1, ISA_FIELD: {"cpu": "Intel Xeon (test)"}}, 2.0 * s.cost)
        return Executed(len(specs), ran=len(specs))

    monkeypatch.setattr(pipeline, "repo_root", lambda: tmp_path)
    monkeypatch.setattr(runner, "repo_root", lambda: tmp_path)  # the store: never the real one
    monkeypatch.setattr(runner, "execute", fake_execute)
    monkeypatch.setattr(families.Family, "preflight", lambda self, cfg: None)
    pipeline.run_stage("experience_replay", "smoke")
    fam = families.get("experience_replay")
    assert (tmp_path / fam.timings_path("smoke")).is_file()

    specs = fam.grid(families.load_family(fam.name, "smoke"))
    clone = tmp_path / "clone"  # the timings file only, as git carries it
    (clone / fam.results_dir("smoke")).mkdir(parents=True)
    (tmp_path / fam.timings_path("smoke")).rename(clone / fam.timings_path("smoke"))
    monkeypatch.setattr("memrl.runtime.repo_root", lambda: clone)
    priced = estimate.estimate_family(fam.name, "smoke", specs, workers=2)
    assert {p.basis for p in priced.todo} == {"group, published"}
    assert len(priced.todo) == len(specs)
    assert [p.seconds for p in priced.todo] == pytest.approx([2.0 * s.cost for s in specs])
    # the price names the machine its seconds were measured on
    assert "priced from the published timings on Intel Xeon (test)" in priced.summary()


def test_a_pulled_store_prices_as_the_machine_that_made_it_not_as_this_one(
    monkeypatch, empty_store
):
    """After ``dvc pull`` the store holds another machine's runs: they price like the published
    timings (scaled by --calibrate's ratio, or by this machine's own runs where some groups
    have both), never as this machine's seconds."""
    from memrl import calibrate, estimate, families

    fam = families.get("episodic_control")
    specs = fam.grid(families.load_family(fam.name, "default"))
    groups: dict[str, list] = {}
    for s in specs:
        groups.setdefault(job_group(s.name), []).append(s)
    (a, *_), (b, *_) = list(groups.values())[:2]  # one job of each of two groups

    def record(s, cpu, per_cost):
        return {"spec": s.to_json(), "seconds": per_cost * s.cost, "isa": {"cpu": cpu}}

    pulled = [record(a, "Old CPU", 2.0), record(b, "Old CPU", 3.0)]
    empty_store(pulled)
    monkeypatch.setattr("memrl.isa.cpu_model", lambda: "This CPU")
    todo = [s for s in specs if s.name not in (a.name, b.name)]
    plain = estimate.estimate_family(fam.name, "default", todo, 2)
    timed = calibrate.Calibration.of([1.5, 1.5, 1.5])
    scaled = estimate.estimate_family(fam.name, "default", todo, 2, calibration=timed)
    one = next(i for i, p in enumerate(plain.todo) if job_group(p.spec.name) == job_group(a.name))
    assert plain.todo[one].basis == "group, published"  # not "group": another CPU's runs
    assert plain.todo[one].seconds == pytest.approx(2.0 * plain.todo[one].spec.cost)
    assert scaled.todo[one].seconds == pytest.approx(1.5 * plain.todo[one].seconds)
    assert "the stored runs of another CPU on Old CPU" in scaled.summary()
    assert "x 1.50, this machine's time over the published timings'" in scaled.summary()

    # this machine's own run of group a scales the other CPU's rate of group b
    mine = record(a, "This CPU", 5.0)
    empty_store([*pulled, mine])
    here = estimate.estimate_family(fam.name, "default", todo, 2, calibration=timed)
    assert here.scale is not None and here.scale.factor == pytest.approx(2.5)
    other = next(p for p in here.todo if job_group(p.spec.name) == job_group(b.name))
    assert other.seconds == pytest.approx(2.5 * 3.0 * other.spec.cost)


def test_calibration_scales_the_published_timings_by_this_machines_measured_speed(
    monkeypatch, empty_store
):
    """`memrl estimate --calibrate`: a few smoke jobs priced at >= 2 s each, spread over the
    families, run here; the median of their seconds over the published ones scales every
    price the published timings make (and only those), and the line says so with the range."""
    from memrl import calibrate, estimate, executors, families

    jobs = calibrate.calibration_jobs(4)
    assert len(jobs) == 4 and all(expected >= 2.0 for _, expected in jobs)
    assert len({s.fn.split(".")[2] for s, _ in jobs}) == 4  # one family each

    factors = [1.0, 2.0, 3.0, 1.5]  # this machine's seconds over the published, per job

    def fake_execute(specs, store, *args, **kwargs):
        for s, f, (_, expected) in zip(specs, factors, jobs, strict=True):
            store.save(s, {"x": 1}, f * expected)

    monkeypatch.setattr(executors, "execute", fake_execute)
    measured = calibrate.calibrate(4)
    assert (measured.ratio, measured.jobs, measured.low, measured.high) == (1.75, 4, 1.0, 3.0)

    empty_store()  # a fresh clone
    fam = families.get("episodic_control")
    specs = fam.grid(families.load_family(fam.name, "default"))
    plain = estimate.estimate_family(fam.name, "default", specs, 2, fresh=True)
    scaled = estimate.estimate_family(fam.name, "default", specs, 2, True, calibration=measured)
    assert [p.basis for p in plain.todo] == [p.basis for p in scaled.todo]
    for a, b in zip(plain.todo, scaled.todo, strict=True):
        # on a fresh clone the family's median rate (a group with no timing yet, e.g. EC-3's
        # new radii) is the published timings' too: scaled alike
        by_published = "published" in a.basis or a.basis == "family"
        assert b.seconds == pytest.approx(a.seconds * (1.75 if by_published else 1))
    assert "x 1.75, this machine's time over the published timings'" in scaled.summary()
    assert "(1.00-3.00)" in scaled.summary()


def test_estimate_calibrate_checks_its_input_before_it_runs_anything(
    monkeypatch, capsys, empty_store
):
    from memrl import calibrate

    empty_store()
    ran = []
    monkeypatch.setattr(
        calibrate,
        "calibrate",
        lambda workers: ran.append(workers) or (calibrate.Calibration.of([1.2, 1.25, 1.3])),
    )
    assert main(["estimate", "nonsense", "--calibrate"]) == 2 and not ran
    capsys.readouterr()
    assert main(["estimate", "episodic_control", "--fresh", "--calibrate"]) == 0 and ran
    assert "x 1.25, this machine's time over the published timings'" in capsys.readouterr().out


def test_repro_announces_the_cost_and_an_estimate_never_stops_it(monkeypatch, capsys):
    from memrl import estimate, pipeline
    from memrl.estimate import Prediction

    def priced(family, profile, specs, workers, fresh=False, decision_seconds=None, **kw):
        return FamilyEstimate(family, workers, [Prediction(specs[0], 600.0, "group")])

    monkeypatch.setattr(estimate, "estimate_family", priced)
    pipeline._announce("smoke")
    out = capsys.readouterr().out
    assert out.startswith("memrl: 4 jobs to run for profile smoke: ~2,400 core-s, ~40 min")
    # named stages price only their families' jobs (the runs of the others are not started)
    targets = pipeline.dvc_targets("smoke", ["episodic_control", "runs_experience_replay"])
    names = pipeline.announced_families(targets)
    assert names == ["episodic_control", "experience_replay"]
    pipeline._announce("smoke", names)
    out = capsys.readouterr().out
    assert "2 jobs to run for profile smoke (episodic_control, experience_replay)" in out
    assert pipeline.announced_families(pipeline.dvc_targets("smoke", ["params"])) == []
    for whole in ([], ["report"]):
        targets = pipeline.dvc_targets("smoke", whole)
        assert pipeline.announced_families(targets) == list(pipeline.families.NAMES)

    def broken(*args, **kwargs):
        raise RuntimeError("unreadable store")

    monkeypatch.setattr(estimate, "estimate_family", broken)
    pipeline._announce("smoke")
    assert "no cost estimate (RuntimeError: unreadable store)" in capsys.readouterr().out


def test_a_served_llm_is_priced_by_recorded_decisions_times_measured_seconds(tmp_path):
    """LLM jobs record their decisions; published timings keep decisions per cost; a profile
    on a served model prices each such job as decisions x the seconds one decision took on
    that server, measured when the estimate runs."""
    from memrl.runs import read_timings, write_timings

    store = RunStore(tmp_path / "runs")
    llm = [spec(f"REMEMBERER rlem · run {r}", 10, r) for r in range(2)]
    for s, n in zip(llm, (40, 60), strict=True):
        store.save(s, {"llm": {"backend": "inprocess", "model": "m", "decisions": n}}, 30.0)
    other = spec("no LLM · seed 0", 10, 9)
    store.save(other, {"x": 1}, 5.0)
    path = tmp_path / "timings.json"
    write_timings(path, store.records([*llm, other]))
    counts = read_timings(path, "decisions_per_cost")
    assert counts == {"REMEMBERER rlem": [5.0]}  # median of 4 and 6 decisions per cost
    fresh = RunStore(tmp_path / "fresh")
    cal = [("published", {"REMEMBERER rlem": [3.0], "no LLM": [0.5]})]
    served, plain = predict([llm[0], other], fresh, cal, per_decision=(2.0, counts))
    assert (served.basis, served.seconds) == ("server", 10 * 5.0 * 2.0)
    assert (plain.basis, plain.seconds) == ("group, published", 5.0)
    assert "priced by their recorded LLM decisions" in FamilyEstimate("f", 1, [served]).summary()


def test_every_default_job_is_priced_in_core_seconds() -> None:
    """A job's cost is its expected core-seconds (it orders the queue and prices a job no
    run or published timing covers): none of the default profile's may be absurd."""
    from memrl import families
    from memrl.families import load_family

    for fam in families.FAMILIES:
        for s in fam.module("jobs").grid(load_family(fam.name, "default")):
            assert 0 < s.cost < 24 * 3600, (fam.name, s.label, s.cost)
