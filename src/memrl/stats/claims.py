"""Paper claims as data, and the one rule that turns runs into a verdict.

A :class:`Claim` records what a paper says (with where it says it); a family's
experiment fills a :class:`ClaimResult` with estimates from its runs; the
verdict is computed by :func:`verdict`, never typed in.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from memrl.stats.aggregate import Estimate

REPRODUCED, PARTIALLY, NOT_REPRODUCED = "reproduced", "partially", "not reproduced"

VERDICT_RULE = (
    "Each claim is a set of comparisons (A beats B in the paper's direction). "
    "**reproduced**: every comparison holds with non-overlapping 95% stratified-bootstrap CIs "
    "(IQM over seeds) and our setup covers the range the paper tested; "
    "**partially**: every IQM points the paper's way but some CIs overlap, or our setup covers "
    "less than the paper's range; **not reproduced**: some IQM points the other way or ties. "
    "A claim that A *matches or beats* B (no significant loss) holds when A's CI reaches "
    "B's IQM (A.ci_high >= B.iqm in the better direction) and fails otherwise."
)


@dataclass(frozen=True)
class Claim:
    family: str
    claim_id: str
    paper: str
    source: str  # table / figure / section in the paper
    statement: str
    paper_value: str  # as the paper states it; qualitative where no number could be verified
    metric: str
    higher_is_better: bool
    machine_dependent: bool = False  # wall-clock: differs between machines (no determinism check)


BEATS, MATCHES = "beats", "matches or beats"


@dataclass(frozen=True)
class Comparison:
    """``better`` should beat ``worse`` on the claim's metric.

    With ``relation=MATCHES`` it should merely not fall below it (a "no significant
    loss" claim): that holds when ``better``'s CI reaches ``worse``'s IQM.
    """

    better: str
    worse: str
    relation: str = BEATS

    def __post_init__(self) -> None:
        if self.relation not in (BEATS, MATCHES):
            raise ValueError(f"relation must be '{BEATS}' or '{MATCHES}', got {self.relation!r}")

    def __str__(self) -> str:
        return f"{self.better} {'>' if self.relation == BEATS else '>='} {self.worse}"


@dataclass
class ClaimResult:
    claim: Claim
    estimates: dict[str, Estimate]  # name -> estimate over seeds (n = 0: a paper's constant)
    ours: str  # the name in ``estimates`` that is the claim's headline value
    comparisons: list[Comparison]
    budget: str
    deviations: list[str]
    coverage_complete: bool = True
    coverage_note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        return verdict(
            self.estimates, self.comparisons, self.claim.higher_is_better, self.coverage_complete
        )

    def to_row(self) -> dict[str, Any]:
        ours = self.estimates[self.ours]
        return {
            **asdict(self.claim),
            "ours_name": self.ours,
            "ours": {"iqm": ours.iqm, "ci_low": ours.ci_low, "ci_high": ours.ci_high},
            "estimates": {k: v.as_dict() for k, v in self.estimates.items()},
            "comparisons": [str(c) for c in self.comparisons],
            "n_seeds": min((e.n for e in self.estimates.values() if e.n), default=0),
            "budget": self.budget,
            "verdict": self.verdict,
            "coverage_complete": self.coverage_complete,
            "coverage_note": self.coverage_note,
            "deviations": list(self.deviations),
            "extra": dict(self.extra),
        }


def _beats(a: Estimate, b: Estimate, higher_is_better: bool) -> tuple[bool, bool]:
    """(IQM points the right way, CIs separated the right way)."""
    if higher_is_better:
        return a.iqm > b.iqm, a.ci_low > b.ci_high
    return a.iqm < b.iqm, a.ci_high < b.ci_low


def _matches(a: Estimate, b: Estimate, higher_is_better: bool) -> bool:
    """A shows no significant loss against B: A's CI reaches B's IQM."""
    return a.ci_high >= b.iqm if higher_is_better else a.ci_low <= b.iqm


def verdict(
    estimates: dict[str, Estimate],
    comparisons: list[Comparison],
    higher_is_better: bool,
    coverage_complete: bool = True,
) -> str:
    """Apply :data:`VERDICT_RULE` to estimates from the runs."""
    if not comparisons:
        raise ValueError("a claim needs at least one comparison")
    points, separated = [], []
    for c in comparisons:
        if c.better not in estimates or c.worse not in estimates:
            raise KeyError(f"comparison {c} names a method without an estimate")
        if c.relation == MATCHES:
            p = s = _matches(estimates[c.better], estimates[c.worse], higher_is_better)
        else:
            p, s = _beats(estimates[c.better], estimates[c.worse], higher_is_better)
        points.append(p)
        separated.append(s)
    if not all(points):
        return NOT_REPRODUCED
    if all(separated) and coverage_complete:
        return REPRODUCED
    return PARTIALLY
