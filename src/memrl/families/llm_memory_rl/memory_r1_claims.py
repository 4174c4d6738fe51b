"""Memory-R1's claims (LLM-7, LLM-8): the GRPO-trained memory manager against the untrained
managers on the dialogues' test questions, with its learnability control under the
deterministic reader (issue 71)."""

from __future__ import annotations

import numpy as np

from memrl.families.llm_memory_rl.arms import (
    QUESTIONS,
    checkpointed,
    control_arm,
    reader_control,
    runs_of,
)
from memrl.families.llm_memory_rl.params import LLMMemoryRLParams
from memrl.families.llm_memory_rl.setups import model_name, narrower
from memrl.families.llm_memory_rl.statements import LLM_7, LLM_8
from memrl.families.llm_memory_rl.tables import (
    MR1_LABELS,
    READER,
    Runs,
    memory_r1_ops,
    operation_fit,
)
from memrl.stats.bootstrap import arm
from memrl.stats.claims import Budget, Claim, ClaimResult, Comparison
from memrl.stats.floors import NO_FLOOR_RUNS, floor_arm
from memrl.stats.trend import trends

# a prompted LLM manager counts as a baseline only if it mostly picks the operation a turn
# calls for: Memory-R1's untrained manager is a working one (issue 28)
MIN_OPERATION_FIT = 0.9
# (what our model does, on what; the paper's models and benchmarks)
_MR1_SETUP = (
    "answering from an MLP manager's bank, on generated LoCoMo-like dialogues",
    "LLaMA-3.1-8B or Qwen-2.5-7B as manager and answer agent, on LoCoMo",
)


def _mr1_deviations(cfg: LLMMemoryRLParams) -> list[str]:
    hp = cfg.memory_r1
    return [
        f"manager: an MLP head ({hp.hidden} units) on frozen MiniLM embeddings of the fact and "
        f"its {hp.related_k} most related memories (paper: LLaMA-3.1-8B / Qwen-2.5-7B fine-tuned)",
        f"answer agent: {model_name(cfg)} choosing among candidate answers by log-likelihood from "
        f"the top {hp.answer_k} memories (paper: the LLM generates from 60 retrieved memories "
        "after distilling them)",
        "data: generated LoCoMo-like dialogues (facts introduced, changed, retracted, restated; "
        "single-hop, multi-hop and temporal questions), split like the paper's 152 / 81 / rest "
        "questions by whole conversations",
        "UPDATE: the paper's manager writes the updated memory m' and merges the new fact into "
        'the old (Sec. 3.1, Eq. 1; Appendix A.1: the Buddy memory updated to "... and later '
        "adopted another dog named Scout\"); ours picks the operation only, m' a fixed merge: "
        "the memory's sentences on the attribute the fact changes or retracts give way to it, "
        "its other facts stay",
        "reward, as the paper's Sec. 3.1 defines it: one training tuple per turn carrying a "
        "fact (Algorithm 1: the bank built from the preceding turns, the turn, the QA linked "
        f"to it); G = {hp.group} operations sampled per state, each applied to the bank and "
        "rewarded by the answer agent's exact match on the turn's question (\"the updated "
        "memory bank is passed to the frozen Answer Agent ... R_answer = EM(y_pred, "
        'y_gold)", Eq. 4), standardised within the group (Eq. 3); the paper states no G. '
        "The bank before a turn holds the facts as the earlier turns left them (the paper's "
        "is built by GPT-4o-mini from the preceding 24 turns; ours are shorter). Issue 56's "
        "whole-dialogue reward (every operation sharing the EM on all the dialogue's "
        "questions) is not the paper's and chose ADD on every test turn",
        f"start: the head cloned from the Mem0-style heuristic ({hp.warm_start_epochs} "
        "epochs, on the training tuples' states and the heuristic's own; "
        f"{hp.warm_start_explore:g} of the target spread over every valid operation), the KL "
        "reference (the paper's manager starts as an instruct LLM prompted with Mem0's "
        "instructions, which gives every operation some probability; an untrained head "
        "knows no operation)",
        "trained: the memory manager only; the answer agent stays the frozen LLM (the paper "
        "trains both with RL: the manager, then the answer agent on the trained manager's "
        "memories)",
        f"Mem0-style heuristic: similarity thresholds (NOOP at cos >= {hp.heuristic_noop:g}, "
        f"UPDATE at >= {hp.heuristic_update:g}) instead of Mem0's LLM decision",
    ]


def _last_ops(mr1) -> dict[str, int]:
    """Operations GRPO sampled in its last training epoch, summed over seeds."""
    last = [r[-1] for r in mr1[mr1.condition == "grpo"].train_ops if len(r)]
    return {op: int(sum(d.get(op, 0) for d in last)) for op in (last[0] if last else {})}


def _memory_r1(cfg: LLMMemoryRLParams, runs: Runs, claim: Claim, metric: str, floors):
    hp, mr1 = cfg.memory_r1, runs.mr1
    conds = [c for c in hp.conditions if (mr1.condition == c).any()]
    if "grpo" not in conds or len(conds) < 2:
        return None
    budget = (
        f"GRPO: {hp.epochs} epochs over the training turns, G = {hp.group} operations per "
        "turn, each rewarded by the exact match on the turn's question; "
        f"{int(mr1.questions.iloc[0])} test questions; {runs_of(mr1[mr1.condition == 'grpo'])} "
        "seeds (the baselines "
        "are deterministic: one run each, its spread from its questions resampled by "
        "conversation)"
    )
    ops = memory_r1_ops(mr1)
    fit = operation_fit(ops)
    counts = ops.groupby(level="condition", sort=False).sum()
    shares = counts.div(counts.sum(axis=1), axis=0).round(3)
    op_shares = {
        c: {op: float(shares.loc[c, op]) for op in counts if counts.loc[c, op] > 0}
        for c in counts.index
    }
    per_q, conv = (lambda r: r["items"][metric]), (lambda r: r["items"]["conversation"])
    est = floor_arm(
        floors,
        claim.claim_id,
        "dialogues",
        metric,
        "no memory",
        cfg.bootstrap_reps,
        items=per_q,
        clusters=conv,
        shared=QUESTIONS,
    )
    fl = next(iter(est), None)
    est |= {
        MR1_LABELS[c]: arm(
            g[metric],
            claim.claim_id,
            MR1_LABELS[c],
            cfg.bootstrap_reps,
            items=[per_q(r) for _, r in g.iterrows()],
            clusters=[conv(r) for _, r in g.iterrows()],
            shared=QUESTIONS,  # every arm answers the same test questions: paired
        )
        for c in conds
        for g in [mr1[mr1.condition == c]]
    }
    control = control_arm(
        cfg, runs, claim, "gold memory", "dialogues", metric, per_q, conv, shared=QUESTIONS
    )
    prompted = MR1_LABELS["prompted"]
    working = "prompted" in conds and fit.get(prompted, 0.0) >= MIN_OPERATION_FIT
    # against the Mem0-style manager, the paper's gain where the claim states one (F1)
    stated = claim.paper_effect is not None
    comps = [
        Comparison(MR1_LABELS["grpo"], MR1_LABELS[c], floor=fl, effect=stated and c == "heuristic")
        for c in ("heuristic", "prompted")
        if c in conds and (c != "prompted" or working)
    ]
    left_out = (
        [
            f"prompted LLM left out of the comparisons: {model_name(cfg)} picks the operation "
            f"the turn calls for on {fit[prompted]:.0%} of test turns (a stand-in for the "
            f"untrained LLM manager needs >= {MIN_OPERATION_FIT:.0%})"
        ]
        if "prompted" in conds and not working
        else []
    )
    learner, under_reader = reader_control(cfg, runs, claim)
    fractions, series = checkpointed(mr1, f"checkpoint_{metric}", MR1_LABELS)
    # a deterministic baseline (one run, untrained) is a constant along GRPO's checkpoints
    series = {k: v[0, 0] if len(v) == 1 else v for k, v in series.items()}
    return ClaimResult(
        claim=claim,
        estimates=est,
        ours=MR1_LABELS["grpo"],
        comparisons=comps,
        budget=budget,
        deviations=_mr1_deviations(cfg) + left_out,
        **narrower(cfg, *_MR1_SETUP),
        used=Budget(hp.epochs, "epochs over the training dialogues"),
        trends=trends(claim, comps, series, fractions, cfg.bootstrap_reps),
        trend_note="the test questions halfway through GRPO training and after it (the "
        "untrained managers keep their one test)",
        floor_reason="" if fl else NO_FLOOR_RUNS,
        positive_control=next(iter(control.items()), None),
        learners=[learner],
        control_note="the answer agent reading each test conversation's gold memory bank "
        "(what a perfect manager would keep)",
        extra={
            "f1_by_category": {
                MR1_LABELS[c]: mr1[mr1.condition == c].f1_by_category.iloc[0] for c in conds
            },
            "operations chosen on the test turns (share)": op_shares,
            "GRPO training curve: the sampled operations' exact match on their training "
            "turn's question per epoch (mean over seeds)": [
                round(float(v), 4)
                for v in np.mean(list(mr1[mr1.condition == "grpo"].reward_em), axis=0)
            ],
            "GRPO's sampled operations in its last training epoch (all seeds)": _last_ops(mr1),
            "share of test turns given the operation the turn calls for": {
                c: round(float(v), 3) for c, v in fit.items()
            },
            f"learnability control: test exact match under the {READER} (mean over runs)": (
                under_reader
            ),
        },
    )


def llm_7(cfg: LLMMemoryRLParams, runs: Runs, floors=None) -> ClaimResult | None:
    return _memory_r1(cfg, runs, LLM_7, "f1", floors)


def llm_8(cfg: LLMMemoryRLParams, runs: Runs, floors=None) -> ClaimResult | None:
    return _memory_r1(cfg, runs, LLM_8, "em", floors)
