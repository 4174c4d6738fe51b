"""Paper claims as data, and the one rule that turns runs into a verdict.

A :class:`Claim` records what a paper says (with where it says it), the regime it is
about (``early``: the first part of training; ``final``: after the paper's budget) and
the paper's budget; a family fills a :class:`ClaimResult` with estimates from its runs,
the budget it used and the trend of each comparison along training
(:mod:`memrl.stats.trend`). The verdict is computed by :func:`verdict`, never typed in:
a *final* claim run on less than half the paper's budget whose comparisons fail is
**inconclusive (budget)**, not "not reproduced" — "not yet" is not "no".
"""

from __future__ import annotations

from dataclasses import KW_ONLY, asdict, dataclass, field
from typing import Any

from memrl.stats.aggregate import Estimate

REPRODUCED, PARTIALLY, NOT_REPRODUCED = "reproduced", "partially", "not reproduced"
INCONCLUSIVE = "inconclusive (budget)"
VERDICTS = (REPRODUCED, PARTIALLY, INCONCLUSIVE, NOT_REPRODUCED)
EARLY, FINAL = "early", "final"
LOW_COVERAGE = 0.5  # below this share of the paper's budget a final-regime "no" is "not yet"

VERDICT_RULE = (
    "Each claim is a set of comparisons (A beats B in the paper's direction). "
    "**reproduced**: every comparison holds with non-overlapping 95% stratified-bootstrap CIs "
    "(IQM over seeds) and our setup covers the range the paper tested; "
    "**partially**: every IQM points the paper's way but some CIs overlap, or our setup covers "
    "less than the paper's range; **not reproduced**: some IQM points the other way or ties. "
    "A claim that A *matches or beats* B (no significant loss) holds when A's CI reaches "
    "B's IQM (A.ci_high >= B.iqm in the better direction) and fails otherwise. "
    "**Budget.** Each claim is about an *early* regime (the first part of training) or a "
    "*final* one (after the paper's budget); *coverage* = our budget / the paper's, in the "
    "paper's unit. A *final* claim run at < 50% coverage is **inconclusive (budget)** when "
    "some comparison fails (its trend shows where it heads) and at most **partially** when "
    "all hold; *early* claims, and claims whose paper budget is unknown, are judged as above."
)


def share(x: float | None) -> str:
    """A coverage as a percentage that stays readable when small: 10%, 0.19%, ``?``."""
    if x is None:
        return "?"
    return f"{x:.0%}" if x >= 0.1 else f"{100 * x:.2g}%"


@dataclass(frozen=True)
class Budget:
    """An amount of training in a unit ("env steps", "episodes", "iterations"...)."""

    amount: float
    unit: str

    def __post_init__(self) -> None:
        if not self.amount > 0:
            raise ValueError(f"a budget must be positive, got {self.amount!r} {self.unit}")

    @property
    def amount_text(self) -> str:
        """``50,000``; non-integers to 6 significant digits."""
        a = self.amount
        return f"{int(a):,}" if a == int(a) else f"{a:,.6g}"

    def __str__(self) -> str:
        return f"{self.amount_text} {self.unit}"


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
    _: KW_ONLY
    regime: str  # EARLY or FINAL
    paper_budget: Budget | None  # None: the paper's budget could not be retrieved
    machine_dependent: bool = False  # wall-clock: differs between machines (no determinism check)

    def __post_init__(self) -> None:
        if self.regime not in (EARLY, FINAL):
            raise ValueError(f"{self.claim_id}: regime must be '{EARLY}' or '{FINAL}'")


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
    coverage_complete: bool = True  # the setup covers the paper's range (tasks, sizes)
    coverage_note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    used: Budget | None = None  # our budget, in the unit of ``claim.paper_budget``
    trends: list[Any] = field(default_factory=list)  # memrl.stats.trend.Trend, one per comparison
    trend_note: str = ""  # what the trend is measured on, or why there is none

    def __post_init__(self) -> None:
        paper = self.claim.paper_budget
        if paper is not None and self.used is not None and paper.unit != self.used.unit:
            raise ValueError(
                f"{self.claim.claim_id}: our budget is in {self.used.unit!r}, the paper's in "
                f"{paper.unit!r}: coverage needs one unit"
            )

    @property
    def coverage(self) -> float | None:
        """Our budget / the paper's (None when either is unknown)."""
        paper = self.claim.paper_budget
        if paper is None or self.used is None:
            return None
        return self.used.amount / paper.amount

    @property
    def coverage_text(self) -> str:
        """E.g. ``10% (5,000 of 50,000 env steps)``, or why the coverage is unknown."""
        paper = self.claim.paper_budget
        if self.used is None:
            return "unknown"
        if paper is None:
            return f"unknown (paper's budget not retrieved; ours {self.used})"
        return f"{share(self.coverage)} ({self.used.amount_text} of {paper})"

    @property
    def verdict(self) -> str:
        return verdict(
            self.estimates, self.comparisons, self.claim.higher_is_better, self.coverage_complete,
            self.claim.regime, self.coverage,
        )  # fmt: skip

    def to_row(self) -> dict[str, Any]:
        ours = self.estimates[self.ours]
        claim = asdict(self.claim)
        claim["paper_budget"] = str(self.claim.paper_budget) if self.claim.paper_budget else None
        return {
            **claim,
            "used_budget": str(self.used) if self.used else None,
            "coverage": self.coverage,
            "coverage_text": self.coverage_text,
            "trends": [t.as_dict() for t in self.trends],
            "trend_note": self.trend_note,
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
    regime: str = EARLY,
    coverage: float | None = None,
) -> str:
    """Apply :data:`VERDICT_RULE` to estimates from the runs (``coverage``: our budget / the
    paper's, None if unknown)."""
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
    short = regime == FINAL and coverage is not None and coverage < LOW_COVERAGE
    if not all(points):
        return INCONCLUSIVE if short else NOT_REPRODUCED
    if all(separated) and coverage_complete and not short:
        return REPRODUCED
    return PARTIALLY
