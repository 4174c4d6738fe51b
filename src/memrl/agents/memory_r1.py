"""Memory-R1 (Yan et al. 2025): a memory manager trained with RL from a frozen answer agent.

Each incoming fact (a dialogue turn's observation) goes to a *memory manager*, which looks
at the memories most related to it and chooses one operation::

    ADD            store the fact as a new memory
    UPDATE [j]     replace related memory j by the fact (a changed fact)
    DELETE [j]     remove related memory j (a retracted fact)
    NOOP           leave the bank as it is (known already, or irrelevant)

A frozen *answer agent* answers questions from the memories retrieved for them (top-k by
cosine similarity).  Memory-R1 trains the manager with PPO or GRPO, the reward being the
answer agent's exact match on the questions, answered from the memory bank the manager's
operations built.

Here the manager's policy is a small head on frozen sentence embeddings (the issue allows it
instead of fine-tuning the LLM): for the fact f and each related memory m_j, an MLP reads
``[e_f, e_m, e_f * e_m, cos(f, m)]`` and scores the operations; ADD and NOOP are read at the
most related memory.  :func:`train_grpo` is GRPO over whole dialogues: ``group`` operation
sequences are sampled over a training dialogue's turns (:func:`rollout`), the answer agent
answers the dialogue's questions from each sequence's bank (:func:`dialogue_reward`), and
the group-normalised exact matches are the advantages of every operation of each sequence
in a clipped policy-gradient step. (Until issue 56 each operation was rewarded by a probe
of the turn just written, which never sees what clutter costs later: the manager chose ADD
on every test turn.)

The baselines: :class:`AddOnly` (plain retrieval memory), :class:`HeuristicManager` (Mem0's
pipeline with the LLM decision replaced by similarity thresholds) and
:class:`PromptedManager` (the LLM chooses the operation from a prompt, no RL).  The answer
agent is the same frozen LLM for every manager; it answers by scoring the candidate answers'
log-likelihood (:mod:`memrl.llm.scoring`), and its answers are cached by (question,
retrieved memories), which is what makes RL against an LLM reward affordable on a CPU.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch as th
from torch import nn

from memrl.envs.dialogue import Conversation, Question, exact_match, f1_score
from memrl.llm.embeddings import cosine
from memrl.llm.scoring import Scorer

Embed = Callable[[Sequence[str]], np.ndarray]
OPS = ("ADD", "NOOP", "UPDATE", "DELETE")


class Action(NamedTuple):
    op: str  # one of OPS
    target: int = -1  # index into the bank for UPDATE / DELETE


class MemoryBank:
    """The memories, in insertion order (an UPDATE keeps the replaced memory's place)."""

    def __init__(self, embed: Embed, texts: Sequence[str] = ()):
        self.embed, self.texts = embed, list(texts)

    def __len__(self) -> int:
        return len(self.texts)

    def nearest(self, text: str, k: int) -> list[tuple[int, float]]:
        """(index, cosine similarity) of the ``k`` memories most similar to ``text``, best first."""
        if not self.texts:
            return []
        sim = cosine(self.embed([text]), self.embed(self.texts))[0]
        return [(int(i), float(sim[i])) for i in np.argsort(-sim, kind="stable")[:k]]

    def related(self, text: str, k: int) -> list[int]:
        """Indices of the ``k`` memories most similar to ``text`` (best first)."""
        return [i for i, _ in self.nearest(text, k)]

    def retrieve(self, query: str, k: int) -> tuple[str, ...]:
        return tuple(self.texts[i] for i in self.related(query, k))

    def apply(self, action: Action, fact: str) -> MemoryBank:
        """A new bank with ``action`` applied (the bank itself is left unchanged)."""
        texts = list(self.texts)
        if action.op == "ADD":
            texts.append(fact)
        elif action.op == "UPDATE":
            texts[action.target] = fact
        elif action.op == "DELETE":
            del texts[action.target]
        elif action.op != "NOOP":
            raise ValueError(f"unknown memory operation '{action.op}': use one of {OPS}")
        return MemoryBank(self.embed, texts)


# =========================================================================== answer agent
ANSWER_PREFIX = "Answer the question with the facts from the memories.\n\n"


class AnswerAgent:
    """The frozen answer agent: retrieve ``k`` memories, pick the most likely candidate."""

    def __init__(self, scorer: Scorer, k: int):
        self.scorer, self.k = scorer, k
        self.cache: dict[tuple, str] = {}
        self.calls = 0  # LLM calls (cache misses)

    @staticmethod
    def prompt(memories: Sequence[str], question: str) -> str:
        lines = "".join(f"- {m}\n" for m in memories) or "- (no memories)\n"
        return f"Memories:\n{lines}Question: {question}\nAnswer:"

    def answer(self, bank: MemoryBank, q: Question) -> str:
        memories = bank.retrieve(q.question, self.k)
        key = (q.question, memories, q.candidates)
        if key not in self.cache:
            s = self.scorer.score(
                ANSWER_PREFIX, self.prompt(memories, q.question), [f" {c}" for c in q.candidates]
            )
            self.cache[key] = q.candidates[int(np.argmax(s))]
            self.calls += 1
        return self.cache[key]


# =========================================================================== managers
class AddOnly:
    """Store every fact: retrieval over the raw observations, no management."""

    name = "add_only"

    def decide(self, bank: MemoryBank, fact: str) -> Action:
        return Action("ADD")


class HeuristicManager:
    """Mem0's pipeline (retrieve the related memories, then decide) with the LLM's decision
    replaced by similarity thresholds: a near-duplicate is a NOOP, a similar memory is
    updated, anything else is added; it never deletes (that needs understanding)."""

    name = "heuristic"

    def __init__(self, noop_threshold: float, update_threshold: float):
        if not update_threshold <= noop_threshold:
            raise ValueError("update_threshold must not exceed noop_threshold")
        self.noop_threshold, self.update_threshold = noop_threshold, update_threshold

    def decide(self, bank: MemoryBank, fact: str) -> Action:
        best = bank.nearest(fact, 1)
        if not best:
            return Action("ADD")
        j, sim = best[0]
        if sim >= self.noop_threshold:
            return Action("NOOP")
        if sim >= self.update_threshold:
            return Action("UPDATE", j)
        return Action("ADD")


MANAGER_PREFIX = (
    "You manage a memory bank. For a new fact choose one operation: ADD if it is new "
    "information, UPDATE [i] if it changes memory [i], DELETE [i] if it cancels memory [i], "
    "NOOP if it is already known or not worth remembering.\n\n"
)


def candidate_actions(related: Sequence[int]) -> list[Action]:
    """ADD, NOOP, then UPDATE and DELETE of each related memory (the policy's action set)."""
    return [
        Action("ADD"),
        Action("NOOP"),
        *(Action("UPDATE", j) for j in related),
        *(Action("DELETE", j) for j in related),
    ]


class PromptedManager:
    """The frozen LLM chooses the operation (Memory-R1's manager before RL): the operation
    texts are scored by log-likelihood after a prompt showing the related memories."""

    name = "prompted"

    def __init__(self, scorer: Scorer, k: int):
        self.scorer, self.k = scorer, k
        self.calls = 0

    def decide(self, bank: MemoryBank, fact: str) -> Action:
        rel = bank.related(fact, self.k)
        mems = "".join(f"[{i}] {bank.texts[j]}\n" for i, j in enumerate(rel)) or "(empty)\n"
        prompt = f"Memories:\n{mems}New fact: {fact}\nOperation:"
        acts = candidate_actions(range(len(rel)))
        texts = [f" {a.op}" + (f" [{a.target}]" if a.target >= 0 else "") for a in acts]
        s = self.scorer.score(MANAGER_PREFIX, prompt, texts)
        self.calls += 1
        a = acts[int(np.argmax(s))]
        return a if a.target < 0 else Action(a.op, rel[a.target])


# =========================================================================== RL manager
class ManagerPolicy(nn.Module):
    """Scores ADD / NOOP / UPDATE [j] / DELETE [j] from frozen embeddings of the fact and its
    ``k`` most related memories; absent memories are masked."""

    def __init__(self, dim: int, k: int, hidden: int = 64):
        super().__init__()
        self.dim, self.k, self.hidden = dim, k, hidden
        self.net = nn.Sequential(
            nn.Linear(3 * dim + 1, hidden),
            nn.Tanh(),
            nn.Linear(hidden, hidden),
            nn.Tanh(),
            nn.Linear(hidden, 4),
        )

    def forward(self, x: th.Tensor, mask: th.Tensor) -> th.Tensor:
        """``x`` (B, k, 3d+1) pair features, ``mask`` (B, k) -> logits (B, 2 + 2k)."""
        out = self.net(x)  # (B, k, 4): add, noop, update, delete
        neg = th.finfo(out.dtype).min
        upd = out[..., 2].masked_fill(~mask, neg)
        dele = out[..., 3].masked_fill(~mask, neg)
        return th.cat([out[:, 0, :2], upd, dele], dim=1)

    def save(self, path: str | Path) -> None:
        """Write the policy with its sizes (``th.save``), so :meth:`load` needs nothing else."""
        th.save(
            {"dim": self.dim, "k": self.k, "hidden": self.hidden, "state_dict": self.state_dict()},
            path,
        )

    @classmethod
    def load(cls, path: str | Path, k: int | None = None) -> ManagerPolicy:
        """A saved policy, in eval mode. Files written before :meth:`save` existed hold the
        bare ``state_dict``: the sizes come from its weights, ``k`` (the related memories it
        was trained with, ``memory_r1.related_k`` in params.yaml) must be given."""
        saved = th.load(path, map_location="cpu", weights_only=True)
        if "state_dict" in saved:
            dim, k, hidden, state = saved["dim"], saved["k"], saved["hidden"], saved["state_dict"]
        elif k is None:
            raise ValueError(f"{path} holds a bare state_dict: pass k (memory_r1.related_k)")
        else:
            state = saved
            hidden, width = state["net.0.weight"].shape
            dim = (width - 1) // 3
        policy = cls(dim, k, hidden)
        policy.load_state_dict(state)
        return policy.eval()


def features(bank: MemoryBank, fact: str, k: int) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Pair features of the fact with each of its ``k`` most related memories (zero-padded)."""
    rel = bank.related(fact, k)
    ef = bank.embed([fact])[0]
    d = ef.shape[0]
    x = np.zeros((k, 3 * d + 1), dtype=np.float32)
    mask = np.zeros(k, dtype=bool)
    x[:, :d] = ef
    if rel:
        em = bank.embed([bank.texts[j] for j in rel])
        n = len(rel)
        x[:n, d : 2 * d] = em
        x[:n, 2 * d : 3 * d] = ef * em
        x[:n, -1] = em @ ef
        mask[:n] = True
    return x, mask, rel


def index_to_action(i: int, rel: Sequence[int], k: int) -> Action:
    if i == 0:
        return Action("ADD")
    if i == 1:
        return Action("NOOP")
    j = (i - 2) % k
    return Action("UPDATE" if i - 2 < k else "DELETE", rel[j])


class RLManager:
    """The trained policy, acting greedily (evaluation) or by sampling (training)."""

    name = "rl"

    def __init__(self, policy: ManagerPolicy):
        self.policy = policy

    @th.no_grad()
    def decide(self, bank: MemoryBank, fact: str) -> Action:
        x, mask, rel = features(bank, fact, self.policy.k)
        logits = self.policy(th.from_numpy(x)[None], th.from_numpy(mask)[None])[0]
        return index_to_action(int(logits.argmax()), rel, self.policy.k)


class GRPOConfig(NamedTuple):
    epochs: int
    group: int  # G: operation sequences sampled over each training dialogue
    learning_rate: float
    clip: float  # PPO-style ratio clip of GRPO's objective
    update_epochs: int  # GRPO's mu: passes over each group
    beta: float  # KL penalty to the initial policy (k3 estimator); 0 disables


class Rollout(NamedTuple):
    """One sampled operation per turn of a dialogue, and the bank they built."""

    bank: MemoryBank
    x: th.Tensor  # (T, k, 3d+1) the policy's inputs at each turn
    mask: th.Tensor  # (T, k)
    actions: th.Tensor  # (T,) sampled action indices
    logp: th.Tensor  # (T,) their log-probabilities under the sampling policy
    ops: list[str]


@th.no_grad()
def rollout(policy: ManagerPolicy, conv: Conversation, embed: Embed, gen: th.Generator) -> Rollout:
    """Feed the dialogue's facts to the manager, sampling each operation from the policy."""
    bank, xs, masks, acts, logps, ops = MemoryBank(embed), [], [], [], [], []
    for turn in conv.turns:
        x, mask, rel = features(bank, turn.fact, policy.k)
        xt, mt = th.from_numpy(x), th.from_numpy(mask)
        dist = th.distributions.Categorical(logits=policy(xt[None], mt[None])[0])
        i = th.multinomial(dist.probs, 1, generator=gen)[0]
        action = index_to_action(int(i), rel, policy.k)
        xs.append(xt), masks.append(mt), acts.append(i), logps.append(dist.log_prob(i))
        ops.append(action.op)
        bank = bank.apply(action, turn.fact)
    return Rollout(bank, th.stack(xs), th.stack(masks), th.stack(acts), th.stack(logps), ops)


def dialogue_reward(
    answerer: AnswerAgent, bank: MemoryBank, questions: Sequence[Question]
) -> float:
    """Memory-R1's outcome reward: the answer agent's exact match on the dialogue's
    questions, answered from the bank the manager's operations built."""
    return float(np.mean([exact_match(answerer.answer(bank, q), q.answer) for q in questions]))


def train_grpo(
    policy: ManagerPolicy,
    convs: Sequence[Conversation],
    answerer: AnswerAgent,
    embed: Embed,
    cfg: GRPOConfig,
    rng: np.random.Generator,
    progress: Callable[[], None] | None = None,
    checkpoint: Callable[[float], None] | None = None,
) -> list[dict]:
    """Train the manager with GRPO on ``convs``, rewarded as Memory-R1 rewards it: for each
    training dialogue, ``G`` operation sequences are sampled over its turns, each builds a
    bank, the answer agent answers the dialogue's questions from it, and each sequence's
    exact match, normalised within the group, is the advantage of every operation in it
    (a clipped policy-gradient step per dialogue). What an operation costs later (a stale
    memory beside the new one, a deleted fact still asked about) reaches it through the
    questions. Returns one row per (epoch, dialogue); ``checkpoint(done)`` is called after
    each dialogue's update with the share of training done."""
    opt = th.optim.Adam(policy.parameters(), lr=cfg.learning_rate)
    ref = copy.deepcopy(policy).requires_grad_(False) if cfg.beta > 0 else None
    gen = th.Generator().manual_seed(int(rng.integers(2**31)))
    history = []
    for epoch in range(cfg.epochs):
        for c in rng.permutation(len(convs)):
            conv = convs[int(c)]
            group = [rollout(policy, conv, embed, gen) for _ in range(cfg.group)]
            r = np.array([dialogue_reward(answerer, g.bank, conv.questions) for g in group])
            if progress is not None:
                progress()
            loss_v = 0.0
            if r.std() > 0:  # a group with one reward teaches nothing
                adv = (r - r.mean()) / (r.std() + 1e-4)
                X, M = th.cat([g.x for g in group]), th.cat([g.mask for g in group])
                A, old = th.cat([g.actions for g in group]), th.cat([g.logp for g in group])
                adv_t = th.cat(
                    [th.full((len(g.actions),), float(a)) for g, a in zip(group, adv, strict=True)]
                )
                for _ in range(cfg.update_epochs):
                    logp = th.distributions.Categorical(logits=policy(X, M)).log_prob(A)
                    ratio = th.exp(logp - old)
                    obj = th.min(ratio * adv_t, ratio.clamp(1 - cfg.clip, 1 + cfg.clip) * adv_t)
                    loss = -obj.mean()
                    if ref is not None:
                        ref_logp = th.distributions.Categorical(logits=ref(X, M)).log_prob(A)
                        d = ref_logp - logp
                        loss = loss + cfg.beta * (th.exp(d) - d - 1).mean()
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    loss_v = float(loss.detach())
            ops = [op for g in group for op in g.ops]
            history.append(
                {
                    "epoch": epoch + 1,
                    "conversation": conv.cid,
                    "reward_em": float(r.mean()),
                    "reward_spread": float(r.std()),
                    "ops": {op: ops.count(op) for op in OPS},
                    "loss": loss_v,
                }
            )
            if checkpoint is not None:
                checkpoint(len(history) / (cfg.epochs * len(convs)))
    return history


# =========================================================================== evaluation
def build_bank(manager, conv: Conversation, embed: Embed) -> tuple[MemoryBank, list[str]]:
    """Feed every turn's fact to the manager; the final bank and the operations chosen."""
    bank, ops = MemoryBank(embed), []
    for turn in conv.turns:
        a = manager.decide(bank, turn.fact)
        ops.append(a.op)
        bank = bank.apply(a, turn.fact)
    return bank, ops


def evaluate(
    manager,
    convs: Sequence[Conversation],
    answerer: AnswerAgent,
    embed: Embed,
    progress: Callable[[], None] | None = None,
) -> tuple[list[dict], list[dict]]:
    """Rows per question (category, prediction, exact match, F1) and per turn (the
    operation chosen beside the turn's kind, a diagnostic no manager sees)."""
    rows, ops = [], []
    for conv in convs:
        bank, chosen = build_bank(manager, conv, embed)
        ops += [
            {"conversation": conv.cid, "kind": t.kind, "op": op}
            for t, op in zip(conv.turns, chosen, strict=True)
        ]
        for q in conv.questions:
            pred = answerer.answer(bank, q)
            rows.append(
                {
                    "conversation": conv.cid,
                    "category": q.category,
                    "answer": q.answer,
                    "prediction": pred,
                    "em": exact_match(pred, q.answer),
                    "f1": f1_score(pred, q.answer),
                    "memories": len(bank),
                }
            )
        if progress is not None:
            progress()
    return rows, ops
