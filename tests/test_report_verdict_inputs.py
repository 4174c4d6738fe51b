"""Every verdict input reaches the reader: a claim's learnability controls (arm, setting,
passed or failed, the numbers), the hardware its paper's statement rests on against ours,
and the device its runs used, in report.json, REPORT.md and the claim's page on the site.
A fabricated claim (no training): one control passed, one failed, one not measured; a
timing claim whose paper rests on GPUs, run on the CPU."""

from __future__ import annotations

import html
import json
from dataclasses import dataclass

import pytest

from memrl import report
from memrl.site import claim_page
from memrl.stats.bootstrap import arm
from memrl.stats.claims import Budget, Claim, ClaimResult, Comparison
from memrl.stats.learners import LearnerCheck
from memrl.stats.statements import Hardware

FAMILY = "experience_replay"
HW = Hardware(
    "accelerators (GPU parallel scans)",
    ("cuda",),
    "the aggregator computes S_k, ..., S_n in parallel",
    "FFM, Sec. 3",
)
LEARNERS = [
    LearnerCheck("b", "its own full 50,000-step run", False, "0.5 [0.1, 0.9] against 8"),
    LearnerCheck("a", "the deterministic reader", True, "10 [9, 11] against the floor 0.4"),
    LearnerCheck("floor", "nowhere", None),
]


@dataclass(frozen=True)
class Fam:
    name: str = FAMILY
    title: str = "Experience replay"
    artefacts: tuple[str, ...] = ()


def result(hardware: Hardware | None, device: str, learners: list[LearnerCheck]) -> dict:
    est = {
        n: arm(v, "X-9", n)
        for n, v in {
            "a": [9, 10, 11, 10, 10],
            "b": [4, 5, 6, 5, 5],
            "floor": [0, 1, 0, 1, 0],
        }.items()
    }
    claim = Claim(
        family=FAMILY,
        claim_id="X-9",
        paper="Paper 2024",
        source="Fig. 2",
        statement="a trains faster than b",
        paper_value="two orders of magnitude",
        metric="ms per step",
        higher_is_better=True,
        regime="final",
        paper_budget=Budget(10, "env steps"),
        hardware=hardware,
    )
    return ClaimResult(
        claim=claim,
        estimates=est,
        ours="a",
        comparisons=[Comparison("a", "b", floor="floor")],
        budget="10 steps",
        used=Budget(10, "env steps"),
        deviations=["smaller"],
        learners=learners,
        device=device,
    ).to_row()


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """(report.json's row, REPORT.md) of the report stage run on the fabricated claim."""
    root = tmp_path_factory.mktemp("results")
    (root / FAMILY).mkdir()
    (root / FAMILY / "claims.json").write_text(json.dumps([result(HW, "cpu", LEARNERS)]))
    report.write(root, [Fam()])
    (row,) = json.loads((root / "report.json").read_text())
    return row, (root / "REPORT.md").read_text()


def test_report_json_keeps_the_controls_the_hardware_and_the_device(published):
    row, _ = published
    assert row["category"] == "inconclusive" and row["reason"] == "learner"
    assert row["learners"] == [lc.as_dict() for lc in LEARNERS]
    assert row["device"] == "cpu"
    assert row["hardware"]["needs"] == HW.needs and row["hardware"]["covers"] is False
    assert row["hardware"]["quote"] == HW.quote and row["hardware"]["source"] == HW.source


def test_report_md_shows_each_control_and_the_hardware_against_ours(published):
    _, md = published
    section = md.split("### X-9", 1)[1]
    assert "*Learnability controls*" in section
    assert "- b, in its own full 50,000-step run: failed (0.5 [0.1, 0.9] against 8)" in section
    assert "- a, in the deterministic reader: passed (10 [9, 11] against the floor 0.4)" in section
    assert "- floor, in nowhere: not measured" in section
    hw = section.split("*Hardware:* ", 1)[1].split("\n", 1)[0]
    assert HW.needs in hw and HW.quote in hw and HW.source in hw and "cuda" in hw
    assert "ours ran on cpu, which does not cover it" in hw


def test_the_claim_page_shows_each_control_and_the_hardware_against_ours(published):
    row, _ = published
    page = claim_page(row, {}, {}, {})
    table = page.split("<table class='learners'>", 1)[1].split("</table>", 1)[0]
    for lc in LEARNERS:
        assert f"<td>{html.escape(lc.arm)}</td><td>{html.escape(lc.setting)}</td>" in table
        assert html.escape(lc.detail) in table
    assert "<td class='o-fails'>failed</td>" in table
    assert "<td class='o-holds'>passed</td>" in table
    assert "<td class='o-undecided'>not measured</td>" in table
    assert html.escape(f'{HW.needs}: "{HW.quote}" ({HW.source})') in page  # the paper's
    assert html.escape(f"{HW.needs} (covered by cuda) / cpu: ours does not cover it") in page
    assert "id='learners'" in page


def test_a_claim_with_no_hardware_still_names_its_device():
    row = result(None, "cpu", [])
    md = report.render([row])
    assert "*Device:* cpu" in md and "*Hardware:*" not in md
    assert "*Learnability controls*" not in md
    page = claim_page(row, {}, {}, {})
    assert "<dt>device</dt><dd>cpu</dd>" in page and "class='learners'" not in page
    plain = result(None, "", [])  # nothing declared, nothing shown
    assert "*Device:*" not in report.render([plain])
    assert "<dt>device</dt>" not in claim_page(plain, {}, {}, {})


def test_a_device_that_covers_the_paper_says_so():
    row = result(HW, "cuda:0", LEARNERS[1:2])
    assert "ours ran on cuda:0, which covers it" in report.render([row])
    assert "cuda:0: ours covers it" in claim_page(row, {}, {}, {})
