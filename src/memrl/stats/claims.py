"""Paper claims as data, and the one rule that turns runs into a verdict.

A :class:`Claim` records what a paper says (with where it says it), the regime it is
about (``early``: the first part of training; ``final``: after the paper's budget) and
the paper's budget; a family fills a :class:`ClaimResult` with arms from its runs (per-seed
values, :func:`memrl.stats.compare.arm`), its floor runs, the budget it used and the trend of
each comparison along training (:mod:`memrl.stats.trend`). Each :class:`Comparison` is judged
on the CI of its difference, against a declared margin for *matches or beats* and beside
its floor and ceiling (:func:`memrl.stats.compare.judge`); where the paper states a number
(:class:`PaperEffect`) that number is what a comparison tests. The verdict is computed by
:func:`verdict`, never typed in (:data:`VERDICT_RULE`), on a symmetric scale: flipping the
sign of every comparison gives the mirrored verdict (:data:`MIRROR`), so a short budget, a
narrower setup or an unmet condition (only one the paper states) narrows a hold and a fail
alike: *partially* and *partially contradicted*.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import KW_ONLY, asdict, dataclass, field, replace
from functools import cached_property
from typing import Any

from memrl.stats.aggregate import stable_seed
from memrl.stats.bootstrap import CLAIM_REPS
from memrl.stats.compare import (
    BEATS,
    FAILS,
    GAP_10,
    HOLDS,
    MATCHES,
    Judgement,
    Margin,
    clears,
    decided,
    holm,
    judge,
)
from memrl.stats.copies import collapsed, copies
from memrl.stats.learners import LearnerCheck
from memrl.stats.statements import Condition, Hardware, PaperEffect
from memrl.stats.verdict import (
    CONTRADICTED,
    EARLY,
    FINAL,
    INCONCLUSIVE,
    MIRROR,
    MIXED,
    NOT_REPRODUCED,
    PARTIALLY,
    REPRODUCED,
    VERDICT_RULE,
    VERDICTS,
    Verdict,
    share,
    verdict,
)

# what a family's claims module declares claims with, from one place
__all__ = [
    "BEATS",
    "CONTRADICTED",
    "EARLY",
    "FINAL",
    "GAP_10",
    "INCONCLUSIVE",
    "MATCHES",
    "MIRROR",
    "MIXED",
    "NOT_REPRODUCED",
    "PARTIALLY",
    "REPRODUCED",
    "VERDICTS",
    "VERDICT_RULE",
    "Budget",
    "Claim",
    "ClaimResult",
    "Comparison",
    "Condition",
    "Hardware",
    "LearnerCheck",
    "Margin",
    "PaperEffect",
    "Verdict",
    "share",
    "verdict",
]


def seeds_text(n_seeds: int, one_run: Sequence[str] = ()) -> str:
    """``6 seeds per arm (Mem0-style heuristic: one run)``: a claim's seeds, and the arms run
    once beside them (a deterministic method is one run, not one seed short)."""
    text = f"{n_seeds} seed{'' if n_seeds == 1 else 's'} per arm"
    return text + (f" ({', '.join(one_run)}: one run)" if one_run else "")


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
    bare = c.get("direction")
    beside = f"; the bare direction ({bare['text']}) {bare['outcome']}" if bare else ""
    return (
        f"{c['text']}: {g(d['iqm'])} [{g(d['ci_low'])}, {g(d['ci_high'])}]{margin} "
        f"{c['outcome']}{why}{sens}{beside}"
    )


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
    paper_effect: PaperEffect | None = None  # the number the paper states, tested as such
    hardware: Hardware | None = None  # the hardware the paper's statement rests on

    def __post_init__(self) -> None:
        if self.regime not in (EARLY, FINAL):
            raise ValueError(f"{self.claim_id}: regime must be '{EARLY}' or '{FINAL}'")


@dataclass(frozen=True)
class Comparison:
    """``better`` should beat ``worse`` on the claim's metric (``relation=BEATS``), or show no
    loss against it beyond ``margin`` (``relation=MATCHES``, an equivalence test).

    :param floor: the name of the estimate of this comparison's floor (a policy with no
        learning or no knowledge in the same env), if it has one
    :param ceiling: the name of its ceiling (the task's maximum, or an oracle), if one exists
    :param sides: the arms that must clear the floor (default: ``better`` and ``worse``)
    :param effect: the comparison tests the claim's :class:`PaperEffect` (``better`` against
        ``worse`` moved by the paper's number), its bare direction reported beside it
    """

    better: str
    worse: str
    relation: str = BEATS
    _: KW_ONLY
    margin: Margin | None = None
    floor: str | None = None
    ceiling: str | None = None
    sides: tuple[str, ...] = ()
    effect: bool = False

    def __post_init__(self) -> None:
        if self.relation not in (BEATS, MATCHES):
            raise ValueError(f"relation must be '{BEATS}' or '{MATCHES}', got {self.relation!r}")
        if (self.relation == MATCHES) != (self.margin is not None):
            raise ValueError(f"{self}: a margin goes with 'matches or beats', and only with it")

    def __str__(self) -> str:
        return f"{self.better} {'>' if self.relation == BEATS else '>='} {self.worse}"

    def text(self, effect: PaperEffect | None) -> str:
        """As shown: ``S5 > GRU ÷ 5`` where it tests the paper's number."""
        if not self.effect or effect is None:
            return str(self)
        sign = ">" if self.relation == BEATS else ">="
        return f"{self.better} {sign} {effect.label(self.worse)}"


@dataclass(frozen=True)
class Outcome:
    """One comparison as judged: its difference with the CI, the margin, the outcome."""

    comparison: Comparison
    judgement: Judgement  # after Holm's step-down over the claim's comparisons
    alone: Judgement | None = None  # before it, where it differs
    direction: Judgement | None = None  # a paper's-number comparison: the bare direction
    effect: PaperEffect | None = None

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
            "text": c.text(self.effect),
            "paper_effect": c.effect,
            "direction": None
            if self.direction is None
            else {
                "text": str(c),
                "difference": self.direction.difference.as_dict(),
                "outcome": self.direction.outcome,
            },
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
    reps: int = CLAIM_REPS  # bootstrap resamples per judged difference
    power_experiments: int = 100  # simulations per seed count behind "~N seeds would decide"
    conditions: list[Condition] = field(default_factory=list)
    # (name, arm) of a positive control: the method given what it should need to succeed (the
    # test task's own expert trajectory in memory). A claim whose methods sit at the floor
    # blames its declared reason (``claim.below_floor``, e.g. model scale) only when its
    # control sits there too.
    positive_control: tuple[str, Any] | None = None
    control_note: str = ""
    control_detail: list[Any] = field(default_factory=list)  # why it fails, where it does
    # the floor scored as the control is (one pass where the control makes one): the
    # estimate the control must clear; default the claim's floor
    control_floor: str | None = None
    # each trained arm's learnability control (:class:`~memrl.stats.learners.LearnerCheck`):
    # an arm that fails its control makes the verdict *inconclusive (learner)*, a hold and a
    # fail alike
    learners: list[LearnerCheck] = field(default_factory=list)
    # the device the runs ran on (``memrl.runtime.get_device``'s answer: cpu, cuda), required
    # where the claim declares its paper's hardware (:class:`Hardware`)
    device: str = ""

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
        if self.claim.hardware is not None and not self.device:
            raise ValueError(
                f"{cid}: the claim rests on {self.claim.hardware.needs}: say the device"
            )
        for lc in self.learners:
            if not isinstance(lc, LearnerCheck):
                raise TypeError(f"{cid}: learners are LearnerCheck, got {type(lc).__name__}")
            if lc.arm not in self.estimates:
                raise KeyError(f"{cid}: learner check names {lc.arm!r}, which has no estimate")

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
    def hardware_covers(self) -> bool | None:
        """Whether our device covers the hardware the paper's statement rests on (None: the
        claim declares none)."""
        hw = self.claim.hardware
        return None if hw is None else hw.covers(self.device)

    @property
    def covers(self) -> bool:
        """The setup covers the paper's: its range (tasks, sizes) and its hardware."""
        return self.coverage_complete and self.hardware_covers is not False

    @property
    def narrower(self) -> str:
        """How the setup is narrower than the paper's ("" where it covers it)."""
        why = [] if self.coverage_complete else ["a narrower setup than the paper's"]
        if self.hardware_covers is False:
            hw = self.claim.hardware
            why.append(f"run on {self.device}, not {hw.needs} ({hw.source})")
        return "; ".join(why)

    def margin(self, c: Comparison) -> float | None:
        """``c``'s margin δ, resolved against its worse arm and its floor (None: *beats*)."""
        est, floor = self.estimates, self.estimates[c.floor] if c.floor else None
        return c.margin.resolve(est[c.worse].iqm, floor and floor.iqm) if c.margin else None

    def against(self, c: Comparison):
        """What ``c`` judges its better arm against: the worse arm, moved by the paper's
        number where ``c`` tests it."""
        worse, effect = self.estimates[c.worse], self.claim.paper_effect
        if not c.effect:
            return worse
        if effect is None:
            raise ValueError(f"{c} tests the paper's number: the claim states none")
        return effect.apply(worse, self.claim.higher_is_better)

    def _judge(self, c: Comparison, against, tag: str = "") -> Judgement:
        est = self.estimates
        return judge(
            est[c.better],
            against,
            c.relation,
            self.claim.higher_is_better,
            stable_seed(self.claim.claim_id, str(c), "difference" + tag),
            margin=self.margin(c),
            floor=est[c.floor] if c.floor else None,
            ceiling=est[c.ceiling] if c.ceiling else None,
            sides=[est[s] for s in c.sides],
            real=(est[c.better], est[c.worse]),  # edges read the arms as run, never moved
            reps=self.reps,
            power_experiments=self.power_experiments,
        )

    @cached_property
    def outcomes(self) -> list[Outcome]:
        """Each comparison judged (bootstraps seeded by the claim's id and the comparison); a
        comparison of the paper's number against ``worse`` moved by it, the bare direction
        judged beside it."""
        est, effect = self.estimates, self.claim.paper_effect
        out = []
        for c in self.comparisons:
            if c.effect:
                j = self._judge(c, self.against(c), " effect")
                direction = self._judge(c, est[c.worse])
            else:
                j, direction = self._judge(c, est[c.worse]), None
            out.append(Outcome(c, j, None, direction, effect))
        # "every one holds" (or, its mirror, "every one fails") is an intersection-union
        # test: each comparison at 5% already bounds it, no correction
        if len({o.outcome for o in out}) == 1 and out[0].outcome in (HOLDS, FAILS):
            return out
        adjusted = holm([o.judgement for o in out])
        return [
            replace(o, judgement=a, alone=None if a is o.judgement else o.judgement)
            for o, a in zip(out, adjusted, strict=True)
        ]

    @property
    def copies(self) -> list[tuple[str, str]]:
        """(better, worse) of each comparison between copies (:func:`memrl.stats.copies.copies`)."""
        return copies(self.estimates, self.comparisons)

    @property
    def collapsed(self) -> list[str]:
        """Compared arms that copy a third item by item on some or all of their seeds, as
        sentences for the verdict's detail (:func:`memrl.stats.copies.collapsed`)."""
        return collapsed(self.estimates, self.comparisons)

    @property
    def multiplicity(self) -> str | None:
        """How the claim's comparisons are corrected together (None: only one)."""
        return "holm" if len(self.comparisons) > 1 else None

    @property
    def control_clears(self) -> bool | None:
        """Whether the positive control's CI clears the claim's floor (None: no control or
        no floor)."""
        floor = self.control_floor or next((c.floor for c in self.comparisons if c.floor), None)
        if self.positive_control is None or floor is None:
            return None
        seed = stable_seed(self.claim.claim_id, "positive control", floor)
        return clears(
            self.positive_control[1], self.estimates[floor], self.claim.higher_is_better, seed
        )

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
            self.covers,
            self.claim.regime,
            self.coverage,
            self.below_floor,
            unmet=[c.condition for c in self.conditions if not c.met],
            copies=self.copies,
            collapsed=self.collapsed,
            learners=self.failed_learners,
            narrower=self.narrower,
        )

    @property
    def failed_learners(self) -> list[str]:
        """Each trained arm that failed its learnability control, as a sentence naming the
        arm and the setting (a control not measured, ``passed=None``, is not a failure)."""
        return [
            f"{lc.arm} does not learn in {lc.setting}" + (f" ({lc.detail})" if lc.detail else "")
            for lc in self.learners
            if lc.passed is False
        ]

    @property
    def verdict(self) -> str:
        return str(self.decision)

    def _run_arms(self) -> dict[str, int]:
        """Each run arm's seeds (paper constants, floors and ceilings left out)."""
        edges = {c.floor for c in self.comparisons} | {c.ceiling for c in self.comparisons}
        return {k: e.n for k, e in self.estimates.items() if e.n and k not in edges}

    @property
    def n_seeds(self) -> int:
        """The fewest seeds of a run arm that ran on several; an arm run once beside them (a
        deterministic method is one run) is named by :attr:`one_run` instead of making the
        claim read "1 seed"."""
        seeds = self._run_arms().values()
        return min((n for n in seeds if n > 1), default=min(seeds, default=0))

    @property
    def one_run(self) -> list[str]:
        """The run arms of one run beside arms of several seeds."""
        arms = self._run_arms()
        return [k for k, n in arms.items() if n == 1] if max(arms.values(), default=0) > 1 else []

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
            "against": self.control_floor
            or next((c.floor for c in self.comparisons if c.floor), None),
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
            "one_run": self.one_run,
            "budget": self.budget,
            "verdict": self.verdict,
            "category": self.decision.category,
            "reason": self.decision.reason,
            "detail": self.decision.detail,
            "conditions": [asdict(c) for c in self.conditions],
            "positive_control": self._control_row(),
            "learners": [lc.as_dict() for lc in self.learners],
            "coverage_complete": self.covers,
            "device": self.device or None,
            "hardware": None
            if self.claim.hardware is None
            else {**asdict(self.claim.hardware), "covers": self.hardware_covers},
            "coverage_note": self.coverage_note,
            "deviations": list(self.deviations),
            "extra": dict(self.extra),
        }
