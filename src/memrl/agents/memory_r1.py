"""Memory-R1 (Yan et al. 2025): a memory manager trained with RL from a frozen answer agent.

Each incoming fact (a dialogue turn's observation) goes to a *memory manager*, which looks
at the memories most related to it and chooses one operation::

    ADD            store the fact as a new memory
    UPDATE [j]     merge the fact into related memory j (:func:`merge`)
    DELETE [j]     remove related memory j (a retracted fact)
    NOOP           leave the bank as it is (known already, or irrelevant)

UPDATE is the paper's: the manager outputs "both the operation and updated content m'"
(Sec. 3.1, Eq. 1), the store "merging information into an existing one" (Appendix E), as in
its case study (Appendix A.1): "UPDATE: \"Andrew adopted a new dog from a shelter and named
him Buddy because he is his buddy.\" -> \"Andrew adopted a dog from a shelter and named him
Buddy because he is his buddy, and later adopted another dog named Scout.\"" Our head
chooses the operation, not the text, so m' is a fixed rule on the dialogues' facts: the
memory's sentences about the attribute the fact changes or retracts (same person, same
attribute) are replaced by the fact, the rest (complementary facts) kept before it. An
earlier version replaced memory j by the fact, losing whatever else it held.

A frozen *answer agent* answers questions from the memories retrieved for them (top-k by
cosine similarity).  Memory-R1 trains the manager with PPO or GRPO, the reward being the
answer agent's exact match on the questions, answered from the memory bank the manager's
operations built.

Here the manager's policy is a small head on frozen sentence embeddings (the issue allows it
instead of fine-tuning the LLM): for the fact f and each related memory m_j, an MLP reads
``[e_f, e_m, e_f * e_m, cos(f, m)]`` and scores the operations; ADD and NOOP are read at the
most related memory.  :func:`train_grpo` is GRPO as the paper's method section defines it
for the manager (arXiv 2508.19828 v5, Sec. 3.1 and Appendix B.2):

- the training tuple is one turn: "Training uses (i) a partially constructed memory bank
  and (ii) a new dialogue turn with information relevant to downstream QA"; Algorithm 1
  builds, "for each dialogue turn t", a temporal memory bank from the preceding turns (with
  GPT-4o-mini) and combines it with "the current turn t, and (iii) any QA pairs linked to
  t" (:func:`training_tuples`);
- GRPO "samples a group of G candidate actions per state" s = (x, M_old), the advantage
  of candidate i is A_i = (r_i - mean(r)) / std(r) over its group (Eq. 3);
- the reward: "After applying operation o ... the updated memory bank is passed to the
  frozen Answer Agent, and the reward is based on answer correctness: R_answer =
  EM(y_pred, y_gold)" (Eq. 4), the question being the one linked to the turn.

(Issue 56's reading, every operation of a whole sampled dialogue sharing the EM on all its
questions, is not the paper's and left the manager adding on every test turn; issue 71.)
:class:`TopMemoryReader` is the deterministic reader of the manager's learnability control:
under it better operations than the baselines' are known to exist, and the same trainer
must find them.

The baselines: :class:`AddOnly` (plain retrieval memory), :class:`HeuristicManager` (Mem0's
pipeline with the LLM decision replaced by similarity thresholds) and
:class:`PromptedManager` (the LLM chooses the operation from a prompt, no RL).  The answer
agent is the same frozen LLM for every manager; it answers by scoring the candidate answers'
log-likelihood (:mod:`memrl.llm.scoring`), and its answers are cached by (question,
retrieved memories), which is what makes RL against an LLM reward affordable on a CPU.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch as th
from torch import nn

from memrl.envs.dialogue import (
    ATTRIBUTES,
    NONE,
    Conversation,
    Question,
    exact_match,
    f1_score,
)
from memrl.llm.embeddings import cosine
from memrl.llm.scoring import Scorer

Embed = Callable[[Sequence[str]], np.ndarray]
OPS = ("ADD", "NOOP", "UPDATE", "DELETE")


class Action(NamedTuple):
    op: str  # one of OPS
    target: int = -1  # index into the bank for UPDATE / DELETE


_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_DATED = re.compile(r"^On [^:]+: ")


def fact_subject(fact: str) -> tuple[str, str] | None:
    """(person, attribute) a dialogue fact states, e.g. ``("Alice", "city")`` for "On 8 May
    2023: Alice moved to Rome." (the speaker opens every fact; the attribute is the one whose
    value the fact names: the attributes' values are disjoint words); ``None`` when it names
    none (small talk)."""
    body = _DATED.sub("", fact.strip())
    person = re.match(r"[^\s']+", body)
    for attr, spec in ATTRIBUTES.items():
        if any(re.search(rf"(?<!\w){re.escape(v)}(?!\w)", body, re.I) for v in spec["values"]):
            return (person.group(0) if person else "", attr)
    return None


def merge(memory: str, fact: str) -> str:
    """UPDATE's new content m' for ``memory`` given ``fact`` (the paper's manager writes it,
    merging the new information into the memory: module doc; Mem0's prompt merges "I really
    like cheese pizza" and "Loves chicken pizza" into "Loves cheese and chicken pizza"). For
    our facts: the memory's sentences on what the fact restates (the same person's same
    attribute: a changed or retracted value) give way to it, the others (complementary
    facts) are kept, and the fact follows them."""
    new = fact_subject(fact)
    kept = [c for c in _SENTENCE.split(memory.strip()) if c and fact_subject(c) != new]
    if new is None:  # a fact naming no attribute supersedes nothing (an exact repeat aside)
        kept = [c for c in kept if c != fact.strip()]
    return " ".join([*kept, fact.strip()])


class MemoryBank:
    """The memories, in insertion order (an UPDATE keeps the updated memory's place)."""

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
            texts[action.target] = merge(texts[action.target], fact)
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


class TopMemoryReader:
    """A deterministic answer agent (no LLM): the candidate named in the top-ranked of the
    ``k`` memories retrieved for the question (the first named, by position), else "none";
    in a memory an UPDATE merged, the first any of its facts names (the earlier fact's date
    before the later one's), where an LLM would read the fact the question asks about.
    The learnability control's reader: under it ideal operations (the gold bank) answer far
    more questions than adding every fact, so a better manager than the baselines is known
    to exist, and the trainer must find it (issue 71)."""

    def __init__(self, k: int):
        self.k, self.calls = k, 0
        self.cache: dict[tuple, str] = {}

    def answer(self, bank: MemoryBank, q: Question) -> str:
        self.calls += 1
        top = bank.retrieve(q.question, self.k)[:1]
        named = [
            (m.start(), c)
            for c in q.candidates
            if c != NONE and top
            for m in [re.search(rf"(?<!\w){re.escape(c)}(?!\w)", top[0], re.IGNORECASE)]
            if m
        ]
        return min(named)[1] if named else NONE


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
    epochs: int  # passes over the training tuples
    group: int  # G: candidate operations sampled per state (Eq. 3)
    learning_rate: float
    clip: float  # PPO-style ratio clip (Eq. 2; GRPO keeps PPO's clipped ratio)
    update_epochs: int  # GRPO's mu: passes over each batch's samples
    beta: float  # KL penalty to the initial policy (k3 estimator, Eq. 3's beta); 0 disables
    batch: int  # training tuples (states) per policy update


class TrainingTuple(NamedTuple):
    """Memory-R1's training tuple (its Algorithm 1): the memory bank built from the turns
    before this one, the turn's fact, and the question linked to the turn."""

    bank: MemoryBank
    fact: str
    question: Question
    kind: str  # the turn's kind (intro, change, ...): a diagnostic no policy sees


def training_tuples(convs: Sequence[Conversation], embed: Embed) -> list[TrainingTuple]:
    """One tuple per turn that carries a fact (small talk carries no evidence, so no QA is
    linked to it), its question the turn's probe (the single-hop question about the fact,
    answered as the turn leaves it). The bank before the turn holds the facts as the earlier
    turns left them: introduced or changed facts in their latest form, retracted ones gone.
    That is the stand-in for the paper's GPT-4o-mini snapshot ("GPT-4o-mini builds a
    temporal memory bank from the preceding 24 turns", Appendix B.2; Algorithm 1 says 50):
    a bank built by a stronger manager than the one trained, fixed during training. Our
    dialogues are shorter than 24 turns, so the window is every preceding turn."""
    out = []
    for conv in convs:
        facts: dict[str, str] = {}
        for t in conv.turns:
            if t.key:
                out.append(
                    TrainingTuple(MemoryBank(embed, list(facts.values())), t.fact, t.probe, t.kind)
                )
            if t.kind in ("intro", "change"):
                facts[t.key] = t.fact
            elif t.kind == "retract":
                facts.pop(t.key, None)
    return out


def action_index(action: Action, rel: Sequence[int], k: int) -> int:
    """The policy's index of ``action`` (the inverse of :func:`index_to_action`)."""
    if action.op in ("ADD", "NOOP"):
        return OPS.index(action.op)
    return 2 + list(rel).index(action.target) + (k if action.op == "DELETE" else 0)


def teacher_states(convs: Sequence[Conversation], teacher, embed: Embed) -> list[TrainingTuple]:
    """The states ``teacher`` acts in when it builds each conversation's bank itself, one
    per turn (small talk included, no question linked): the clone must act as the teacher
    where the teacher acts, not only on the training tuples' banks (cloned on those alone,
    the head scored 0.55-0.62 test EM under the reader where the heuristic it clones scores
    0.644, issue 71)."""
    out = []
    for conv in convs:
        bank = MemoryBank(embed)
        for t in conv.turns:
            out.append(TrainingTuple(bank, t.fact, None, t.kind))
            bank = bank.apply(teacher.decide(bank, t.fact), t.fact)
    return out


def warm_start(
    policy: ManagerPolicy,
    tuples: Sequence[TrainingTuple],
    teacher,
    epochs: int,
    lr: float,
    explore: float = 0.0,
) -> float:
    """Clone ``teacher``'s operations on the training tuples' states (full-batch
    cross-entropy, Adam): the manager GRPO starts from, and its KL reference. The paper's
    manager starts as an instruct LLM prompted with Mem0's operation instructions ("Prompts
    for memory operations ... are adapted from Chhikara et al. (2025)", Appendix D), a working
    manager; an untrained MLP knows no operation (with the UPDATE that replaced a memory,
    a cold start drifted to UPDATE under the per-turn reward, whose cost to the memory it
    overwrote no turn's question saw; with the merging UPDATE a cold start ends where the
    warm-started GRPO does under the reader, 0.57-0.58 held-out EM). ``explore`` spreads that
    share of the target over every valid operation, as a prompted instruct LLM gives each
    operation some probability: a clone with none on DELETE or UPDATE never samples it, and
    GRPO cannot reward what it never samples. Returns the last loss."""
    feats = [features(t.bank, t.fact, policy.k) for t in tuples]
    X = th.from_numpy(np.stack([f[0] for f in feats]))
    M = th.from_numpy(np.stack([f[1] for f in feats]))
    y = th.tensor(
        [
            action_index(teacher.decide(t.bank, t.fact), f[2], policy.k)
            for t, f in zip(tuples, feats, strict=True)
        ]
    )
    # the target: the teacher's operation, with ``explore`` spread over every valid one
    valid = th.cat([th.ones(len(tuples), 2, dtype=th.bool), M, M], dim=1)
    target = (1 - explore) * nn.functional.one_hot(y, valid.shape[1]).float()
    target += explore * valid.float() / valid.sum(1, keepdim=True)
    opt = th.optim.Adam(policy.parameters(), lr=lr)
    loss = th.zeros(())
    for _ in range(epochs):
        logp = th.log_softmax(policy(X, M), dim=1).masked_fill(~valid, 0.0)
        loss = -(target * logp).sum(1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return float(loss.detach())


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
    """Train the manager with GRPO on the training dialogues' tuples, rewarded as Memory-R1
    rewards it (module doc): for each tuple's state (its bank, its fact) ``G`` operations are
    sampled from the policy, each is applied to the bank, the frozen answer agent answers
    the tuple's question from the bank that operation produced, and each operation's exact
    match, standardised within its group, is its advantage in a clipped policy-gradient
    step over a batch of ``cfg.batch`` tuples. A group whose operations all earn the same
    reward has no advantage (the paper's 0/0; as VERL's GRPO advantage, whose std carries
    an epsilon). Returns one row per update; ``checkpoint(done)`` is called after each with
    the share of training done."""
    tuples = training_tuples(convs, embed)
    feats = [features(t.bank, t.fact, policy.k) for t in tuples]
    X = th.from_numpy(np.stack([f[0] for f in feats]))
    M = th.from_numpy(np.stack([f[1] for f in feats]))
    opt = th.optim.Adam(policy.parameters(), lr=cfg.learning_rate)
    ref = copy.deepcopy(policy).requires_grad_(False) if cfg.beta > 0 else None
    gen = th.Generator().manual_seed(int(rng.integers(2**31)))
    rewards: dict[tuple[int, int], float] = {}  # (tuple, action): the bank, hence EM, is fixed

    def reward(i: int, a: int) -> float:
        if (i, a) not in rewards:
            t = tuples[i]
            bank = t.bank.apply(index_to_action(a, feats[i][2], policy.k), t.fact)
            rewards[i, a] = exact_match(answerer.answer(bank, t.question), t.question.answer)
        return rewards[i, a]

    def logp_of(net: ManagerPolicy, idx: np.ndarray, acts: th.Tensor) -> th.Tensor:
        dist = th.distributions.Categorical(logits=net(X[idx], M[idx]))
        return dist.log_prob(acts.T).T  # (B, G)

    updates = cfg.epochs * -(-len(tuples) // cfg.batch)
    history: list[dict] = []
    for epoch in range(cfg.epochs):
        order = rng.permutation(len(tuples))
        for start in range(0, len(tuples), cfg.batch):
            idx = order[start : start + cfg.batch]
            with th.no_grad():
                probs = th.softmax(policy(X[idx], M[idx]), dim=1)
                acts = th.multinomial(probs, cfg.group, replacement=True, generator=gen)
                old = logp_of(policy, idx, acts)
            r = np.array(
                [[reward(int(i), int(a)) for a in row] for i, row in zip(idx, acts, strict=True)]
            )
            if progress is not None:
                progress()
            spread = r.std(axis=1, keepdims=True)
            adv = th.from_numpy((r - r.mean(axis=1, keepdims=True)) / (spread + 1e-6)).float()
            loss_v = 0.0
            if spread.any():  # a batch whose every group has one reward teaches nothing
                for _ in range(cfg.update_epochs):
                    logp = logp_of(policy, idx, acts)
                    ratio = th.exp(logp - old)
                    obj = th.min(ratio * adv, ratio.clamp(1 - cfg.clip, 1 + cfg.clip) * adv)
                    loss = -obj.mean()
                    if ref is not None:
                        d = logp_of(ref, idx, acts) - logp
                        loss = loss + cfg.beta * (th.exp(d) - d - 1).mean()
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    loss_v = float(loss.detach())
            ops = [
                index_to_action(int(a), feats[int(i)][2], policy.k).op
                for i, row in zip(idx, acts, strict=True)
                for a in row
            ]
            history.append(
                {
                    "epoch": epoch + 1,
                    "reward_em": float(r.mean()),
                    "reward_spread": float(spread.mean()),
                    "ops": {op: ops.count(op) for op in OPS},
                    "loss": loss_v,
                }
            )
            if checkpoint is not None:
                checkpoint(len(history) / updates)
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
