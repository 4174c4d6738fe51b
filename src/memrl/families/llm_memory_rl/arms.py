"""The LLM family's arms as its claims resample them, and Memory-R1's learnability control
(issue 71): shared items resampled paired, runs that are all one run entered as that run, and
the GRPO manager judged under the deterministic reader before its failure counts; the
positive controls' arms and the trained runs' checkpoint series."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from memrl.families.llm_memory_rl.tables import MR1_LABELS, READER, SUPERVISED, Runs
from memrl.stats.aggregate import stable_seed
from memrl.stats.bootstrap import Arm, arm
from memrl.stats.claims import Claim
from memrl.stats.floors import labelled_arm
from memrl.stats.learners import LearnerCheck, learns

QUESTIONS = "the dialogues' test questions"  # the item set Memory-R1's arms share
# every REMEMBERER arm and shop floor plays the same test tasks in every run, every AgentFly
# arm the same tasks: resampled paired by task (issue 71)
SHOP_TASKS, FLY_TASKS = "the shop's test tasks", "AgentFly's tasks"


def runs_arm(values, claim_id: str, name: str, reps: int, items, shared: str) -> Arm:
    """An arm of runs scored on ``shared`` items; runs that are all one run item by item (a
    method deterministic on these tasks, whatever its seeds) enter as that one run, its
    spread from its items: 8 copies entered as 8 seeds make two equal deterministic policies
    differ in 32-39% of simulated experiments, one run each in 3-5% (issue 71)."""
    values, items = [float(v) for v in values], [list(i) for i in items]
    if len(items) > 1 and all(i == items[0] for i in items) and len(set(values)) == 1:
        values, items = values[:1], items[:1]
    return arm(values, claim_id, name, reps, items=items, shared=shared)


SETTING = (
    f"the {READER} (answers with the candidate named in the top-ranked retrieved memory), "
    "where the gold bank answers far more held-out questions (the validation and test "
    "conversations) than the Mem0-style heuristic"
)


def reader_control(cfg, runs: Runs, claim: Claim) -> tuple[LearnerCheck, dict[str, float]]:
    """GRPO's learnability control (issue 71): the manager trained as the GRPO arm is, under
    the deterministic reader, must beat the Mem0-style heuristic there (the CI of the paired
    difference on the test questions above 0); with each manager's exact match under it."""
    df, grpo = runs.controls, MR1_LABELS["grpo"]
    rows = df[df.control == READER].sort_values("run") if "control" in df else df
    if not len(rows):
        return LearnerCheck(grpo, SETTING, None, "not run"), {}
    shared = f"the dialogues' validation and test questions under the {READER}"

    def side(name: str, rs: pd.DataFrame) -> Arm:
        return arm(
            None,
            claim.claim_id,
            f"{MR1_LABELS.get(name, name)} · {READER}",
            cfg.bootstrap_reps,
            items=[r.managers[name]["em"] for _, r in rs.iterrows()],
            clusters=[r.managers[name]["conversation"] for _, r in rs.iterrows()],
            shared=shared,
        )

    heuristic = MR1_LABELS["heuristic"]
    check = learns(
        grpo,
        SETTING,
        side("grpo", rows),
        side("heuristic", rows.iloc[:1]),  # deterministic: one run
        claim.higher_is_better,
        stable_seed(claim.claim_id, "learner"),
        known_name=f"the {heuristic}",
    )
    means = {
        MR1_LABELS.get(k, k): round(float(np.mean([np.mean(m[k]["em"]) for m in rows.managers])), 4)
        for k in rows.managers.iloc[0]
    }
    if SUPERVISED in means:  # the policy class's own ceiling, trained without RL
        check = replace(check, detail=f"{check.detail}; {SUPERVISED}: {means[SUPERVISED]:.4g}")
    return check, means


def control_arm(
    cfg, runs: Runs, claim: Claim, name: str, env: str, value, items, clusters=None, shared=""
) -> dict[str, Arm]:
    """``{label: arm}`` of the positive control ``name`` on ``env`` (``value``: a column or a
    function of its row, ``items`` / ``clusters`` functions of its row), or ``{}``."""
    label = f"{name} · {env} (positive control)"
    return labelled_arm(
        runs.controls,
        "control",
        name,
        env,
        claim.claim_id,
        label,
        value,
        cfg.bootstrap_reps,
        items=items,
        clusters=clusters,
        shared=shared,
    )


def runs_of(df: pd.DataFrame) -> int:
    """The fewest runs of a condition in ``df`` (a budget's count, from the runs it
    describes, never ``cfg.seeds``)."""
    return int(df.groupby("condition").run.nunique().min())


def per_checkpoint(values: pd.Series, k: int) -> np.ndarray:
    """Runs x ``k`` checkpoints of a list-valued column (a run that does not train has one
    value, which stands at every checkpoint)."""
    return np.array([v if len(v) == k else v * k for v in values], dtype=float)


def checkpointed(
    df: pd.DataFrame, column: str, labels: dict[str, str]
) -> tuple[list[float], dict[str, np.ndarray]]:
    """The checkpoint fractions of the trained runs and, per condition's label, runs x
    checkpoints of ``column``."""
    fractions = list(max(df.checkpoints, key=len))
    return fractions, {
        labels[c]: per_checkpoint(g[column], len(fractions))
        for c, g in df.groupby("condition", sort=False)
    }
