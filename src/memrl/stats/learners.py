"""Learnability controls: a trained arm shown able to learn before its failure is evidence.

A :class:`LearnerCheck` records, for one trained arm, a setting where a better policy is
known to exist (a surrogate reader, the baseline's own full-length run) and whether the
learner found it there. A family builds them from its runs; :class:`memrl.stats.claims.
ClaimResult` takes them as ``learners`` and an arm that fails its control makes the verdict
*inconclusive (learner)*, naming the arm and the setting.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from memrl.stats.bootstrap import difference
from memrl.stats.compare import clears

PASSED = {True: "passed", False: "failed", None: "not measured"}  # a control's outcome, in words


@dataclass(frozen=True)
class LearnerCheck:
    """One trained arm's learnability control.

    :param arm: the arm's name in the claim's estimates
    :param setting: where a better policy is known to exist (e.g. "the deterministic reader",
        "DQN's full 50,000-step run")
    :param passed: the learner found the better policy there (``None``: not measured)
    :param detail: the numbers behind ``passed`` (the learner's score, the better policy's,
        the difference and its CI), for the report
    """

    arm: str
    setting: str
    passed: bool | None
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def learns(
    arm: str,
    setting: str,
    learner,
    known,
    higher_is_better: bool,
    seed: int,
    known_name: str = "the floor",
) -> LearnerCheck:
    """The control that ``learner`` (an arm's runs in ``setting``) lies beyond ``known`` (the
    floor it must clear, or the better policy it must reach: an arm or a constant), judged as
    a floor is (:func:`memrl.stats.compare.clears`: the CI of the difference above 0, paired
    where both share items); the numbers go in the detail."""
    passed = clears(learner, known, higher_is_better, seed)
    try:
        d = difference(learner, known, higher_is_better, seed)
        gap = f"; difference {d.iqm:+.4g} [{d.ci_low:+.4g}, {d.ci_high:+.4g}]"
    except ValueError:  # nothing varies on either side: the numbers alone
        gap = ""
    k = f"{known.iqm:.4g}" if hasattr(known, "iqm") else f"{float(known):.4g}"
    own = f"{learner.iqm:.4g} [{learner.ci_low:.4g}, {learner.ci_high:.4g}]"
    detail = f"{own} against {known_name} {k}{gap}"
    return LearnerCheck(arm, setting, passed, detail)
