"""REMEMBERER's experience memory: (task, observation, action) records with RL-updated Q-values.

Zhang et al. 2023, "Large Language Models Are Semi-Parametric Reinforcement Learning
Agents" (RLEM).  A record is keyed by (instruction, page observation) and holds the
admissible actions of that page and, for each action tried there, a Q-value and a
visit count.  After every episode the Q-values of its steps are updated toward n-step
bootstrapped targets (their Eq. 2-3)::

    G_t = sum_{k<n} gamma^k r_{t+k}  +  gamma^n max_a Q(s_{t+n}, a)      (if t + n < T)
    G_t = sum_{k<T-t} gamma^k r_{t+k}                    (without bootstrapping: the ablation)
    N  <- N + 1;   Q <- Q + (G_t - Q) / N                              (alpha = 1/N)

Steps are updated last to first, so a final reward reaches the first step within one
episode.  Retrieval ranks records by REMEMBERER's WebShop similarity: 0.5 x page-type
match + 0.5 x instruction cosine similarity.  The memory saves to and loads from plain
JSON; a corrupted file raises :class:`MemoryFileError`, never an empty memory.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

from memrl.runtime import atomic_write_text

FORMAT = "memrl.experience_memory/1"


class MemoryFileError(ValueError):
    """A memory file that is missing, unreadable or not in the expected format."""


def read_memory_file(path: str | Path, fmt: str, what: str) -> dict:
    """The JSON object in ``path`` whose ``format`` is ``fmt`` (``what``: "an experience memory")."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        raise MemoryFileError(f"memory file not found: {path}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise MemoryFileError(f"{path} is not valid JSON: {err}") from None
    if not isinstance(raw, dict) or raw.get("format") != fmt:
        raise MemoryFileError(f"{path} is not {what} ({fmt})")
    return raw


class Step(NamedTuple):
    """One decision of an episode, as the memory stores it."""

    instruction: str
    page: str  # page type (search / results / item)
    observation: str
    admissible: tuple[str, ...]
    action: str
    reward: float


@dataclass
class Record:
    instruction: str
    page: str
    observation: str
    admissible: tuple[str, ...]
    q: dict[str, float] = field(default_factory=dict)
    n: dict[str, int] = field(default_factory=dict)

    def best(self) -> tuple[str, float] | None:
        if not self.q:
            return None
        a = max(self.q, key=lambda k: (self.q[k], -list(self.q).index(k)))
        return a, self.q[a]

    def worst(self) -> tuple[str, float] | None:
        if not self.q:
            return None
        a = min(self.q, key=lambda k: (self.q[k], list(self.q).index(k)))
        return a, self.q[a]


def page_similarity(a: str, b: str) -> float:
    """REMEMBERER's WebShop page-type table: 1 for the same type, 0 otherwise."""
    return 1.0 if a == b else 0.0


class ExperienceMemory:
    """Records of (instruction, observation) -> {action: Q, N}, updated by n-step Q-learning."""

    def __init__(
        self, capacity: int = 500, n_step: int = 1, gamma: float = 1.0, bootstrap: bool = True
    ):
        if capacity <= 0 or n_step <= 0 or not 0 < gamma <= 1:
            raise ValueError("capacity and n_step must be positive and gamma in (0, 1]")
        self.capacity, self.n_step, self.gamma, self.bootstrap = capacity, n_step, gamma, bootstrap
        self.records: dict[tuple[str, str], Record] = {}

    def __len__(self) -> int:
        return len(self.records)

    # ------------------------------------------------------------------ learning
    def _record(self, s: Step) -> Record:
        key = (s.instruction, s.observation)
        if key not in self.records:
            if len(self.records) >= self.capacity:  # forget the oldest record
                del self.records[next(iter(self.records))]
            self.records[key] = Record(s.instruction, s.page, s.observation, tuple(s.admissible))
        return self.records[key]

    def target(self, steps: Sequence[Step], t: int) -> float:
        """The n-step target ``G_t`` of step ``t`` of an episode; without bootstrapping
        (REMEMBERER's "w/o bootstrap" ablation, the reference's ``n_step_flatten=None``) the
        discounted return to the episode's end."""
        T = len(steps)
        end = min(t + self.n_step, T) if self.bootstrap else T
        g = sum(self.gamma ** (k - t) * steps[k].reward for k in range(t, end))
        if self.bootstrap and end < T:
            nxt = self.records.get((steps[end].instruction, steps[end].observation))
            best = nxt.best() if nxt is not None else None
            if best is not None:
                g += self.gamma ** (end - t) * best[1]
        return float(g)

    def update(self, steps: Sequence[Step]) -> None:
        """Insert an episode's records and move their Q-values toward the n-step targets."""
        recs = [self._record(s) for s in steps]
        for t in reversed(range(len(steps))):
            g = self.target(steps, t)
            rec, a = recs[t], steps[t].action
            n = rec.n.get(a, 0) + 1
            q = rec.q.get(a, 0.0)
            rec.n[a], rec.q[a] = n, q + (g - q) / n

    # ------------------------------------------------------------------ retrieval
    def retrieve(
        self,
        instruction: str,
        page: str,
        k: int,
        embed: Callable[[Sequence[str]], np.ndarray],
    ) -> list[Record]:
        """The ``k`` most similar records: 0.5 x page match + 0.5 x instruction cosine."""
        recs = [r for r in self.records.values() if r.q]
        if not recs:
            return []
        # many records share an instruction: embed and compare each distinct one once
        texts = list(dict.fromkeys(r.instruction for r in recs))
        e = embed([instruction, *texts])
        cos = dict(zip(texts, (e[1:] @ e[0]).tolist(), strict=True))
        sim = np.array(
            [0.5 * page_similarity(page, r.page) + 0.5 * cos[r.instruction] for r in recs]
        )
        order = np.argsort(-sim, kind="stable")[:k]
        return [recs[i] for i in order]

    # ------------------------------------------------------------------ files
    def to_json(self) -> dict:
        return {
            "format": FORMAT,
            "capacity": self.capacity,
            "n_step": self.n_step,
            "gamma": self.gamma,
            "bootstrap": self.bootstrap,
            "records": [
                {
                    "instruction": r.instruction,
                    "page": r.page,
                    "observation": r.observation,
                    "admissible": list(r.admissible),
                    "actions": [{"action": a, "q": r.q[a], "n": r.n[a]} for a in r.q],
                }
                for r in self.records.values()
            ],
        }

    def save(self, path: str | Path) -> None:
        """Write the memory as JSON (atomically: an interrupted save leaves the old file)."""
        atomic_write_text(path, json.dumps(self.to_json(), indent=1) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> ExperienceMemory:
        raw = read_memory_file(path, FORMAT, "an experience memory")
        try:
            mem = cls(raw["capacity"], raw["n_step"], raw["gamma"], raw["bootstrap"])
            for r in raw["records"]:
                rec = Record(r["instruction"], r["page"], r["observation"], tuple(r["admissible"]))
                for a in r["actions"]:
                    rec.q[a["action"]], rec.n[a["action"]] = float(a["q"]), int(a["n"])
                mem.records[(rec.instruction, rec.observation)] = rec
        except (KeyError, TypeError, ValueError) as err:
            raise MemoryFileError(f"{path}: malformed record ({err!r})") from None
        return mem
