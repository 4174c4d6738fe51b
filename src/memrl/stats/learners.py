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
