"""Paper claims as data, and the one rule that turns runs into a verdict.

A :class:`Claim` records what a paper says (with where it says it), the regime it is
about (``early``: the first part of training; ``final``: after the paper's budget) and
the paper's budget; a family fills a :class:`ClaimResult` with arms from its runs (per-seed
values, :func:`memrl.stats.compare.arm`), its floor runs, the budget it used and the trend of
each comparison along training (:mod:`memrl.stats.trend`). Each :class:`Comparison` is judged
on the CI of its difference, against a declared margin for *matches or beats* and beside
its floor (:func:`memrl.stats.compare.judge`); the verdict is computed by :func:`verdict`,
never typed in (:data:`VERDICT_RULE`). A *final* claim run on less than half the paper's
budget whose comparisons fail is **inconclusive (budget)**, not "not reproduced": "not
yet" is not "no".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import KW_ONLY, asdict, dataclass, field
from functools import cached_property
from typing import Any

from memrl.stats.aggregate import stable_seed
from memrl.stats.compare import (
    BEATS,
    FAILS,
    GAP_10,
    HOLDS,
    MATCHES,
    MULTIPLICITY,
    NO_SPREAD,
    REPS,
    Judgement,
    Margin,
    clears,
    decided,
    holm,
    judge,
)

__all__ = [
    "BEATS",
    "GAP_10",
    "MATCHES",
    "Budget",
    "Claim",
    "ClaimResult",
    "Comparison",
    "Condition",
    "Margin",
    "Verdict",
]

REPRODUCED, PARTIALLY, NOT_REPRODUCED, INCONCLUSIVE = (
    "reproduced",
    "partially",
    "not reproduced",
    "inconclusive",
)
VERDICTS = (REPRODUCED, PARTIALLY, INCONCLUSIVE, NOT_REPRODUCED)  # categories, report order
EARLY, FINAL = "early", "final"
LOW_COVERAGE = 0.5  # below this share of the paper's budget a final-regime "no" is "not yet"

VERDICT_RULE = (
    "Each claim is a set of comparisons in the paper's direction, each judged on the "
    "*difference* A − B (IQM over seeds, > 0 the paper's way) with a 95% CI from a bootstrap "
    "over the seeds of both arms. *A beats B* **holds** when the CI lies above 0 and **fails** "
    "when it lies at or below 0; *A matches or beats B* is an equivalence test with a declared "
    "margin δ (its source beside it): it holds when the CI's lower end is above −δ and fails "
    "when its upper end is at or below −δ; otherwise the comparison is **undecided**. Every claim "
    "names its **floor**, the score of a policy with no learning or no knowledge, run in the "
    "same envs and seeds: a comparison in which neither arm's CI clears the floor's CI is "
    "undecided, whatever its difference, and so is one whose CI has no width (*no spread*: "
    "values on a coarse grid, a constant against a constant), and one with too few seeds for "
    "any exact test to decide at 95% (3 seeds against 3: 1/20 > 2.5%; against a constant "
    "or one deterministic run, fewer than 6). Where a run's value is a mean over items "
    "(test questions, tasks) the bootstrap resamples the items within each seed too "
    "(questions by conversation); a deterministic method is one run with its items, never "
    "copied per seed. **reproduced**: every "
    "comparison holds and our setup covers the range the paper tested; **not reproduced**: "
    "some comparison fails; **partially**: some hold and none fails (or all hold on a "
    "narrower setup). Where a verdict rests on *some* comparisons, their decisions stand "
    "only as far as Holm–Bonferroni's step-down over the claim's comparisons allows "
    "(*multiplicity* otherwise); "
    "**inconclusive** when nothing holds and nothing fails, with its reason: *floor* (no "
    "compared method clears its floor; a declared reason such as *model scale* only where a "
    "*positive control*, the method given what it needs to succeed, sits at the floor too), *budget* or *power* "
    "(with the seeds per arm a decision would need at the observed difference). **Budget.** "
    "Each claim is about an *early* regime (the first part of training) or a *final* one "
    "(after the paper's budget); *coverage* = our budget / the paper's, in the paper's unit. "
    "A *final* claim run at < 50% coverage whose comparisons fail is **inconclusive "
    "(budget)**, and at most **partially** when they hold; an *early* claim states the share "
    "of the paper's budget it looks at. **Conditions.** A claim names what its statement needs "
    "of the setup (hardware, domain, data source) and whether our runs meet it: *reproduced* "
    "needs every one met (else *partially*, naming it), and a *not reproduced* that rests on "
    "an unmet one is **inconclusive (<condition>)**."
)


@dataclass(frozen=True)
class Verdict:
    """A claim's verdict as data: its ``category`` (one of :data:`VERDICTS`), its ``reason``
    (the kind of why it is inconclusive: ``power``, ``budget``, ``floor``, ``model scale``,
    ``multiplicity``, ``no spread`` or the unmet condition; or only partial: ``condition``,
    ``budget``, ``coverage``, ``comparisons``; None for a plain reproduced / not reproduced)
    and its ``detail`` (the particulars, e.g. the seeds that would decide). ``str()`` is the
    human form:
    ``inconclusive (power: ~12 seeds per arm would decide)``; a floor's detail follows a
    semicolon (``inconclusive (floor; not model scale: the positive control clears ...)``)."""

    category: str
    reason: str | None = None
    detail: str = ""

    def __post_init__(self) -> None:
        if self.category not in VERDICTS:
            raise ValueError(f"not a verdict category: {self.category!r}")

    @property
    def why(self) -> str:
        """Reason and detail as one text ("" for none)."""
        if not self.detail:
            return self.reason or ""
        return f"{self.reason}{'; ' if self.reason == 'floor' else ': '}{self.detail}"

    def __str__(self) -> str:
        shown = self.reason and self.category == INCONCLUSIVE
        return f"{self.category} ({self.why})" if shown else self.category


@dataclass(frozen=True)
class Condition:
    """What a claim's statement needs of the setup (hardware, domain, data source...) and
    whether our runs meet it: a "reproduced" needs every one met; a "not reproduced" that
    rests on an unmet one is "inconclusive (<condition>)"."""

    condition: str
    met: bool
    note: str = ""


def comparison_text(c: dict[str, Any], digits: int = 4) -> str:
    """A judged comparison (``Outcome.as_dict()``) as one line, the same in the notebooks,
    the report and the site: ``A > B: +12.3 [+4.1, +20.2] holds`` (with ``δ`` for a matches
    test, the reason of an undecided one and the verdict at half and twice the margin)."""

    def g(x: float, sign: str = "+") -> str:
        return f"{x:{sign}.{digits}g}"

    d = c["difference"]
    margin = f", δ {g(c['margin'], '')}" if c.get("margin") is not None else ""
    reason = c.get("reason") or ""
    sides = c.get("sides") or [c["better"], c["worse"]]
    at_floor = "both" if len(sides) > 1 else sides[0]
    why = f" ({at_floor} at the floor)" if reason == "floor" else f" ({reason})" if reason else ""
    at = c.get("at_margin") or {}
    sens = f" (at δ/2: {at['0.5δ']}; at 2δ: {at['2δ']})" if at else ""
    return (
        f"{c['text']}: {g(d['iqm'])} [{g(d['ci_low'])}, {g(d['ci_high'])}]{margin} "
        f"{c['outcome']}{why}{sens}"
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


@dataclass(frozen=True, kw_only=True)
class Claim:
    family: str
    claim_id: str
    paper: str
    source: str  # table / figure / section in the paper
    statement: str
    paper_value: str  # as the paper states it; qualitative where no number could be verified
    metric: str
    higher_is_better: bool
    regime: str  # EARLY or FINAL
    paper_budget: Budget | None  # None: the paper's budget could not be retrieved
    machine_dependent: bool = False  # wall-clock: differs between machines (no determinism check)
    below_floor: str = "floor"  # why a claim whose methods all sit at the floor says nothing

    def __post_init__(self) -> None:
        if self.regime not in (EARLY, FINAL):
            raise ValueError(f"{self.claim_id}: regime must be '{EARLY}' or '{FINAL}'")


@dataclass(frozen=True)
class Comparison:
    """``better`` should beat ``worse`` on the claim's metric (``relation=BEATS``), or show no
    loss against it beyond ``margin`` (``relation=MATCHES``, an equivalence test).

    :param floor: the name of the estimate of this comparison's floor (a policy with no
        learning or no knowledge in the same env), if it has one
    :param ceiling: the name of its ceiling (an oracle), if one exists
    :param sides: the arms that must clear the floor (default: ``better`` and ``worse``)
    """

    better: str
    worse: str
    relation: str = BEATS
    _: KW_ONLY
    margin: Margin | None = None
    floor: str | None = None
    ceiling: str | None = None
    sides: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.relation not in (BEATS, MATCHES):
            raise ValueError(f"relation must be '{BEATS}' or '{MATCHES}', got {self.relation!r}")
        if (self.relation == MATCHES) != (self.margin is not None):
            raise ValueError(f"{self}: a margin goes with 'matches or beats', and only with it")

    def __str__(self) -> str:
        return f"{self.better} {'>' if self.relation == BEATS else '>='} {self.worse}"


@dataclass(frozen=True)
class Outcome:
    """One comparison as judged: its difference with the CI, the margin, the outcome."""

    comparison: Comparison
    judgement: Judgement  # after Holm's step-down over the claim's comparisons
    alone: Judgement | None = None  # before it, where it differs

    @property
    def outcome(self) -> str:
        return self.judgement.outcome

    def as_dict(self) -> dict[str, Any]:
        c, j = self.comparison, self.judgement
        d = j.difference
        return {
            "better": c.better,
            "relation": c.relation,
            "worse": c.worse,
            "difference": {"iqm": d.iqm, "ci_low": d.ci_low, "ci_high": d.ci_high},
            "margin": j.margin,
            "margin_source": c.margin.source if c.margin else None,
            "floor": c.floor,
            "sides": list(c.sides or (c.better, c.worse)),  # the arms that must clear it
            "outcome": j.outcome,
            "reason": j.reason,
            "p": j.p,
            "outcome_alone": self.alone.outcome if self.alone else j.outcome,
            # a "matches" outcome at half and twice its margin: how much the δ decides
            "at_margin": {f"{k}δ": decided(d, -k * j.margin) for k in (0.5, 2)}
            if j.margin is not None
            else None,
            "seeds_needed": j.seeds_needed,
            "text": str(c),
        }


@dataclass(kw_only=True)
class ClaimResult:
    """A claim judged on our runs.

    :param estimates: name -> an :class:`~memrl.stats.compare.Arm` (per-seed values with
        their IQM and CI) or a constant (an :class:`Estimate` with ``n = 0``: a paper's
        number, a threshold); floors and ceilings are estimates too
    :param floor_reason: why the claim has no floor (e.g. a timing benchmark); required when
        no comparison names one
    """

    claim: Claim
    estimates: dict[str, Any]
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
    floor_reason: str = ""
    reps: int = REPS  # bootstrap resamples per difference
    power_experiments: int = 100  # simulations per seed count behind "~N seeds would decide"
    conditions: list[Condition] = field(default_factory=list)
    # (name, arm) of a positive control: the method given what it should need to succeed (the
    # test task's own expert trajectory in memory). A claim whose methods sit at the floor
    # blames its declared reason (``claim.below_floor``, e.g. model scale) only when its
    # control sits there too.
    positive_control: tuple[str, Any] | None = None
    control_note: str = ""
    control_detail: list[Any] = field(default_factory=list)  # why it fails, where it does

    def __post_init__(self) -> None:
        cid = self.claim.claim_id
        paper = self.claim.paper_budget
        if paper is not None and self.used is not None and paper.unit != self.used.unit:
            raise ValueError(
                f"{cid}: our budget is in {self.used.unit!r}, the paper's in "
                f"{paper.unit!r}: coverage needs one unit"
            )
        if not self.comparisons:
            raise ValueError(f"{cid}: a claim needs at least one comparison")
        for c in self.comparisons:
            for name in (c.better, c.worse, c.floor, c.ceiling, *c.sides):
                if name is not None and name not in self.estimates:
                    raise KeyError(f"{cid}: comparison {c} names {name!r}, which has no estimate")
        if not any(c.floor for c in self.comparisons) and not self.floor_reason:
            raise ValueError(f"{cid}: name a floor in its comparisons, or say why it has none")

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

    @cached_property
    def outcomes(self) -> list[Outcome]:
        """Each comparison judged (bootstraps seeded by the claim's id and the comparison)."""
        est, hib = self.estimates, self.claim.higher_is_better
        out = []
        for c in self.comparisons:
            floor = est[c.floor] if c.floor else None
            margin = c.margin.resolve(est[c.worse].iqm, floor and floor.iqm) if c.margin else None
            seed = stable_seed(self.claim.claim_id, str(c), "difference")
            j = judge(
                est[c.better],
                est[c.worse],
                c.relation,
                hib,
                seed,
                margin=margin,
                floor=floor,
                sides=[est[s] for s in c.sides],
                reps=self.reps,
                power_experiments=self.power_experiments,
            )
            out.append(Outcome(c, j))
        if all(o.outcome == HOLDS for o in out):  # "every one holds": no union, no correction
            return out
        adjusted = holm([o.judgement for o in out])
        return [
            Outcome(o.comparison, a, None if a is o.judgement else o.judgement)
            for o, a in zip(out, adjusted, strict=True)
        ]

    @property
    def multiplicity(self) -> str | None:
        """How the claim's comparisons are corrected together (None: only one)."""
        return "holm" if len(self.comparisons) > 1 else None

    @property
    def control_clears(self) -> bool | None:
        """Whether the positive control's CI clears the claim's floor (None: no control or
        no floor)."""
        floor = next((c.floor for c in self.comparisons if c.floor), None)
        if self.positive_control is None or floor is None:
            return None
        return clears(self.positive_control[1], self.estimates[floor], self.claim.higher_is_better)

    @property
    def below_floor(self) -> tuple[str, str]:
        """Why a claim whose methods all sit at the floor says nothing, as (reason, detail):
        the claim's declared reason (e.g. model scale) only where a positive control shows
        it; "floor" otherwise, saying so where the control clears the floor (then it is not
        the model)."""
        reason = self.claim.below_floor
        if reason == "floor":
            return reason, ""
        if self.control_clears is None:
            return "floor", f"no positive control shows {reason}"
        if self.control_clears:
            return "floor", f"not {reason}: the positive control clears the floor"
        return reason, ""

    @cached_property
    def decision(self) -> Verdict:
        """The verdict as data (:func:`verdict`)."""
        return verdict(
            [o.judgement for o in self.outcomes],
            self.coverage_complete,
            self.claim.regime,
            self.coverage,
            self.below_floor,
            unmet=[c.condition for c in self.conditions if not c.met],
        )

    @property
    def verdict(self) -> str:
        return str(self.decision)

    @property
    def n_seeds(self) -> int:
        """The fewest seeds of any run arm (paper constants and floors left out)."""
        floors = {c.floor for c in self.comparisons} | {c.ceiling for c in self.comparisons}
        return min((e.n for k, e in self.estimates.items() if e.n and k not in floors), default=0)

    def _named(self, name: str | None) -> dict[str, Any] | None:
        if name is None:
            return None
        e = self.estimates[name]
        return {"name": name, "iqm": e.iqm, "ci_low": e.ci_low, "ci_high": e.ci_high}

    def _control_row(self) -> dict[str, Any] | None:
        if self.positive_control is None:
            return None
        name, e = self.positive_control
        return {
            "name": name,
            "iqm": e.iqm,
            "ci_low": e.ci_low,
            "ci_high": e.ci_high,
            "n": e.n,
            "clears_floor": self.control_clears,
            "note": self.control_note,
            "detail": list(self.control_detail),
        }

    def to_row(self) -> dict[str, Any]:
        ours = self.estimates[self.ours]
        claim = asdict(self.claim)
        claim["paper_budget"] = str(self.claim.paper_budget) if self.claim.paper_budget else None
        floor = next((c.floor for c in self.comparisons if c.floor), None)
        ceiling = next((c.ceiling for c in self.comparisons if c.ceiling), None)
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
            "comparisons": [o.as_dict() for o in self.outcomes],
            "multiplicity": self.multiplicity,
            "floor": self._named(floor),
            "floors": [
                self._named(f) for f in dict.fromkeys(c.floor for c in self.comparisons if c.floor)
            ],
            "floor_reason": self.floor_reason or None,
            "ceiling": self._named(ceiling),
            "n_seeds": self.n_seeds,
            "budget": self.budget,
            "verdict": self.verdict,
            "category": self.decision.category,
            "reason": self.decision.reason,
            "detail": self.decision.detail,
            "conditions": [asdict(c) for c in self.conditions],
            "positive_control": self._control_row(),
            "coverage_complete": self.coverage_complete,
            "coverage_note": self.coverage_note,
            "deviations": list(self.deviations),
            "extra": dict(self.extra),
        }


def verdict(
    judgements: list[Judgement],
    coverage_complete: bool = True,
    regime: str = EARLY,
    coverage: float | None = None,
    below_floor: tuple[str, str] = ("floor", ""),
    unmet: Sequence[str] = (),
) -> Verdict:
    """Apply :data:`VERDICT_RULE` to judged comparisons (``coverage``: our budget / the
    paper's, None if unknown; ``below_floor``: the reason and detail a claim whose methods
    all sit at their floor is inconclusive for; ``unmet``: the claim's conditions our runs do
    not meet)."""
    if not judgements:
        raise ValueError("a claim needs at least one comparison")
    outcomes = [j.outcome for j in judgements]
    short = regime == FINAL and coverage is not None and coverage < LOW_COVERAGE
    if FAILS in outcomes:
        if short:
            return Verdict(INCONCLUSIVE, "budget")
        return Verdict(INCONCLUSIVE, unmet[0]) if unmet else Verdict(NOT_REPRODUCED)
    if HOLDS in outcomes:
        if all(o == HOLDS for o in outcomes) and coverage_complete and not short and not unmet:
            return Verdict(REPRODUCED)
        why = [f"not met: {u}" for u in unmet] + (["budget"] if short else [])
        if not coverage_complete:
            why.append("a narrower setup than the paper's")
        if not all(o == HOLDS for o in outcomes):
            why.append("not every comparison holds")
        first = (("condition", unmet), ("budget", short), ("coverage", not coverage_complete))
        kind = next((k for k, cause in first if cause), "comparisons")  # the first of ``why``
        return Verdict(PARTIALLY, kind, "; ".join(why))
    if all(j.reason == "floor" for j in judgements):
        return Verdict(INCONCLUSIVE, *below_floor)
    if short:
        return Verdict(INCONCLUSIVE, "budget")
    needed = [j.seeds_needed for j in judgements if j.reason == "power"]
    floored = sum(j.reason == "floor" for j in judgements)
    # seeds decide only what is not at the floor: say so where some comparisons are
    sit = "sits" if floored == 1 else "sit"
    at_floor = f"{floored} of {len(judgements)} comparisons {sit} at the floor" if floored else ""

    def power(detail: str = "") -> Verdict:
        return Verdict(INCONCLUSIVE, "power", "; ".join(t for t in (detail, at_floor) if t))

    if not needed and any(j.reason == MULTIPLICITY for j in judgements):
        return Verdict(INCONCLUSIVE, MULTIPLICITY, "no decision survives Holm's correction")
    if not needed and any(j.reason == NO_SPREAD for j in judgements):
        return Verdict(INCONCLUSIVE, NO_SPREAD, "the compared runs do not vary")
    if any(n == 0 for n in needed):
        return power()
    if any(n is None for n in needed):
        return power("not decided at 100 seeds per arm in simulation")
    return power(f"~{max(needed)} seeds per arm would decide")
