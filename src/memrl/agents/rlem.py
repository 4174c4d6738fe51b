"""REMEMBERER (Zhang et al. 2023): a frozen LLM plus an experience memory updated by RL.

At every page the agent retrieves the two records most similar to (instruction, page)
from its :class:`~memrl.memory.experience.ExperienceMemory` and shows them as exemplars,
each with the action to encourage (highest Q) and one to discourage, with their
Q-values, in REMEMBERER's "Encouraged: <action> -> <Q>" format.  The prompt ends with
"Encouraged: " for the current page, and the LLM's choice is the admissible action it
finds most likely there (log-likelihood scoring instead of parsing generated text:
see :mod:`memrl.llm.scoring`).  After each training episode the memory's Q-values move
toward n-step bootstrapped targets (RLEM).

Modes: ``llm`` (no exemplars), ``static`` (exemplars from a memory that never learns)
and ``rlem`` (the memory learns from every training episode).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from memrl.envs.shop import ShopEnv, ShopTask
from memrl.llm.embeddings import Embedder
from memrl.llm.scoring import Scorer
from memrl.memory.experience import ExperienceMemory, Record, Step

PREFIX = (
    "You are a web shopping agent. Given an instruction and the current page, "
    "choose the next action from the available actions.\n\n"
)
MODES = ("llm", "static", "rlem")


class EpisodeResult(NamedTuple):
    reward: float
    success: bool
    steps: int
    actions: tuple[str, ...]


def exemplar_text(rec: Record, rng: np.random.Generator, discouraged: bool = True) -> str:
    """One exemplar: the record's page with its encouraged and discouraged actions.

    REMEMBERER's rule: encourage the highest-Q action; if no action has a positive Q,
    encourage a random admissible one with a small random value U(0, 0.5) (exploration).
    Discourage the lowest-Q action when it is below the encouraged one, else a random
    untried action with 0.
    """
    best = rec.best()
    if best is None or best[1] <= 0:
        enc = (str(rng.choice(rec.admissible)), float(rng.uniform(0, 0.5)))
    else:
        enc = best
    lines = [
        f"Instruction: {rec.instruction}",
        f"Page: {rec.observation}",
        f"Encouraged: {enc[0]} -> {enc[1]:.1f}",
    ]
    if discouraged:
        worst = rec.worst()
        if worst is not None and worst[0] != enc[0] and worst[1] < enc[1]:
            dis = worst
        else:
            untried = [a for a in rec.admissible if a not in rec.q and a != enc[0]]
            dis = (str(rng.choice(untried)), 0.0) if untried else None
        if dis is not None:
            lines.append(f"Discouraged: {dis[0]} -> {dis[1]:.1f}")
    return "\n".join(lines) + "\n\n"


def build_prompt(instruction: str, observation: str) -> str:
    """The current page, after the cached prefix and exemplars; the candidates follow it.

    The admissible actions are not listed: they are the scored continuations.
    """
    return f"Instruction: {instruction}\nPage: {observation}\nEncouraged:"


class RLEMAgent:
    """Choose shop actions with an LLM scorer, prompted with exemplars from a memory."""

    def __init__(
        self,
        scorer: Scorer,
        embedder: Embedder,
        memory: ExperienceMemory | None,
        mode: str,
        rng: np.random.Generator,
        exemplars: int = 2,
        temperature: float = 0.1,
        discouraged: bool = True,
    ):
        if mode not in MODES:
            raise ValueError(f"unknown mode '{mode}': use one of {MODES}")
        if mode != "llm" and memory is None:
            raise ValueError(f"mode '{mode}' needs a memory")
        self.scorer, self.embedder, self.memory, self.mode = scorer, embedder, memory, mode
        self.rng, self.k, self.temperature = rng, exemplars, temperature
        self.discouraged = discouraged
        self.decisions = 0
        self._shown: dict[tuple[str, str], str] = {}  # exemplar texts drawn this episode

    def exemplars(self, instruction: str, page: str) -> str:
        """The retrieved exemplars' text (empty in mode ``llm``).

        A record's exemplar is drawn once per episode, so the pages of one episode that
        retrieve the same records share the same text (and its cached KV).
        """
        if self.mode == "llm":
            return ""
        shots = []
        for r in self.memory.retrieve(instruction, page, self.k, self.embedder.embed):
            key = (r.instruction, r.observation)
            if key not in self._shown:
                self._shown[key] = exemplar_text(r, self.rng, self.discouraged)
            shots.append(self._shown[key])
        return "".join(shots)

    def act(self, instruction: str, page: str, obs: str, admissible: Sequence[str]) -> str:
        context = self.exemplars(instruction, page)
        cands = [f" {a}" for a in admissible]
        prompt = build_prompt(instruction, obs)
        i = self.scorer.choose(PREFIX, prompt, cands, self.temperature, self.rng, context)
        self.decisions += 1
        return admissible[i]

    def side_test(
        self, env: ShopEnv, tasks: Sequence[ShopTask], rng: np.random.Generator
    ) -> list[EpisodeResult]:
        """Test episodes in the middle of training that leave training as it was: drawn
        from ``rng``, with this episode's exemplar draws and the decision count put back."""
        saved = self.rng, dict(self._shown), self.decisions
        self.rng = rng
        try:
            return [self.run_episode(env, t, learn=False) for t in tasks]
        finally:
            self.rng, self._shown, self.decisions = saved

    def run_episode(self, env: ShopEnv, task: ShopTask, learn: bool) -> EpisodeResult:
        """Play one task; with ``learn`` (mode ``rlem``) update the memory from it."""
        obs, info = env.reset(options={"task": task})
        self._shown.clear()
        steps: list[Step] = []
        done = truncated = False
        reward, success = 0.0, False
        while not (done or truncated):
            adm = info["admissible"]
            a = self.act(task.instruction, info["page"], obs, adm)
            nobs, reward, done, truncated, ninfo = env.step(a)
            steps.append(Step(task.instruction, info["page"], obs, tuple(adm), a, float(reward)))
            success = bool(ninfo["success"])
            obs, info = nobs, ninfo
        if learn and self.mode == "rlem":
            self.memory.update(steps)
        return EpisodeResult(float(reward), success, len(steps), tuple(s.action for s in steps))
