"""Issue 71's verdict inputs in the LLM memory family, on fabricated runs: the shop's arms
resampled paired by task, runs that are all one run entered as one, an iteration copying
the first named (LLM-6), and Memory-R1's learnability control under the deterministic
reader (LLM-7/8)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from test_claims import cfg_of, llm_runs

from memrl.families.llm_memory_rl import claims as llm
from memrl.families.llm_memory_rl.arms import FLY_TASKS, SHOP_TASKS
from memrl.families.llm_memory_rl.tables import LABELS, READER, SUPERVISED
from memrl.stats.bootstrap import paired
from memrl.stats.claims import INCONCLUSIVE


def _cfg():
    return cfg_of("llm_memory_rl").model_copy(update={"seeds": 8})


def _fly(runs, condition: str, scores) -> pd.DataFrame:
    """``runs.fly`` with ``condition``'s runs scoring ``scores(run)`` (iterations x tasks)."""
    fly = runs.fly.copy()
    for i in fly.index[fly.condition == condition]:
        s = [list(map(float, it)) for it in scores(int(fly.at[i, "run"]))]
        fly.at[i, "task_scores"] = s
        fly.at[i, "iter_score"] = [float(np.mean(it)) for it in s]
        fly.at[i, "best_score"] = list(np.maximum.accumulate([float(np.mean(it)) for it in s]))
    return fly


def test_the_shop_arms_are_paired_by_task_and_copies_of_one_run_are_one_run():
    """Every shop arm plays the same test tasks in every run: resampled paired by task. An
    arm whose 8 runs are one run item by item (AgentFly's no-memory agent on its tasks) is
    that one run, its spread from its tasks; an arm whose runs differ keeps its seeds."""
    cfg = _cfg()
    runs = llm_runs(cfg, True)
    r1 = llm.llm_1(cfg, runs)
    rlem, static = r1.estimates[LABELS["rlem"]], r1.estimates[LABELS["static"]]
    assert rlem.shared == static.shared == SHOP_TASKS and paired(rlem, static)
    same = _fly(runs, "none", lambda r: [[0.5, 0.25]] * cfg.agentfly.iterations)
    r5 = llm.llm_5(cfg, runs._replace(fly=same))
    none, para = r5.estimates["no memory"], r5.estimates["parametric"]
    assert none.n == 1 and para.n == cfg.seeds and none.shared == FLY_TASKS
    assert paired(para, r5.estimates["non-parametric"])
    assert "no memory" in r5.one_run
    # the same runs told apart by one task of one run keep their 8 seeds
    differ = _fly(runs, "none", lambda r: [[0.5, 0.25 + (r == 3) * 0.25]] * 5)
    assert llm.llm_5(cfg, runs._replace(fly=differ)).estimates["no memory"].n == cfg.seeds


def test_llm6_names_a_fifth_iteration_that_copies_the_first():
    """LLM-6: the parametric agent's iteration 5 equal to its iteration 1 task by task on 7
    of 8 runs is named in the verdict, whatever the verdict."""
    cfg = _cfg()
    runs = llm_runs(cfg, True)
    n = cfg.agentfly.iterations

    def scores(r: int):
        first = [0.5, 0.2 + 0.04 * r]
        last = [0.75, 0.2 + 0.04 * r] if r == 0 else first
        return [first] + [[0.6, 0.3]] * (n - 2) + [last]

    r = llm.llm_6(cfg, runs._replace(fly=_fly(runs, "parametric", scores)))
    a, b = "parametric · iteration 5", "parametric · iteration 1"
    assert f"{a} scores as {b} on each of {FLY_TASKS} on 7 of 8 seeds" in r.verdict
    assert paired(r.estimates[a], r.estimates[b])


def _reader_rows(cfg, grpo_em: float, heuristic_em: float = 0.6) -> pd.DataFrame:
    """The deterministic reader's control runs: 80 questions in 8 conversations, GRPO's
    manager answering ``grpo_em`` of them (a few questions differ per run), the heuristic's
    ``heuristic_em``."""
    conv = [f"c{i // 10}" for i in range(80)]

    def items(share: float, shift: int = 0) -> list[float]:
        return [float((i * 7 + shift) % 80 < share * 80) for i in range(80)]

    rows = []
    for r in range(cfg.memory_r1_seeds or cfg.seeds):
        managers = {
            "grpo": {"em": items(grpo_em, r), "conversation": conv},
            "heuristic": {"em": items(heuristic_em), "conversation": conv},
            "add_only": {"em": items(0.5), "conversation": conv},
            "gold": {"em": items(0.85), "conversation": conv},
            SUPERVISED: {"em": items(0.55), "conversation": conv},
        }
        rows.append({"control": READER, "env": "dialogues", "run": r, "managers": managers})
    return pd.DataFrame(rows)


def test_memory_r1_reports_its_learnability_control_under_the_deterministic_reader():
    """LLM-7/8: the GRPO arm's control is the same trainer under the deterministic reader,
    where it must beat the Mem0-style heuristic (the CI of the paired difference above 0).
    Beating it leaves the verdict as it was; not beating it makes the verdict inconclusive
    (learner), naming the arm and the setting; no control run is a control not measured."""
    cfg = _cfg()
    runs = llm_runs(cfg, True)
    before = {r.claim.claim_id: r for r in llm.claims(cfg, runs)}
    for cid in ("LLM-7", "LLM-8"):
        lc = before[cid].learners
        assert len(lc) == 1 and lc[0].passed is None and lc[0].arm == "Memory-R1 (GRPO)"
    learns = runs._replace(controls=_reader_rows(cfg, 0.8))
    stuck = runs._replace(controls=_reader_rows(cfg, 0.6))
    for cid, fn in (("LLM-7", llm.llm_7), ("LLM-8", llm.llm_8)):
        ok = fn(cfg, learns)
        assert ok.learners[0].passed is True and ok.verdict == before[cid].verdict
        key = f"learnability control: test exact match under the {READER} (mean over runs)"
        assert ok.extra[key]["Memory-R1 (GRPO)"] > ok.extra[key]["Mem0-style heuristic"]
        bad = fn(cfg, stuck)
        assert bad.learners[0].passed is False
        assert bad.decision.category == INCONCLUSIVE and bad.decision.reason == "learner"
        assert f"Memory-R1 (GRPO) does not learn in the {READER}" in bad.verdict
        # the policy class's own ceiling (the head supervised on the best operations) beside it
        assert f"{SUPERVISED}: 0.55" in bad.learners[0].detail
