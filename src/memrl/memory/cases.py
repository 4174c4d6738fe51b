"""AgentFly / Memento's case bank: past (task, trajectory, outcome) cases and how to pick them.

Memento (Zhou et al. 2025) writes the agent as a memory-augmented MDP whose policy mixes
the LLM over retrieved cases, pi(a | s, M) = sum_c mu(c | s, M) p_LLM(a | s, c).  The case
selection policy mu is either

* **non-parametric**: the K cases whose task embeddings are most cosine-similar to the
  current task, or
* **parametric**: a learned Q(s, c) ranking the cases, trained online from the outcomes of
  the episodes that used them (the reference code: a 2-layer MLP on the two embeddings
  with a binary cross-entropy loss, i.e. supervised rather than TD, as its issue #34 notes).

Cases persist as plain JSON; a corrupted file raises :class:`~memrl.memory.experience.MemoryFileError`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch as th
from torch import nn

from memrl.memory.experience import MemoryFileError, read_memory_file
from memrl.runtime import atomic_write_text

FORMAT = "memrl.case_bank/1"
Embed = Callable[[Sequence[str]], np.ndarray]


@dataclass(frozen=True)
class Case:
    task: str
    actions: tuple[str, ...]
    reward: float

    def text(self) -> str:
        """How a case is shown to the LLM: the task, the plan it followed and the outcome."""
        outcome = "success" if self.reward >= 1.0 else f"failure (score {self.reward:.2f})"
        return f"Task: {self.task}\nPlan: {' > '.join(self.actions)}\nOutcome: {outcome}\n\n"


class CaseQ(nn.Module):
    """Q(s, c): the probability that case ``c`` helps on task ``s`` (an MLP on embeddings)."""

    def __init__(self, dim: int, hidden: int = 64):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(3 * dim + 1, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, s: th.Tensor, c: th.Tensor, outcome: th.Tensor) -> th.Tensor:
        """Logits for task rows ``s`` and case rows ``c`` (same shape) with case outcomes."""
        return self.net(th.cat([s, c, s * c, outcome.unsqueeze(-1)], -1)).squeeze(-1)


class CaseBank:
    """Cases plus a selection policy: ``nonparametric`` (cosine kNN) or ``parametric`` (Q)."""

    def __init__(
        self, selection: str, k: int = 4, lr: float = 1e-3, epochs: int = 5, seed: int = 0
    ):
        if selection not in ("nonparametric", "parametric"):
            raise ValueError(f"unknown case selection '{selection}': nonparametric | parametric")
        self.selection, self.k, self.lr, self.epochs = selection, k, lr, epochs
        self.cases: list[Case] = []
        self.q: CaseQ | None = None
        self._seed = seed
        self._examples: list[tuple[str, int, float]] = []  # (task, case index, label)

    def __len__(self) -> int:
        return len(self.cases)

    def add(self, case: Case) -> None:
        self.cases.append(case)

    def select(self, task: str, embed: Embed) -> list[int]:
        """Indices of the ``k`` cases to show for ``task`` (best first)."""
        if not self.cases:
            return []
        e = embed([task, *[c.task for c in self.cases]])
        if self.selection == "nonparametric" or self.q is None:
            score = e[1:] @ e[0]
        else:
            with th.no_grad():
                s = th.as_tensor(e[:1]).expand(len(self.cases), -1)
                out = th.tensor([c.reward for c in self.cases], dtype=th.float32)
                score = self.q(s, th.as_tensor(e[1:]), out).numpy()
        return [int(i) for i in np.argsort(-score, kind="stable")[: self.k]]

    def learn(self, task: str, used: Sequence[int], reward: float, embed: Embed) -> None:
        """Parametric selection: fit Q(s, c) -> the episode's reward for every case it used.

        Every (task, case, outcome) example seen so far is replayed for a few epochs of
        binary cross-entropy (rewards in [0, 1] are soft labels).
        """
        if self.selection != "parametric" or not used:
            return
        self._examples += [(task, i, float(reward)) for i in used]
        tasks = [t for t, _, _ in self._examples]
        e_s = th.as_tensor(embed(tasks))
        e_c = th.as_tensor(embed([self.cases[i].task for _, i, _ in self._examples]))
        out = th.tensor([self.cases[i].reward for _, i, _ in self._examples], dtype=th.float32)
        y = th.tensor([lab for *_, lab in self._examples], dtype=th.float32)
        if self.q is None:
            g = th.Generator().manual_seed(self._seed)
            with th.random.fork_rng():
                th.manual_seed(int(th.randint(0, 2**31 - 1, (1,), generator=g)))
                self.q = CaseQ(e_s.shape[1])
            self._opt = th.optim.Adam(self.q.parameters(), lr=self.lr)
        for _ in range(self.epochs):
            loss = nn.functional.binary_cross_entropy_with_logits(self.q(e_s, e_c, out), y)
            self._opt.zero_grad()
            loss.backward()
            self._opt.step()

    # ------------------------------------------------------------------ files
    def save(self, path: str | Path) -> None:
        """The cases and Q's training examples as JSON (Q itself is refit by the next ``learn``)."""
        raw = {
            "format": FORMAT,
            "selection": self.selection,
            "k": self.k,
            "cases": [asdict(c) for c in self.cases],
            "examples": [list(x) for x in self._examples],
        }
        atomic_write_text(path, json.dumps(raw, indent=1) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> CaseBank:
        raw = read_memory_file(path, FORMAT, "a case bank")
        try:
            bank = cls(raw["selection"], raw["k"])
            bank.cases = [
                Case(c["task"], tuple(c["actions"]), float(c["reward"])) for c in raw["cases"]
            ]
            bank._examples = [(str(t), int(i), float(y)) for t, i, y in raw["examples"]]
        except (KeyError, TypeError, ValueError) as err:
            raise MemoryFileError(f"{path}: malformed case ({err!r})") from None
        return bank
