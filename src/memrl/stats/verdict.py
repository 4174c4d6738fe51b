"""The one rule that turns judged comparisons into a verdict, on a symmetric scale.

Six categories, each with a mirror (:data:`MIRROR`): flipping the sign of every comparison
gives the mirrored verdict, so what narrows a verdict (a short budget, a narrower setup, an
unmet condition of the paper's) narrows a hold and a fail alike. :data:`VERDICT_RULE` says it
in words (the report prints it); :func:`verdict` applies it; a :class:`Verdict` is data.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from memrl.stats.compare import (
    CEILING,
    DESIGN,
    FAILS,
    HOLDS,
    IDENTICAL,
    MULTIPLICITY,
    NO_SPREAD,
    Judgement,
)

REPRODUCED, PARTIALLY, MIXED, INCONCLUSIVE, CONTRADICTED, NOT_REPRODUCED = (
    "reproduced",
    "partially",
    "mixed",
    "inconclusive",
    "partially contradicted",
    "not reproduced",
)
# categories in report order: the scale runs from the paper's way to the opposite, and
# flipping the sign of every comparison maps each category to its mirror
VERDICTS = (REPRODUCED, PARTIALLY, MIXED, INCONCLUSIVE, CONTRADICTED, NOT_REPRODUCED)
MIRROR = {
    REPRODUCED: NOT_REPRODUCED,
    PARTIALLY: CONTRADICTED,
    MIXED: MIXED,
    INCONCLUSIVE: INCONCLUSIVE,
    CONTRADICTED: PARTIALLY,
    NOT_REPRODUCED: REPRODUCED,
}
EARLY, FINAL = "early", "final"
LEARNER = "learner"  # a trained arm failed its learnability control
LOW_COVERAGE = 0.5  # below this share of the paper's budget a final-regime "no" is "not yet"

VERDICT_RULE = (
    "Each claim is a set of comparisons in the paper's direction, each judged on the "
    "*difference* A − B (IQM over seeds, > 0 the paper's way) with a 95% CI from a bootstrap "
    "over the seeds of both arms. *A beats B* **holds** when the CI lies above 0 and "
    "**fails** when it lies below 0 (mirror images: a CI touching 0 decides nothing); *A matches or beats B* is an equivalence test "
    "with a declared margin δ (its source beside it): it holds when the CI's lower end is "
    "above −δ and fails when its upper end is below −δ; otherwise the comparison is "
    "**undecided**. Where the paper states a number (*over five times faster*, *two orders "
    "of magnitude*, a level of success), that number is the comparison: A against B scaled "
    "or shifted by it, the bare direction reported beside it. Every claim names its "
    "**floor**, the score of a policy with no learning or no knowledge, run in the same envs "
    "and seeds, and its **ceiling** where the task has a maximum: whether an arm clears its "
    "floor (or lies below its ceiling) is decided on the CI of its difference from it; a "
    "comparison in which no arm clears the floor, or no arm lies below the ceiling (a tie at "
    "the top), is undecided, whatever its difference; so is one whose CI has no width (*no "
    "spread*), one between copies (*identical* per-seed and per-item values: more seeds are "
    "more copies; an arm that equals a third item by item, on some or all of its seeds, is "
    "named in the verdict's detail), and one whose design no outcome could decide at 95% "
    "(*design*: 3 seeds against 3, 5 against a constant, 5 of 5 successes against one "
    "half). Where a run's value is a mean over items (test questions, tasks) the bootstrap "
    "resamples the items "
    "within each seed too (questions by conversation), the same draws for arms scored on the "
    "same items (paired); a deterministic method is one run with its items, never copied per "
    "seed. Where a verdict rests on *some* comparisons, their decisions stand only as far as "
    "Holm–Bonferroni's step-down over the claim's comparisons allows (*multiplicity* "
    "otherwise). **The scale is symmetric**: flipping the sign of every comparison maps each "
    "verdict to its mirror. **reproduced**: every comparison holds on a setup that covers "
    "the paper's; **not reproduced**: every comparison fails on such a setup; **partially** "
    "and its mirror **partially contradicted**: comparisons hold (fail) and none fails "
    "(holds), but not all of them decide, or the setup is narrower than the paper's, named "
    "in the reason: *budget* (a *final*-regime claim run at < 50% of the paper's budget), "
    "*coverage* (fewer tasks or sizes, a smaller model, or other hardware than the paper's "
    "statement rests on, such as a CPU for a speed-up the paper attributes to parallel scans "
    "on accelerators) or an unmet *condition* (only one "
    "the paper's own statement carries, quoted); **mixed**: some comparisons hold and some "
    "fail (its own mirror); **inconclusive** when nothing decides, with its reason: *floor* "
    "(no compared method clears its floor; a declared reason such as *model scale* only "
    "where a *positive control*, the method given what it needs to succeed and scored like "
    "the floor, sits at the floor too), *ceiling*, *budget*, *identical*, *design* or "
    "*power* (with the seeds per arm a decision would need at the observed difference). "
    "Every trained arm whose verdict can rest on it not having learned shows, in a setting "
    "where a better policy is known to exist (a baseline's own full run, a surrogate reader), "
    "that it finds it: an arm that fails this *learnability control* makes the verdict "
    "**inconclusive (learner)**, naming it, whatever its comparisons (a hold and a fail alike)."
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
        if not self.reason:  # a plain verdict with a fact beside it (an arm's collapse)
            return self.detail
        return f"{self.reason}{'; ' if self.reason == 'floor' else ': '}{self.detail}"

    def __str__(self) -> str:
        return f"{self.category} ({self.why})" if self.why else self.category

    def mirrored(self) -> str:
        """The category flipping every comparison's sign should give."""
        return MIRROR[self.category]


def share(x: float | None) -> str:
    """A coverage as a percentage that stays readable when small: 10%, 0.19%, ``?``."""
    if x is None:
        return "?"
    return f"{x:.0%}" if x >= 0.1 else f"{100 * x:.2g}%"


def verdict(
    judgements: list[Judgement],
    coverage_complete: bool = True,
    regime: str = EARLY,
    coverage: float | None = None,
    below_floor: tuple[str, str] = ("floor", ""),
    unmet: Sequence[str] = (),
    copies: Sequence[tuple[str, str]] = (),
    collapsed: Sequence[str] = (),
    learners: Sequence[str] = (),
    narrower: str = "",
) -> Verdict:
    """Apply :data:`VERDICT_RULE` to judged comparisons (``coverage``: our budget / the
    paper's, None if unknown; ``below_floor``: the reason and detail a claim whose methods
    all sit at their floor is inconclusive for; ``unmet``: the claim's conditions our runs do
    not meet; ``copies``: (arm, the arm it equals); ``collapsed``: arms that equal another
    on some seeds, said in the detail of whatever verdict the judgements give; ``learners``:
    each trained arm that failed its learnability control: the verdict is *inconclusive
    (learner)* whatever the judgements, a hold and a fail alike; ``narrower``: how the setup
    is narrower than the paper's, the detail of *coverage*).
    Symmetric: the judgements with every sign flipped give :data:`MIRROR` of the verdict."""
    if not judgements:
        raise ValueError("a claim needs at least one comparison")
    if learners:  # sign-free: no comparison's direction enters, so the mirror is itself
        v = Verdict(INCONCLUSIVE, LEARNER, "; ".join(learners))
        return v if not collapsed else replace(v, detail="; ".join((v.detail, *collapsed)))
    v = _verdict(
        judgements, coverage_complete, regime, coverage, below_floor, unmet, copies, narrower
    )
    if not collapsed:
        return v
    return replace(v, detail="; ".join(t for t in (v.detail, *collapsed) if t))


def _verdict(
    judgements: list[Judgement],
    coverage_complete: bool,
    regime: str,
    coverage: float | None,
    below_floor: tuple[str, str],
    unmet: Sequence[str],
    copies: Sequence[tuple[str, str]],
    narrower: str = "",
) -> Verdict:
    outcomes = [j.outcome for j in judgements]
    short = regime == FINAL and coverage is not None and coverage < LOW_COVERAGE
    narrow = [("condition", f"not met: {u}") for u in unmet]
    if short:
        narrow.append(("budget", f"{share(coverage)} of the paper's budget"))
    if not coverage_complete:
        narrow.append(("coverage", narrower or "a narrower setup than the paper's"))
    held, failed = outcomes.count(HOLDS), outcomes.count(FAILS)
    if held and failed:
        detail = f"{held} of {len(outcomes)} comparisons hold, {failed} fail"
        return Verdict(MIXED, "comparisons", "; ".join([detail, *(d for _, d in narrow)]))
    if held or failed:
        whole = (held or failed) == len(outcomes)
        if whole and not narrow:
            return Verdict(REPRODUCED if held else NOT_REPRODUCED)
        why = [d for _, d in narrow] + ([] if whole else ["not every comparison decides"])
        kind = narrow[0][0] if narrow else "comparisons"
        return Verdict(PARTIALLY if held else CONTRADICTED, kind, "; ".join(why))
    reasons = [j.reason for j in judgements]
    if all(r == "floor" for r in reasons):
        return Verdict(INCONCLUSIVE, *below_floor)
    if all(r in ("floor", CEILING) for r in reasons):
        n = reasons.count(CEILING)
        return Verdict(INCONCLUSIVE, CEILING, f"{n} of {len(reasons)} at the task's maximum")
    if short:
        return Verdict(INCONCLUSIVE, "budget")
    if copies:
        same = "; ".join(f"{a} equals {b} on every seed and item" for a, b in copies)
        return Verdict(INCONCLUSIVE, IDENTICAL, f"{same}: more seeds are more copies")
    if DESIGN in reasons:
        need = max(j.seeds_needed or 0 for j in judgements if j.reason == DESIGN)
        return Verdict(
            INCONCLUSIVE, DESIGN, f"no outcome can decide at these seeds; ~{need} per arm could"
        )
    needed = [j.seeds_needed for j in judgements if j.reason == "power"]
    edges = sum(r in ("floor", CEILING) for r in reasons)
    # seeds decide only what is not at the floor or the ceiling: say so where some are
    sit = "sits" if edges == 1 else "sit"
    kinds = {r for r in reasons if r in ("floor", CEILING)}
    where = " or ".join(f"the {k}" for k in sorted(kinds))  # "the ceiling or the floor"
    at_edge = f"{edges} of {len(reasons)} comparisons {sit} at {where}" if edges else ""

    def power(detail: str = "") -> Verdict:
        return Verdict(INCONCLUSIVE, "power", "; ".join(t for t in (detail, at_edge) if t))

    if not needed and MULTIPLICITY in reasons:
        return Verdict(INCONCLUSIVE, MULTIPLICITY, "no decision survives Holm's correction")
    if not needed and (NO_SPREAD in reasons or IDENTICAL in reasons):
        return Verdict(INCONCLUSIVE, NO_SPREAD, "the compared runs do not vary")
    if any(n == 0 for n in needed):
        return power()
    if any(n is None for n in needed):
        return power("not decided at 100 seeds per arm in simulation")
    return power(f"~{max(needed)} seeds per arm would decide")
