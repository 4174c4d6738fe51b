"""AgentFly / Memento (Zhou et al. 2025): a frozen LLM planning with retrieved cases.

At the start of an episode the case-selection policy picks K = 4 past cases (task,
plan, outcome) from the :class:`~memrl.memory.cases.CaseBank`; they stay in the prompt for
the whole episode (so their KV cache is computed once per episode).  At each page the LLM
scores the admissible actions.  After the episode the case is written back to the bank
and, with parametric selection, Q(s, c) learns from the outcome of the cases it used.
Without a bank the agent is the plain LLM (the "no memory" baseline).
"""

from __future__ import annotations

import numpy as np

from memrl.agents.rlem import EpisodeResult
from memrl.envs.shop import ShopEnv, ShopTask
from memrl.llm.embeddings import Embedder
from memrl.llm.scoring import Scorer
from memrl.memory.cases import Case, CaseBank

PREFIX = (
    "You are a web shopping agent. Past cases show the plans followed on similar tasks and "
    "their outcomes. Choose the next action for the current task.\n\n"
)


def step_prompt(task: str, observation: str) -> str:
    """The current page after the cases; the admissible actions are the scored continuations."""
    return f"Task: {task}\nPage: {observation}\nNext action:"


class CaseAgent:
    """Choose shop actions with an LLM scorer, prompted with cases selected from a bank."""

    def __init__(
        self,
        scorer: Scorer,
        embedder: Embedder,
        bank: CaseBank | None,
        rng: np.random.Generator,
        temperature: float = 0.1,
    ):
        self.scorer, self.embedder, self.bank = scorer, embedder, bank
        self.rng, self.temperature = rng, temperature
        self.decisions = 0

    def run_episode(self, env: ShopEnv, task: ShopTask, learn: bool = True) -> EpisodeResult:
        """Play ``task``; with ``learn``, store the case and update the selection policy."""
        used = self.bank.select(task.instruction, self.embedder.embed) if self.bank else []
        context = "".join(self.bank.cases[i].text() for i in used) if self.bank else ""
        obs, info = env.reset(options={"task": task})
        actions: list[str] = []
        done = truncated = False
        reward, success = 0.0, False
        while not (done or truncated):
            adm = info["admissible"]
            i = self.scorer.choose(
                PREFIX,
                step_prompt(task.instruction, obs),
                [f" {a}" for a in adm],
                self.temperature,
                self.rng,
                context,
            )
            self.decisions += 1
            actions.append(adm[i])
            obs, reward, done, truncated, info = env.step(adm[i])
            success = bool(info["success"])
        if learn and self.bank is not None:
            self.bank.learn(task.instruction, used, float(reward), self.embedder.embed)
            self.bank.add(Case(task.instruction, tuple(actions), float(reward)))
        return EpisodeResult(float(reward), success, len(actions), tuple(actions))
