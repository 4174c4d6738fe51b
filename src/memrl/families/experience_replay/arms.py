"""The experience-replay family's arms as its claims build them: a stored metric per seed
as an arm, and the floor run on a task (both the replay papers' claims and the streaming
paper's use them)."""

from __future__ import annotations

import pandas as pd

from memrl.families.experience_replay.params import ExperienceReplayParams
from memrl.stats.bootstrap import arm
from memrl.stats.claims import Claim
from memrl.stats.floors import NO_FLOOR_RUNS, floor_arm
from memrl.stats.floors import name as floor_name

FAMILY = "experience_replay"
STEPS = "env steps"
Runs = dict[str, pd.DataFrame]  # the family's stored tables by name (:func:`~.tables.load`)


def arm_of(cfg: ExperienceReplayParams, claim: Claim, name: str, values):
    """``values`` (one per seed) as the arm ``name`` of ``claim``."""
    return arm(values, claim.claim_id, name, cfg.bootstrap_reps)


def floor_of(cfg: ExperienceReplayParams, floors, claim: Claim, env: str, floor: str = "random"):
    """(``{name: arm}`` of the floor on ``env``, its name or None, the claim's floor_reason)."""
    got = floor_arm(floors, claim.claim_id, env, floor=floor, reps=cfg.bootstrap_reps)
    name = floor_name(floor, env) if got else None
    return got, name, "" if got else NO_FLOOR_RUNS
