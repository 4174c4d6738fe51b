"""``memrl verify``: a hash-chosen sample of stored jobs, rerun in fresh processes, compared
byte for byte (:mod:`memrl.verify`)."""

from __future__ import annotations

import json

from memrl.executors import execute
from memrl.jobs import JobSpec
from memrl.runs import RunStore
from memrl.verify import computed, first_difference, sample, verify


def spec(fn: str, x: int, **kw) -> JobSpec:
    return JobSpec(f"toy_jobs:{fn}", {"x": x}, label=f"{fn} {x}", **kw)


def test_the_sample_is_spread_over_families_and_functions_and_fixed_by_hashes():
    a = [spec("square", i) for i in range(6)] + [spec("noisy", i) for i in range(6)]
    b = [spec("pid", i) for i in range(6)] + [spec("window", 99, alone=True)]
    picked = sample([a, b], 4)
    assert sample([list(reversed(a)), b], 4) == picked  # the order given does not matter
    assert {s.fn.split(":")[1] for s in picked} == {"square", "noisy", "pid"}
    assert not any(s.alone for s in sample([a, b], 20))  # timings are clocks
    assert len(sample([a, b], 20)) == 18


def test_a_difference_names_its_first_field_and_both_values():
    assert first_difference({"a": [1, 2.5]}, {"a": [1, 2.5]}) is None
    assert (
        first_difference({"a": [1, 2.5]}, {"a": [1, 2.5000001]})
        == "a[1]: 2.5 stored, 2.5000001 here"
    )
    assert "only in this run" in first_difference({}, {"b": 1})
    assert computed({"x": 1, "lookup_seconds": 2.0, "step_ms": 3}) == {"x": 1}


def test_reruns_agree_with_the_store_and_a_changed_or_stale_run_is_named(tmp_path):
    store = RunStore(tmp_path / "store")
    specs = [spec("noisy", i) for i in range(3)]
    execute(specs, store, workers=2)
    records = [store.load(s) for s in specs]
    records[1]["result"]["value"] += 1e-9  # a last-bits difference
    records[2]["key"] = "0" * 20  # stored by other code
    checked = verify(list(zip(specs, records, strict=True)), workers=2)
    assert [c.status for c in checked] == ["identical", "differs", "stale"]
    assert checked[1].detail.startswith("value: ") and "stored" in checked[1].detail


def test_each_job_runs_in_a_fresh_process(tmp_path):
    specs = [spec("pid", i) for i in range(3)]
    store = RunStore(tmp_path)
    execute(specs, store, workers=1, fresh=True)
    pids = {json.loads(store.path(s).read_text())["result"]["pid"] for s in specs}
    assert len(pids) == 3


def test_no_stored_runs_is_one_line_naming_the_fix(monkeypatch, capsys):
    from memrl import verify as v

    monkeypatch.setattr(v, "stored", lambda family, profile: {})
    assert v.run("smoke", ["episodic_control"], 4, 1) == 2
    assert "make repro PROFILE=smoke" in capsys.readouterr().out


def test_runs_computed_here_are_compared_without_rerunning(tmp_path):
    from memrl.verify import compare_cached

    store = RunStore(tmp_path)
    specs = [spec("square", i) for i in range(2)]
    execute(specs, store, workers=1)
    recs = [store.load(s) for s in specs]
    mine = json.loads(json.dumps(recs))
    mine[1]["result"]["y"] = 2
    checked = compare_cached([(s, r, m) for s, r, m in zip(specs, recs, mine, strict=True)])
    assert [c.status for c in checked] == ["identical", "differs"]
    assert checked[1].detail.startswith("y: 1 stored, 2 here")


def test_job_narrows_the_sample_to_labels_that_contain_it():
    from memrl.verify import matching

    specs = [spec("square", i) for i in range(3)] + [spec("noisy", i) for i in range(3)]
    assert matching(specs, []) == specs
    assert {s.fn for s in matching(specs, ["NOISY"])} == {"toy_jobs:noisy"}
    assert len(matching(specs, ["square 1", "noisy 2"])) == 2


def test_a_job_no_stored_label_contains_is_one_line_naming_where_labels_are(monkeypatch, capsys):
    from memrl import families
    from memrl import verify as v

    fam = families.get("episodic_control")
    first = fam.grid(families.load_family(fam.name, "smoke"))[0]
    rec = {"spec": first.to_json(), "key": first.key, "result": {}}
    monkeypatch.setattr(v, "stored", lambda family, profile: {v.identity(rec["spec"]): rec})
    assert v.run("smoke", [fam.name], 4, 1, jobs=["no such job"]) == 2
    out = capsys.readouterr().out
    assert "'no such job'" in out and "memrl list" in out and out.count("\n") == 1
