"""The LLM family's floors, ceilings and positive controls, run as ordinary jobs.

On the shop, three policies that know nothing of the LLM conditions' memory: ``random``
(uniform over the admissible actions), ``random search-then-buy`` (a random query, a random
result, buy: what a policy that can only search and buy scores) and ``oracle`` (the
annotated expert: the ceiling). Each plays REMEMBERER's test tasks once and AgentFly's
tasks for its iterations (scored as the claims score the agents). On the dialogues, the
answer agent with **no memory** (every question answered from an empty bank) is Memory-R1's
floor.

**Positive controls** show whether the LLM can use a memory at all: REMEMBERER's static agent
with the test tasks' own expert trajectories as its memory (``expert exemplars``), AgentFly's
agent with each task's own expert case in its bank (``expert cases``), Memory-R1's answer
agent reading the gold memory bank (``gold memory``). A claim whose methods sit at the floor
says "model scale" only when its control does too. Nothing here knows about claims.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from memrl.families.llm_memory_rl.jobs import (
    _setup,
    _typed,
    initial_memory,
    question_items,
    shop_items,
)
from memrl.families.llm_memory_rl.params import (
    AgentFlyParams,
    LLMMemoryRLParams,
    LLMParams,
    RLEMParams,
    ShopDataParams,
    ShopEnvParams,
)
from memrl.jobs import JobSpec

HERE = "memrl.families.llm_memory_rl.floors"
RANDOM, SEARCH_BUY, ORACLE = "random", "random search-then-buy", "oracle"
SHOP_POLICIES = (RANDOM, SEARCH_BUY, ORACLE)


def _play(env, task, policy: str, rng: np.random.Generator) -> float:
    """One episode of ``policy`` on ``task``: its reward (0 if it never buys)."""
    from memrl.envs.shop import expert_episode

    if policy == ORACLE:
        return float(expert_episode(env, task)[-1].reward)
    _, info = env.reset(options={"task": task})
    while True:
        acts = info["admissible"]
        if policy == SEARCH_BUY and info["page"] == "item":
            action = "click[buy now]"
        elif policy == SEARCH_BUY and info["page"] == "results":
            action = acts[int(rng.integers(len(acts) - 1))]  # a result, not "back to search"
        else:
            action = acts[int(rng.integers(len(acts)))]
        _, reward, done, truncated, info = env.step(action)
        if done or truncated:
            return float(reward)


def shop_floor(
    shop: dict,
    shop_data: dict,
    policy: str,
    run: int,
    test_tasks: int,
    fly_tasks: int,
    iterations: int,
) -> dict[str, Any]:
    """``policy`` on the first ``test_tasks`` test tasks (once) and on the first
    ``fly_tasks`` for ``iterations`` passes (AgentFly's per-iteration and best-so-far score)."""
    from memrl.envs.shop import ShopEnv, load_shop
    from memrl.runtime import repo_root

    products, splits = load_shop(repo_root() / shop_data["path"])
    env = ShopEnv(products, shop["max_steps"], shop["n_results"])
    rng = np.random.default_rng(np.random.SeedSequence([run, 17]))
    test_set = splits["test"][:test_tasks]
    test = [_play(env, t, policy, rng) for t in test_set]
    tasks = splits["test"][:fly_tasks]
    best, iter_score, best_score, per_task = np.zeros(len(tasks)), [], [], []
    for _ in range(iterations):
        r = np.array([_play(env, t, policy, rng) for t in tasks])
        best = np.maximum(best, r)
        iter_score.append(float(r.mean()))
        best_score.append(float(best.mean()))
        per_task.append([float(v) for v in r])
    success = [float(v >= 1 - 1e-9) for v in test]
    return {
        "floor": policy,
        "env": "shop",
        "run": run,
        "test_score": float(np.mean(test)),
        "test_success": float(np.mean(success)),
        "test_items": {"task": [t.tid for t in test_set], "score": test, "success": success},
        "iter_score": iter_score,
        "best_score": best_score,
        "tasks": [t.tid for t in tasks],
        "task_scores": per_task,
    }


def no_memory_answers(llm: dict, dialogue_data: dict, memory_r1: dict) -> dict[str, Any]:
    """Memory-R1's answer agent with an empty memory bank on the test questions."""
    from memrl.agents.memory_r1 import MemoryBank

    bank = lambda conv, embed: MemoryBank(embed)  # noqa: E731
    return {"floor": "no memory", **_answers(llm, dialogue_data, memory_r1, bank)}


def _answers(llm: dict, dialogue_data: dict, memory_r1: dict, bank_of) -> dict[str, Any]:
    """F1 and exact match of Memory-R1's answer agent on the test questions, each test
    conversation's questions answered from ``bank_of(conversation, embed)``, with the
    per-question items."""
    from memrl.agents import memory_r1 as mr1
    from memrl.envs.dialogue import exact_match, f1_score, load_dialogues
    from memrl.families.llm_memory_rl.jobs import _embedder, _scorer
    from memrl.runtime import repo_root, seed_everything

    seed_everything(0)
    splits = load_dialogues(repo_root() / dialogue_data["path"])
    test = splits["test"][: memory_r1["test_conversations"]]
    answerer = mr1.AnswerAgent(_scorer(LLMParams(**llm)), memory_r1["answer_k"])
    embed = _embedder(llm["embedder"]).embed
    rows = [
        {"conversation": c.cid, "f1": f1_score(p, q.answer), "em": exact_match(p, q.answer)}
        for c in test
        for bank in [bank_of(c, embed)]
        for q in c.questions
        for p in [answerer.answer(bank, q)]
    ]
    return {
        "env": "dialogues",
        "f1": float(np.mean([r["f1"] for r in rows])),
        "em": float(np.mean([r["em"] for r in rows])),
        "questions": len(rows),
        "items": question_items(rows),
    }


# =========================================================================== positive controls
class _Recorder:
    """A scorer that keeps its last call's candidates and scores (a control's diagnosis)."""

    def __init__(self, scorer):
        self.inner, self.last = scorer, None

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    def score(self, prefix: str, prompt: str, candidates, context: str = ""):
        s = self.inner.score(prefix, prompt, candidates, context)
        self.last = ([c.strip() for c in candidates], np.asarray(s, dtype=float))
        return s

    def choose(self, prefix, prompt, candidates, temperature, rng, context: str = "") -> int:
        from memrl.llm.scoring import Scorer

        return Scorer.choose(self, prefix, prompt, candidates, temperature, rng, context)


def _divergence(agent, recorder: _Recorder, env, task, expert) -> tuple[object, dict | None]:
    """Play ``task`` once (no learning) and find the first page where the agent leaves the
    expert's path: the expert's action and the chosen one with their scores (mean token
    log-likelihood), where the expert's action was the one its exemplar encourages."""
    from memrl.agents.rlem import EpisodeResult

    obs, info = env.reset(options={"task": task})
    actions, first, reward, success = [], None, 0.0, False
    done = truncated = False
    while not (done or truncated):
        adm = info["admissible"]
        a = agent.act(task.instruction, info["page"], obs, adm)
        step = len(actions)
        on_path = (
            first is None and step < len(expert) and actions == [t.action for t in expert[:step]]
        )
        if on_path and a != expert[step].action and recorder.last is not None:
            cands, scores = recorder.last
            want = expert[step].action
            first = {
                "task": task.tid,
                "step": step,
                "page": info["page"],
                "expert": want,
                "chosen": a,
                "expert_loglik": float(scores[cands.index(want)]) if want in cands else None,
                "chosen_loglik": float(scores[cands.index(a)]),
            }
        actions.append(a)
        obs, reward, done, truncated, info = env.step(a)
        success = bool(info["success"])
    return EpisodeResult(float(reward), success, len(actions), tuple(actions)), first


def expert_exemplars(
    llm: dict, shop: dict, shop_data: dict, rlem: dict, run: int
) -> dict[str, Any]:
    """REMEMBERER's positive control: the static agent whose memory holds the annotated
    trajectories of the *test tasks themselves* (every exemplar it retrieves encourages the
    right action). If the LLM cannot follow these, no memory it could learn would help."""
    from memrl.agents.rlem import RLEMAgent
    from memrl.envs.shop import expert_episode

    llm_p, rl = _typed(LLMParams, llm), _typed(RLEMParams, rlem)
    shop_p, data_p = _typed(ShopEnvParams, shop), _typed(ShopDataParams, shop_data)
    rng, splits, env, scorer, embedder = _setup(llm_p, shop_p, data_p, run, salt=23)
    tasks = splits["test"][: rl.test_tasks]
    recorder = _Recorder(scorer)
    memory = initial_memory(rl, env, tasks)
    agent = RLEMAgent(
        recorder,
        embedder,
        memory,
        "static",
        rng,
        exemplars=rl.exemplars,
        temperature=llm_p.temperature,
    )
    played = [_divergence(agent, recorder, env, t, expert_episode(env, t)) for t in tasks]
    return _shop_control("expert exemplars", run, tasks, [r for r, _ in played]) | {
        "divergences": [d for _, d in played if d is not None]
    }


def expert_cases(
    llm: dict, shop: dict, shop_data: dict, agentfly: dict, run: int
) -> dict[str, Any]:
    """AgentFly's positive control: one pass over its tasks with a case bank holding each
    task's own expert case (non-parametric retrieval finds it first)."""
    from memrl.agents.memento import CaseAgent
    from memrl.envs.shop import expert_episode
    from memrl.memory.cases import Case, CaseBank

    llm_p, hp = _typed(LLMParams, llm), _typed(AgentFlyParams, agentfly)
    shop_p, data_p = _typed(ShopEnvParams, shop), _typed(ShopDataParams, shop_data)
    rng, splits, env, scorer, embedder = _setup(llm_p, shop_p, data_p, run, salt=29)
    tasks = splits["test"][: hp.tasks]
    bank = CaseBank("nonparametric", hp.k, hp.q_learning_rate, hp.q_epochs, seed=run)
    for task in tasks:
        played = expert_episode(env, task)
        bank.add(Case(task.instruction, tuple(t.action for t in played), played[-1].reward))
    agent = CaseAgent(scorer, embedder, bank, rng, llm_p.temperature)
    return _shop_control(
        "expert cases", run, tasks, [agent.run_episode(env, t, learn=False) for t in tasks]
    )


def _shop_control(name: str, run: int, tasks, results) -> dict[str, Any]:
    """A shop control's record: its test score and success, and the tasks behind them."""
    return {
        "control": name,
        "env": "shop",
        "run": run,
        "test_score": float(np.mean([r.reward for r in results])),
        "test_success": float(np.mean([r.success for r in results])),
        "test_items": shop_items(tasks, results),
    }


def gold_memory(llm: dict, dialogue_data: dict, memory_r1: dict) -> dict[str, Any]:
    """Memory-R1's positive control: the answer agent reading the *gold* memory bank of each
    test conversation (every fact as the dialogue last left it: introduced or changed facts
    kept in their latest form, retracted ones removed). What a perfect manager would build."""
    return {"control": "gold memory", **_answers(llm, dialogue_data, memory_r1, _gold_bank)}


def _gold_bank(conv, embed):
    """The facts of ``conv`` as its last turns left them, as a memory bank."""
    from memrl.agents.memory_r1 import MemoryBank

    facts: dict[str, str] = {}
    for t in conv.turns:
        if t.kind in ("intro", "change"):
            facts[t.key] = t.fact
        elif t.kind == "retract":
            facts.pop(t.key, None)
    return MemoryBank(embed, list(facts.values()))


class _BestOperation:
    """The teacher of the control's supervised ceiling: on each training tuple the operation
    whose bank answers the tuple's question under ``reader`` (ties: ADD, UPDATE, DELETE,
    NOOP, then the more related memory), from the tuples' states only."""

    def __init__(self, tuples, reader, k: int):
        from memrl.agents import memory_r1 as mr1
        from memrl.envs.dialogue import exact_match

        order = {"ADD": 0, "UPDATE": 1, "DELETE": 2, "NOOP": 3}
        self.best = {}
        for t in tuples:
            acts = mr1.candidate_actions(t.bank.related(t.fact, k))
            em = [
                exact_match(reader.answer(t.bank.apply(a, t.fact), t.question), t.question.answer)
                for a in acts
            ]
            self.best[id(t.bank), t.fact] = min(
                zip(acts, em, strict=True), key=lambda ae: (-ae[1], order[ae[0].op])
            )[0]

    def decide(self, bank, fact: str):
        return self.best[id(bank), fact]


def reader_control(embedder: str, dialogue_data: dict, memory_r1: dict, run: int) -> dict:
    """Memory-R1's learnability control (issue 71): the manager trained as LLM-7/8's GRPO
    arm is (the same trainer, parameters, warm start and seed), rewarded by a deterministic
    reader (:class:`~memrl.agents.memory_r1.TopMemoryReader`) instead of the LLM, and tested
    under that reader beside the managers it must beat: the Mem0-style heuristic, adding
    every fact, and the gold bank (what ideal operations keep). Under the reader better
    operations than the heuristic's are known to exist; a manager that does not beat it
    there says the trainer, not Memory-R1, failed. No LLM runs.

    Scored on the validation conversations as well as the test ones (16 conversations, 177
    questions, not 8 and 88): nothing trains or selects on them, the reader is cheap, and
    the questions are resampled by conversation, so 8 left the CI of GRPO's difference to
    the heuristic about +-0.12 wide (6 runs).

    Beside them, the policy class's own ceiling: the same head trained by cross-entropy on
    each training tuple's best operation under the reader (no RL), so a GRPO manager that
    fails its control can be told apart from a head that cannot represent the better
    operations from 210 training turns."""
    from collections import Counter

    from memrl.agents import memory_r1 as mr1
    from memrl.envs.dialogue import exact_match, f1_score
    from memrl.families.llm_memory_rl.jobs import (
        _embedder,
        grpo_config,
        load_dialogues,
        manager_policy,
    )
    from memrl.families.llm_memory_rl.params import DialogueDataParams, MemoryR1Params
    from memrl.families.llm_memory_rl.tables import READER, SUPERVISED
    from memrl.runtime import seed_everything

    seed_everything(run)
    rng = np.random.default_rng(np.random.SeedSequence([run, 13]))  # as memory_r1_job's
    hp = _typed(MemoryR1Params, memory_r1)
    splits = load_dialogues(_typed(DialogueDataParams, dialogue_data))
    test = [c for s in ("val", "test") for c in splits[s][: hp.test_conversations]]
    embed = _embedder(embedder).embed
    reader = mr1.TopMemoryReader(hp.answer_k)
    policy = manager_policy(hp, splits["train"], embed)
    history = mr1.train_grpo(policy, splits["train"], reader, embed, grpo_config(hp), rng)
    tuples = mr1.training_tuples(splits["train"], embed)
    ceiling = mr1.ManagerPolicy(policy.dim, hp.related_k, hp.hidden)
    best = _BestOperation(tuples, reader, hp.related_k)
    mr1.warm_start(ceiling, tuples, best, hp.warm_start_epochs, hp.warm_start_lr)
    managers = {
        "grpo": mr1.RLManager(policy),
        SUPERVISED: mr1.RLManager(ceiling),
        "heuristic": mr1.HeuristicManager(hp.heuristic_noop, hp.heuristic_update),
        "add_only": mr1.AddOnly(),
    }
    scored = {}
    for name, manager in managers.items():
        rows, ops = mr1.evaluate(manager, test, reader, embed)
        scored[name] = {**question_items(rows), "ops": dict(Counter(o["op"] for o in ops))}
    gold = [
        {"conversation": c.cid, "f1": f1_score(p, q.answer), "em": exact_match(p, q.answer)}
        for c in test
        for bank in [_gold_bank(c, embed)]
        for q in c.questions
        for p in [reader.answer(bank, q)]
    ]
    scored["gold"] = {**question_items(gold), "ops": {}}
    return {
        "control": READER,
        "env": "dialogues",
        "run": run,
        "managers": scored,
        "reward_em": [
            float(np.mean([h["reward_em"] for h in history if h["epoch"] == e]))
            for e in range(1, hp.epochs + 1)
        ],
    }


def grid(cfg: LLMMemoryRLParams) -> list[JobSpec]:
    """The shop's three policies per run (the oracle is deterministic: once), the two shop
    controls per run, the no-memory answerer and the gold-memory control (deterministic:
    once each)."""
    shop = cfg.shop.model_dump(mode="json")
    data = cfg.shop_data.model_dump(mode="json")
    fly = cfg.agentfly
    out = [
        JobSpec(
            f"{HERE}:shop_floor",
            {
                "shop": shop,
                "shop_data": data,
                "policy": p,
                "run": r,
                "test_tasks": cfg.rlem.test_tasks,
                "fly_tasks": fly.tasks,
                "iterations": fly.iterations,
            },
            1.0,
            label=f"{p} · shop · run {r}",
        )
        for p in SHOP_POLICIES
        for r in ([0] if p == ORACLE else range(cfg.seeds))
    ]
    mr1 = cfg.memory_r1.model_dump(mode="json", exclude={"conditions"})
    llm = cfg.llm.model_dump(mode="json")
    rlem, fly = (
        cfg.rlem.model_dump(mode="json", exclude={"conditions"}),
        cfg.agentfly.model_dump(mode="json", exclude={"conditions"}),
    )
    for fn, block, seconds in (
        ("expert_exemplars", {"rlem": rlem}, 35.0),
        ("expert_cases", {"agentfly": fly}, 20.0),
    ):
        out += [
            JobSpec(
                f"{HERE}:{fn}",
                {"llm": llm, "shop": shop, "shop_data": data, **block, "run": r},
                seconds,
                label=f"{fn.replace('_', ' ')} · shop · run {r}",
            )
            for r in range(cfg.seeds)
        ]
    dialogues = {
        "llm": llm,
        "dialogue_data": cfg.dialogue_data.model_dump(mode="json"),
        "memory_r1": mr1,
    }
    out += [  # the answer agent with no memory (the floor) and the gold bank (the control)
        JobSpec(f"{HERE}:{fn}", dialogues, 20.0, label=f"{name} · dialogues")
        for fn, name in (("no_memory_answers", "no memory"), ("gold_memory", "gold memory"))
    ]
    from memrl.families.llm_memory_rl.tables import READER

    control = {"embedder": cfg.llm.embedder, **{k: dialogues[k] for k in dialogues if k != "llm"}}
    out += [  # Memory-R1's learnability control: one per GRPO run, on the same seeds
        JobSpec(
            f"{HERE}:reader_control",
            {**control, "run": r},
            10.0,  # measured: 4-6 core-s after the embedder loads (AMD EPYC, 1 thread)
            label=f"{READER} · dialogues · run {r}",
        )
        for r in range(cfg.memory_r1_seeds or cfg.seeds)
    ]
    return out
