"""What REMEMBERER, AgentFly and Memory-R1 say: each claim as data (statement, source, the
paper's value and budget, the number it states), judged by :mod:`.claims` on our runs."""

from __future__ import annotations

from memrl.stats.claims import Budget, Claim, PaperEffect

FAMILY = "llm_memory_rl"
REMEMBERER = (
    "Zhang et al. 2023, Large Language Models Are Semi-Parametric Reinforcement "
    "Learning Agents (REMEMBERER)"
)
AGENTFLY = "Zhou et al. 2025, AgentFly / Memento: Fine-tuning LLM Agents without Fine-tuning LLMs"
MEMORY_R1 = "Yan et al. 2025, Memory-R1: Enhancing LLM Agents to Manage and Utilize Memories via RL"
EPISODES = "training episodes (epochs x training tasks)"
ITERATIONS = "iterations over the task set"
SCALE = "model scale"  # the LLM conditions do not clear a policy that knows nothing

_RLEM_STATEMENT = (
    "An experience memory updated by RL (RLEM) raises the {what} of a frozen LLM "
    "agent above static exemplars, which beat the LLM alone."
)
_RLEM_VALUE = (
    "qualitative: RLEM > static exemplars (ReAct-style) > LLM only; RLEM +4% SR over "
    "the prior state of the art (table values not retrieved)"
)
LLM_1 = Claim(
    family=FAMILY,
    claim_id="LLM-1",
    paper=REMEMBERER,
    source="Sec. 4.2, Table 1 (WebShop)",
    statement=_RLEM_STATEMENT.format(what="success rate"),
    paper_value=_RLEM_VALUE,
    metric="success rate on the test tasks after training",
    higher_is_better=True,
    regime="final",
    paper_budget=Budget(30, EPISODES),
    below_floor=SCALE,
)
LLM_2 = Claim(
    family=FAMILY,
    claim_id="LLM-2",
    paper=REMEMBERER,
    source="Sec. 4.2, Table 1 (WebShop)",
    statement=_RLEM_STATEMENT.format(what="score (WebShop reward)"),
    paper_value=_RLEM_VALUE,
    metric="score (WebShop reward) on the test tasks after training",
    higher_is_better=True,
    regime="final",
    paper_budget=Budget(30, EPISODES),
    below_floor=SCALE,
)
LLM_3 = Claim(
    family=FAMILY,
    claim_id="LLM-3",
    paper=REMEMBERER,
    source="Sec. 4.3, Table 3 (robustness)",
    statement="RLEM's gain over static exemplars holds across different initial experience memories "
    "and training sets.",
    paper_value="qualitative: RLEM beats the static baseline for 2 initial memories x 2 training sets",
    metric="test score of RLEM minus static exemplars, paired per run",
    higher_is_better=True,
    regime="final",
    paper_budget=Budget(30, EPISODES),
    below_floor=SCALE,
)
LLM_4 = Claim(
    family=FAMILY,
    claim_id="LLM-4",
    paper=REMEMBERER,
    source="Sec. 4.4, Table 4 (ablations)",
    statement="Both n-step bootstrapping in the Q update and showing discouraged actions contribute "
    "to RLEM's performance.",
    paper_value="qualitative: removing either lowers success rate and score",
    metric="score on the test tasks after training",
    higher_is_better=True,
    regime="final",
    paper_budget=Budget(30, EPISODES),
    below_floor=SCALE,
)
LLM_5 = Claim(
    family=FAMILY,
    claim_id="LLM-5",
    paper=AGENTFLY,
    source="Sec. 4, Table 3 / Fig. 4 (iterations)",
    statement="Case-based memory raises an LLM agent's results, and a learned (parametric) case "
    "selection does better than similarity (non-parametric) retrieval.",
    paper_value="DeepResearcher after 5 iterations: parametric 85.44 >= non-parametric 84.85 >= no "
    "memory 84.47 (F1, cumulative)",
    metric="best score per task up to iteration {n}, mean over tasks",
    higher_is_better=True,
    regime="final",
    paper_budget=Budget(5, ITERATIONS),
    below_floor=SCALE,
    # the smaller of the two steps, on a [0, 1] scale (F1 points / 100)
    paper_effect=PaperEffect(
        "difference", 0.0038, "84.85 >= 84.47 F1 (+0.38 points, the smaller step)", "Table 3"
    ),
)
LLM_6 = Claim(
    family=FAMILY,
    claim_id="LLM-6",
    paper=AGENTFLY,
    source="Sec. 4, Fig. 4 (continual learning over iterations)",
    statement="With a case bank the agent improves over iterations on the same tasks, without "
    "changing the LLM's weights.",
    paper_value="DeepResearcher: parametric 80.46 -> 85.44, non-parametric 79.84 -> 84.85 (iteration 1 -> 5)",
    metric="score of each iteration's episodes (not cumulative)",
    higher_is_better=True,
    regime="final",
    paper_budget=Budget(5, ITERATIONS),
    below_floor=SCALE,
    # the smaller of the two gains, on a [0, 1] scale (the paper's F1 in points / 100; our
    # shop score is another task's [0, 1] measure)
    paper_effect=PaperEffect(
        "difference", 0.0498, "+4.98 F1 points from iteration 1 to 5 (parametric)", "Fig. 4"
    ),
)
_MR1_STATEMENT = (
    "A memory manager trained with RL (GRPO) from the answer agent's exact match "
    "raises the answer agent's {what} above a Mem0-style manager and the same LLM "
    "prompted to manage memory without RL."
)
LLM_7 = Claim(
    family=FAMILY,
    claim_id="LLM-7",
    paper=MEMORY_R1,
    source="Sec. 4, Table 1 (LoCoMo)",
    statement=_MR1_STATEMENT.format(what="F1"),
    paper_value="LLaMA-3.1-8B on LoCoMo: Memory-R1-GRPO 45.02 F1 vs Mem0 30.41 (Memory-R1-PPO 41.05)",
    metric="F1 of the answer agent on the test questions",
    higher_is_better=True,
    # GRPO over Mem0: 45.02 - 30.41 F1 points, on our F1's [0, 1] scale
    paper_effect=PaperEffect(
        "difference", 0.1461, "45.02 F1 against Mem0's 30.41 (+14.61 points)", "Table 1"
    ),
    regime="final",
    paper_budget=None,
    below_floor=SCALE,  # GRPO epochs / steps not retrieved
)
LLM_8 = Claim(
    family=FAMILY,
    claim_id="LLM-8",
    paper=MEMORY_R1,
    source="Sec. 4, Table 1 (LoCoMo)",
    statement=_MR1_STATEMENT.format(what="exact match"),
    paper_value="qualitative: the RL-trained manager beats Mem0 and the untrained LLM manager (EM is the "
    "training reward; table reports F1 / BLEU-1 / LLM-judge)",
    metric="exact match of the answer agent on the test questions",
    higher_is_better=True,
    regime="final",
    paper_budget=None,
    below_floor=SCALE,
)
