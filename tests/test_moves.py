"""How each verdict moved since the last publication (:mod:`memrl.moves`): computed from the
snapshot of the published report, written into report.json, REPORT.md, the README's table
and docs/history.md's block."""

from __future__ import annotations

import copy
import json

from memrl import moves, report
from memrl.runtime import repo_root

ROOT = repo_root()


def published() -> list[dict]:
    return json.loads((ROOT / "results" / "default" / "report.json").read_text())


def one(claim_id: str) -> dict:
    return copy.deepcopy(next(r for r in published() if r["claim_id"] == claim_id))


def test_a_moved_verdict_names_from_what_to_what_and_the_inputs_that_changed():
    old = one("LLM-7")  # as it was published before its learner control: whatever it is now
    old |= {"category": "partially contradicted", "reason": "coverage", "learners": []}
    old["verdict"] = "partially contradicted (coverage)"
    old["comparisons"][0]["outcome"] = "fails"
    previous = moves.snapshot([old], "abc123")
    new = copy.deepcopy(old)
    new |= {"category": "inconclusive", "reason": "learner", "n_seeds": old["n_seeds"] + 2}
    new["verdict"] = "inconclusive (learner: an arm fails its control)"
    new["comparisons"][0]["outcome"] = "undecided"
    new["learners"] = [{"arm": "Memory-R1 (GRPO)", "setting": "its own run", "passed": False}]
    s = moves.since([new], previous)["LLM-7"]
    assert s["moved"] and s["revision"] == "abc123"
    assert (s["from"], s["to"]) == ("partially contradicted (coverage)", "inconclusive (learner)")
    text = "\n".join(s["why"])
    assert f"reason: {old['reason']} -> learner" in text
    assert f"seeds: {old['n_seeds']} -> {old['n_seeds'] + 2}" in text
    assert f"{old['comparisons'][0]['text']}: fails -> undecided" in text
    assert "learnability controls: none -> Memory-R1 (GRPO) (its own run): failed" in text
    assert report.was(s) == " (was partially contradicted (coverage))"


def test_an_unchanged_claim_has_not_moved_and_lists_nothing():
    rows = [one("RO-7"), one("ER-1")]
    s = moves.since(rows, moves.snapshot(rows, "r"))
    assert not any(v["moved"] or v["why"] for v in s.values())
    assert report.was(s["RO-7"]) == ""
    assert moves.text(s["RO-7"]) == "same verdict as at r (no input changed)"


def test_a_claim_the_snapshot_lacks_is_new_and_without_a_snapshot_nothing_is_said():
    rows = [one("RO-7")]
    assert moves.since(rows, None) == {}
    s = moves.since(rows, {"revision": "r", "claims": {}})["RO-7"]
    assert s["moved"] and s["from"] is None and s["why"] == ["a new claim"]
    assert report.was(s) == ""  # nothing to say it was


def test_the_report_stage_writes_each_claims_move_into_report_json_and_report_md(tmp_path):
    from memrl.families import FAMILIES

    results = tmp_path / "default"
    fams = [f for f in FAMILIES if f.name == "experience_replay"]
    (results / "experience_replay").mkdir(parents=True)
    claims = (ROOT / "results" / "default" / "experience_replay" / "claims.json").read_text()
    (results / "experience_replay" / "claims.json").write_text(claims)
    previous = moves.snapshot(json.loads(claims), "f00")
    previous["claims"]["ER-1"]["category"] = "partially"  # as if it was partially before
    (results / moves.PREVIOUS).write_text(json.dumps(previous))
    report.write(results, fams)
    out = {r["claim_id"]: r for r in json.loads((results / "report.json").read_text())}
    assert out["ER-1"]["since_published"]["moved"] and not out["ER-2"]["since_published"]["moved"]
    md = (results / "REPORT.md").read_text()
    assert "*Since the last publication:* moved since f00: partially -> reproduced" in md


def test_the_history_block_gives_each_claim_its_anchor():
    rows = [one("RO-7") | {"since_published": None}, one("ER-1")]
    rows[1]["since_published"] = moves.since([rows[1]], moves.snapshot([rows[1]], "r"))["ER-1"]
    block = moves.history_block(rows)
    assert "### RO-7\n" in block and "### ER-1\n" in block
    assert "Same verdict since r" in block and "Nothing in its inputs changed." in block
