"""Symmetric verdicts on the published claims: flip every comparison of every claim in
``results/default/report.json`` (a hold becomes a fail and a fail a hold, an undecided one
stays undecided for its reason) and the rule must give the mirrored verdict
(:data:`memrl.stats.claims.MIRROR`): budget, coverage and conditions narrow a hold and a
fail alike, and "some hold, some fail" is its own mirror."""

from __future__ import annotations

import json

import pytest

from memrl.runtime import repo_root
from memrl.stats.aggregate import Estimate
from memrl.stats.claims import MIRROR, verdict
from memrl.stats.compare import FAILS, HOLDS, Judgement

REPORT = repo_root() / "results" / "default" / "report.json"
FLIP = {HOLDS: FAILS, FAILS: HOLDS}


def _rows() -> list[dict]:
    data = json.loads(REPORT.read_text())
    return data["claims"] if isinstance(data, dict) else data


def _judgements(row: dict, flip: bool) -> list[Judgement]:
    out = []
    for c in row["comparisons"]:
        d = c["difference"]
        lo, hi, mid = d["ci_low"], d["ci_high"], d["iqm"]
        if flip:
            lo, hi, mid = -hi, -lo, -mid
        outcome = FLIP.get(c["outcome"], c["outcome"]) if flip else c["outcome"]
        out.append(
            Judgement(Estimate(mid, lo, hi, 0), c["margin"], outcome, c["reason"] or "", c["p"])
        )
    return out


def _verdict(row: dict, flip: bool):
    return verdict(
        _judgements(row, flip),
        row["coverage_complete"],
        row["regime"],
        row["coverage"],
        (row["reason"], row["detail"]) if row["category"] == "inconclusive" else ("floor", ""),
        unmet=[c["condition"] for c in row["conditions"] if not c["met"]],
        learners=[lc["arm"] for lc in row.get("learners", []) if lc["passed"] is False],
    )


@pytest.mark.parametrize("row", _rows(), ids=lambda r: r["claim_id"])
def test_every_published_claim_mirrors(row: dict) -> None:
    assert _verdict(row, flip=False).category == row["category"]  # the rule as published
    assert _verdict(row, flip=True).category == MIRROR[row["category"]]
