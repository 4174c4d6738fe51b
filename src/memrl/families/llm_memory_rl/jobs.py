"""The LLM memory RL family's jobs: a frozen LLM whose memory is shaped by reinforcement
learning. One job per (paper's condition, run); nothing here knows about claims.

**REMEMBERER / RLEM** (Zhang et al. 2023).  Run ``r`` starts from initial memory ``r % 2``
(annotated trajectories of two ``init`` tasks each) and trains on set ``(r // 2) % 2``
(``train_a`` / ``train_b``), as REMEMBERER tests robustness over two initial memories x two
training sets; its seed is ``r``. Conditions: ``llm`` (no exemplars), ``static`` (exemplars
from the initial memory, never updated), ``rlem`` (memory updated by n-step Q-learning after
each training episode) and the ablations ``rlem_no_bootstrap`` (targets are the discounted
returns to the episode's end, as the reference's ``n_step_flatten=None``) and
``rlem_no_discouraged`` (exemplars show no discouraged action).

**AgentFly / Memento** (2025).  The first ``agentfly.tasks`` test tasks are played for
``iterations`` passes; with a case bank (seeded with the annotated cases of the ``init``
tasks) every episode is written back as a case, selected next time by cosine kNN
(``nonparametric``) or a learned Q(s, c) (``parametric``); ``none`` plays without cases.
Each seed plays the tasks in its own order every iteration.

**Memory-R1** (Yan et al. 2025).  On LoCoMo-like dialogues (:mod:`memrl.envs.dialogue`) a
memory manager turns every observed fact into ADD / UPDATE / DELETE / NOOP; the frozen answer
agent then answers the test questions from the final bank.  ``grpo`` trains the manager with
GRPO from the answer agent's exact match on each training turn's question (one job per seed); ``add_only``, ``heuristic``
(Mem0-style) and ``prompted`` (the LLM without RL) are deterministic, so they run once.

Each job gets only the parameter blocks it reads (as dicts; the grid's condition lists are
left out) and returns its memories as ``files``, kept beside its result in the run store.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from memrl.families.llm_memory_rl.params import (
    AgentFlyParams,
    DialogueDataParams,
    LLMMemoryRLParams,
    LLMParams,
    MemoryR1Params,
    RLEMParams,
    ShopDataParams,
    ShopEnvParams,
)
from memrl.jobs import JobSpec

HERE = "memrl.families.llm_memory_rl.jobs"
TRAIN_SETS = ("train_a", "train_b")
MR1_DETERMINISTIC = ("add_only", "heuristic", "prompted")
BlockT = TypeVar("BlockT")


# =========================================================================== resources
@lru_cache(maxsize=1)
def _loaded_scorer(model: str, device: str, dtype: str):
    """One in-process scorer per worker process (the model loads once, serves every job)."""
    from memrl.llm.models import load_model
    from memrl.llm.scoring import LLMScorer

    return LLMScorer(load_model(model, device, dtype=dtype))


def _scorer(llm: LLMParams):
    """The scorer ``llm.backend`` names: the model in this process, or the server at
    ``llm.url`` (:mod:`memrl.llm.server`); the agents cannot tell them apart."""
    if llm.backend == "server":
        from memrl.llm.server import ServerScorer

        return ServerScorer(llm.url or "", llm.model, llm.timeout, llm.retries)
    scorer = _loaded_scorer(llm.model, llm.device, llm.dtype)
    scorer.forget()  # a job's tokens and scores: the same whichever jobs this worker ran before
    return scorer


def _used(scorer, before: dict[str, Any]) -> dict[str, Any]:
    """The LLM a job used: backend, model, and the decisions and prompt tokens it cost."""
    now = scorer.usage()
    return {
        **now,
        "decisions": now["decisions"] - before["decisions"],
        "tokens": now["tokens"] - before["tokens"],
    }


@lru_cache(maxsize=1)
def _embedder(name: str):
    from memrl.llm.embeddings import Embedder

    return Embedder(name)


def _typed(cls: type[BlockT], block: dict[str, Any]) -> BlockT:
    """A job's parameter block (as the grid dumped it, validated when the profile loaded)
    back as its typed model."""
    return cls.model_construct(**block)


def shop_items(tasks, results) -> dict[str, list]:
    """Per test task (the items a test's mean is over): its id, reward and success."""
    return {
        "task": [t.tid for t in tasks],
        "score": [float(r.reward) for r in results],
        "success": [float(r.success) for r in results],
    }


def question_items(rows: list[dict]) -> dict[str, list]:
    """Per test question (items clustered by conversation): F1 and exact match."""
    return {
        "conversation": [r["conversation"] for r in rows],
        "f1": [float(r["f1"]) for r in rows],
        "em": [float(r["em"]) for r in rows],
    }


def _saved(save: Callable[[Path], None], name: str) -> bytes:
    """What ``save(path)`` writes, as bytes (to return as one of a job's ``files``)."""
    with tempfile.TemporaryDirectory() as tmp:
        save(Path(tmp) / name)
        return (Path(tmp) / name).read_bytes()


def load_tasks(shop_data: ShopDataParams):
    """The catalogue and task splits from ``data/`` (a clear error names ``make data``)."""
    from memrl.envs.shop import load_shop
    from memrl.runtime import repo_root

    return load_shop(repo_root() / shop_data.path)


def load_dialogues(dialogue_data: DialogueDataParams):
    from memrl.envs.dialogue import load_dialogues as load
    from memrl.runtime import repo_root

    return load(repo_root() / dialogue_data.path)


def initial_memory(rlem: RLEMParams, env, tasks, bootstrap: bool = True):
    """An experience memory seeded with the annotated trajectories of ``tasks``."""
    from memrl.envs.shop import expert_episode
    from memrl.memory.experience import ExperienceMemory, Step

    mem = ExperienceMemory(rlem.capacity, rlem.n_step, rlem.gamma, bootstrap)
    for task in tasks:
        mem.update([Step(task.instruction, *t) for t in expert_episode(env, task)])
    return mem


def _setup(llm: LLMParams, shop: ShopEnvParams, shop_data: ShopDataParams, run: int, salt: int):
    """What every shop job starts from: its seed and RNG, the shop, and this process's LLM."""
    from memrl.envs.shop import ShopEnv
    from memrl.runtime import seed_everything

    seed_everything(run)
    rng = np.random.default_rng(np.random.SeedSequence([run, salt]))
    products, splits = load_tasks(shop_data)
    env = ShopEnv(products, shop.max_steps, shop.n_results)
    return rng, splits, env, _scorer(llm), _embedder(llm.embedder)


# =========================================================================== one run
def rlem_job(llm: dict, shop: dict, shop_data: dict, rlem: dict, condition: str, run: int) -> dict:
    """One REMEMBERER (condition, run): train (RLEM variants) for ``epochs`` over 10 tasks,
    then test."""
    from memrl.agents.rlem import MODES, RLEMAgent

    llm, rl = _typed(LLMParams, llm), _typed(RLEMParams, rlem)
    shop, shop_data = _typed(ShopEnvParams, shop), _typed(ShopDataParams, shop_data)
    rng, splits, env, scorer, embedder = _setup(llm, shop, shop_data, run, salt=7)
    init_id, train_set = run % 2, TRAIN_SETS[(run // 2) % 2]
    half = len(splits["init"]) // 2
    init_tasks = splits["init"][init_id * half : (init_id + 1) * half]
    before = scorer.usage()
    memory = None
    if condition != "llm":
        memory = initial_memory(rl, env, init_tasks, condition != "rlem_no_bootstrap")
    agent = RLEMAgent(
        scorer,
        embedder,
        memory,
        condition if condition in MODES else "rlem",
        rng,
        exemplars=rl.exemplars,
        temperature=llm.temperature,
        discouraged=condition != "rlem_no_discouraged",
    )
    train_success, train_score, checks = [], [], []
    test_tasks = splits["test"][: rl.test_tasks]
    if agent.mode == "rlem":
        tasks = list(splits[train_set])
        for epoch in range(rl.epochs):
            res = [
                agent.run_episode(env, tasks[i], learn=True) for i in rng.permutation(len(tasks))
            ]
            train_success.append(float(np.mean([r.success for r in res])))
            train_score.append(float(np.mean([r.reward for r in res])))
            if epoch < rl.epochs - 1:  # the trend's checkpoints: a test after every epoch
                side_rng = np.random.default_rng(np.random.SeedSequence([run, 7, epoch]))
                checks.append(agent.side_test(env, test_tasks, side_rng))
    test = [agent.run_episode(env, t, learn=False) for t in test_tasks]
    checks.append(test)
    files = {}
    if memory is not None:
        name = f"{condition}-run{run}.json"
        files[name] = _saved(memory.save, name)
    return {
        "paper": "rememberer",
        "condition": condition,
        "run": run,
        "init_memory": "AB"[init_id],
        "train_set": train_set if agent.mode == "rlem" else "",
        "test_success": float(np.mean([r.success for r in test])),
        "test_score": float(np.mean([r.reward for r in test])),
        "test_steps": float(np.mean([r.steps for r in test])),
        "test_items": shop_items(test_tasks, test),
        "train_success": train_success,
        "train_score": train_score,
        "checkpoints": [(i + 1) / len(checks) for i in range(len(checks))],
        "checkpoint_success": [float(np.mean([r.success for r in t])) for t in checks],
        "checkpoint_score": [float(np.mean([r.reward for r in t])) for t in checks],
        "memory_records": len(memory) if memory is not None else 0,
        "decisions": agent.decisions,
        "tokens": scorer.tokens_encoded - before["tokens"],
        "llm": _used(scorer, before),
        "files": files,
    }


def agentfly_job(
    llm: dict, shop: dict, shop_data: dict, agentfly: dict, condition: str, run: int
) -> dict:
    """One AgentFly (condition, run): ``iterations`` passes over the same tasks."""
    from memrl.agents.memento import CaseAgent
    from memrl.envs.shop import expert_episode
    from memrl.memory.cases import Case, CaseBank

    llm, hp = _typed(LLMParams, llm), _typed(AgentFlyParams, agentfly)
    shop, shop_data = _typed(ShopEnvParams, shop), _typed(ShopDataParams, shop_data)
    rng, splits, env, scorer, embedder = _setup(llm, shop, shop_data, run, salt=11)
    before = scorer.usage()
    bank = None
    if condition != "none":
        bank = CaseBank(condition, hp.k, hp.q_learning_rate, hp.q_epochs, seed=run)
        for task in splits["init"]:  # annotated cases, as REMEMBERER's initial memories
            played = expert_episode(env, task)
            bank.add(Case(task.instruction, tuple(t.action for t in played), played[-1].reward))
    agent = CaseAgent(scorer, embedder, bank, rng, llm.temperature)
    tasks = splits["test"][: hp.tasks]
    success, score, best = [], [], np.zeros(len(tasks))
    solved = np.zeros(len(tasks), dtype=bool)
    best_so_far, solved_so_far, per_task = [], [], []
    for _ in range(hp.iterations):
        r, s = np.zeros(len(tasks)), np.zeros(len(tasks), dtype=bool)
        for i in rng.permutation(len(tasks)):  # each seed meets the tasks in its own order
            res = agent.run_episode(env, tasks[i], learn=True)
            r[i], s[i] = res.reward, res.success
        best, solved = np.maximum(best, r), solved | s
        success.append(float(s.mean()))
        score.append(float(r.mean()))
        best_so_far.append(float(best.mean()))
        solved_so_far.append(float(solved.mean()))
        per_task.append([float(v) for v in r])
    files = {}
    if bank is not None:
        name = f"agentfly-{condition}-run{run}.json"
        files[name] = _saved(bank.save, name)
    return {
        "paper": "agentfly",
        "condition": condition,
        "run": run,
        "iter_success": success,
        "iter_score": score,
        "cum_success": solved_so_far,
        "best_score": best_so_far,
        "tasks": [t.tid for t in tasks],
        "task_scores": per_task,  # iterations x tasks: the items behind every mean above
        "cases": len(bank) if bank is not None else 0,
        "decisions": agent.decisions,
        "tokens": scorer.tokens_encoded - before["tokens"],
        "llm": _used(scorer, before),
        "files": files,
    }


def grpo_config(hp: MemoryR1Params):
    from memrl.agents.memory_r1 import GRPOConfig

    return GRPOConfig(
        hp.epochs, hp.group, hp.learning_rate, hp.clip, hp.update_epochs, hp.beta, hp.batch
    )


def manager_policy(hp: MemoryR1Params, train, embed):
    """The manager GRPO starts from: the head, cloned from the Mem0-style heuristic for
    ``warm_start_epochs`` (0: as initialised) on the training tuples' states and the states
    the heuristic meets building the training dialogues' banks itself, its targets smoothed
    by ``warm_start_explore``."""
    from memrl.agents import memory_r1 as mr1

    policy = mr1.ManagerPolicy(embed(["x"]).shape[1], hp.related_k, hp.hidden)
    if hp.warm_start_epochs:
        teacher = mr1.HeuristicManager(hp.heuristic_noop, hp.heuristic_update)
        states = mr1.training_tuples(train, embed) + mr1.teacher_states(train, teacher, embed)
        mr1.warm_start(
            policy, states, teacher, hp.warm_start_epochs, hp.warm_start_lr, hp.warm_start_explore
        )
    return policy


def memory_r1_job(
    llm: dict, dialogue_data: dict, memory_r1: dict, condition: str, run: int
) -> dict:
    """One Memory-R1 (condition, run): train the manager (``grpo``), then answer the test
    questions from the bank each manager builds for every test conversation."""
    import pandas as pd

    from memrl.agents import memory_r1 as mr1
    from memrl.runtime import seed_everything

    seed_everything(run)
    rng = np.random.default_rng(np.random.SeedSequence([run, 13]))
    llm, hp = _typed(LLMParams, llm), _typed(MemoryR1Params, memory_r1)
    splits = load_dialogues(_typed(DialogueDataParams, dialogue_data))
    test = splits["test"][: hp.test_conversations]
    scorer, embedder = _scorer(llm), _embedder(llm.embedder)
    before = scorer.usage()
    answerer = mr1.AnswerAgent(scorer, hp.answer_k)
    history: list[dict] = []
    checks: list[tuple[float, list[dict]]] = []
    files = {}
    if condition == "add_only":
        manager = mr1.AddOnly()
    elif condition == "heuristic":
        manager = mr1.HeuristicManager(hp.heuristic_noop, hp.heuristic_update)
    elif condition == "prompted":
        manager = mr1.PromptedManager(scorer, hp.related_k)
    else:
        policy = manager_policy(hp, splits["train"], embedder.embed)
        grpo = grpo_config(hp)

        def halfway(done: float) -> None:  # the trend's checkpoint (evaluation is greedy)
            if not checks and done >= 0.5:
                checks.append(
                    (done, mr1.evaluate(mr1.RLManager(policy), test, answerer, embedder.embed)[0])
                )

        history = mr1.train_grpo(
            policy, splits["train"], answerer, embedder.embed, grpo, rng, checkpoint=halfway
        )
        manager = mr1.RLManager(policy)
        name = f"memory_r1-grpo-run{run}.pt"
        files[name] = _saved(policy.save, name)
    train_calls = answerer.calls
    rows, ops = mr1.evaluate(manager, test, answerer, embedder.embed)
    q, o = pd.DataFrame(rows), pd.DataFrame(ops)
    checks.append((1.0, rows))
    return {
        "paper": "memory_r1",
        "condition": condition,
        "run": run,
        "f1": float(q.f1.mean()),
        "em": float(q.em.mean()),
        "f1_by_category": q.groupby("category").f1.mean().round(4).to_dict(),
        "items": question_items(rows),
        "ops_by_kind": {k: g.op.value_counts().to_dict() for k, g in o.groupby("kind")},
        # GRPO's reward along training: the sampled operations' exact match on their
        # training turn's question, and the operations sampled, per epoch
        "reward_em": [
            float(np.mean([h["reward_em"] for h in history if h["epoch"] == e]))
            for e in range(1, hp.epochs + 1)
        ]
        if history
        else [],
        "train_ops": [
            {op: sum(h["ops"][op] for h in history if h["epoch"] == e) for op in mr1.OPS}
            for e in range(1, hp.epochs + 1)
        ]
        if history
        else [],
        "checkpoints": [f for f, _ in checks],
        "checkpoint_f1": [float(pd.DataFrame(r).f1.mean()) for _, r in checks],
        "checkpoint_em": [float(pd.DataFrame(r).em.mean()) for _, r in checks],
        "questions": len(q),
        "memories": float(q.groupby("conversation").memories.first().mean()),
        "answer_calls_train": train_calls,
        "answer_calls_test": answerer.calls - train_calls,
        "tokens": scorer.tokens_encoded - before["tokens"],
        "llm": _used(scorer, before),
        "files": files,
    }


# seconds per job measured on the default profile (2026-11-23, 1 thread): two workers
# finish together when the longest jobs go first
EXPECTED_SECONDS = {
    ("rlem_job", "rlem"): 160,
    ("rlem_job", "rlem_no_bootstrap"): 137,
    ("rlem_job", "rlem_no_discouraged"): 120,
    ("rlem_job", "static"): 33,
    ("rlem_job", "llm"): 17,
    # the per-turn trainer (issue 71): ~300-500 answer calls (one per (turn, operation) sampled)
    # + ~150 at test, ~0.33-0.46 core-s each; one epoch on one test conversation: 124 core-s
    ("memory_r1_job", "grpo"): 250,
    ("memory_r1_job", "prompted"): 109,
    ("memory_r1_job", "add_only"): 58,
    ("memory_r1_job", "heuristic"): 56,
    ("agentfly_job", "nonparametric"): 82,
    ("agentfly_job", "parametric"): 76,
    ("agentfly_job", "none"): 54,
}


def preflight(cfg: LLMMemoryRLParams) -> None:
    """Fail before any job starts if the model or the data is missing (and convert once)."""
    from memrl.llm.models import ensure_model

    if cfg.llm.backend == "server":
        _scorer(cfg.llm).check()  # one tiny request: down, wrong URL or no echo fail here
    else:
        ensure_model(cfg.llm.model)
    load_tasks(cfg.shop_data)
    load_dialogues(cfg.dialogue_data)


def decision_seconds(cfg: LLMMemoryRLParams, repeats: int = 3) -> float | None:
    """With ``llm.backend: server``, the seconds one decision takes on the served model,
    timed now on a shop decision of the family's usual size (instructions, two exemplars'
    worth of context, a page, six candidate actions); ``None`` in-process (the published
    timings price it). What ``python -m memrl estimate`` prices a served profile with."""
    if cfg.llm.backend != "server":
        return None
    import time

    from memrl.agents.rlem import PREFIX

    scorer = _scorer(cfg.llm)
    page = "Instruction: i need a vegan shampoo in 8 oz, price lower than 20 dollars\n" * 4
    context = "Example episode: search[vegan shampoo] -> click[item] -> buy now\n" * 12
    actions = [" search[vegan shampoo]", " click[B0]", " click[B1]", " next >", " back", " buy"]
    scorer.score(PREFIX, page, actions, context)  # a server's first request may warm it up
    start = time.perf_counter()
    for i in range(repeats):
        scorer.score(PREFIX, f"{page}Step {i}\nAction:", actions, context)
    return (time.perf_counter() - start) / repeats


def grid(cfg: LLMMemoryRLParams) -> list[JobSpec]:
    """Every job: REMEMBERER's and AgentFly's (condition, run), Memory-R1's GRPO runs and its
    deterministic baselines (once each)."""

    def dump(block) -> dict[str, Any]:
        return block.model_dump(mode="json", exclude={"conditions"})

    llm, shop, data = dump(cfg.llm), dump(cfg.shop), dump(cfg.shop_data)
    runs = range(cfg.seeds)

    def job(fn: str, c: str, r: int, label: str, **kw: Any) -> JobSpec:
        return JobSpec(
            f"{HERE}:{fn}",
            {**kw, "condition": c, "run": r},
            EXPECTED_SECONDS.get((fn, c), 0),
            label=f"{label} {c} · run {r}",
        )

    out = [
        job("rlem_job", c, r, "REMEMBERER", llm=llm, shop=shop, shop_data=data, rlem=dump(cfg.rlem))
        for c in cfg.rlem.conditions
        for r in runs
    ]
    out += [
        job(
            "agentfly_job",
            c,
            r,
            "AgentFly",
            llm=llm,
            shop=shop,
            shop_data=data,
            agentfly=dump(cfg.agentfly),
        )
        for c in cfg.agentfly.conditions
        for r in runs
    ]
    out += [
        job(
            "memory_r1_job",
            c,
            r,
            "Memory-R1",
            llm=llm,
            dialogue_data=dump(cfg.dialogue_data),
            memory_r1=dump(cfg.memory_r1),
        )
        for c in cfg.memory_r1.conditions
        for r in ([0] if c in MR1_DETERMINISTIC else range(cfg.memory_r1_seeds or cfg.seeds))
    ]
    return out
