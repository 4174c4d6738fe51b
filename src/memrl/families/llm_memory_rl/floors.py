"""The LLM family's floors and ceilings, run as ordinary jobs.

On the shop, three policies that know nothing of the LLM conditions' memory: ``random``
(uniform over the admissible actions), ``random search-then-buy`` (a random query, a random
result, buy: what a policy that can only search and buy scores) and ``oracle`` (the
annotated expert: the ceiling). Each plays REMEMBERER's test tasks once and AgentFly's
tasks for its iterations (scored as the claims score the agents). On the dialogues, the
answer agent with **no memory** (every question answered from an empty bank) is Memory-R1's
floor. Nothing here knows about claims.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from memrl.families.llm_memory_rl.params import LLMMemoryRLParams
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
    test = [_play(env, t, policy, rng) for t in splits["test"][:test_tasks]]
    tasks = splits["test"][:fly_tasks]
    best, iter_score, best_score = np.zeros(len(tasks)), [], []
    for _ in range(iterations):
        r = np.array([_play(env, t, policy, rng) for t in tasks])
        best = np.maximum(best, r)
        iter_score.append(float(r.mean()))
        best_score.append(float(best.mean()))
    return {
        "floor": policy,
        "env": "shop",
        "run": run,
        "test_score": float(np.mean(test)),
        "test_success": float(np.mean(np.array(test) >= 1 - 1e-9)),
        "iter_score": iter_score,
        "best_score": best_score,
    }


def no_memory_answers(llm: dict, dialogue_data: dict, memory_r1: dict) -> dict[str, Any]:
    """Memory-R1's answer agent with an empty memory bank on the test questions."""
    from memrl.agents import memory_r1 as mr1
    from memrl.envs.dialogue import exact_match, f1_score, load_dialogues
    from memrl.families.llm_memory_rl.jobs import _embedder, _scorer
    from memrl.families.llm_memory_rl.params import LLMParams
    from memrl.runtime import repo_root, seed_everything

    seed_everything(0)
    splits = load_dialogues(repo_root() / dialogue_data["path"])
    test = splits["test"][: memory_r1["test_conversations"]]
    scorer = _scorer(LLMParams(**llm))
    answerer = mr1.AnswerAgent(scorer, memory_r1["answer_k"])
    empty = mr1.MemoryBank(_embedder(llm["embedder"]).embed)
    preds = [(answerer.answer(empty, q), q.answer) for c in test for q in c.questions]
    return {
        "floor": "no memory",
        "env": "dialogues",
        "f1": float(np.mean([f1_score(p, a) for p, a in preds])),
        "em": float(np.mean([exact_match(p, a) for p, a in preds])),
        "questions": len(preds),
    }


def grid(cfg: LLMMemoryRLParams) -> list[JobSpec]:
    """The shop's three policies per run (the oracle is deterministic: once) and the
    no-memory answerer (deterministic: once)."""
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
    out.append(
        JobSpec(
            f"{HERE}:no_memory_answers",
            {
                "llm": llm,
                "dialogue_data": cfg.dialogue_data.model_dump(mode="json"),
                "memory_r1": mr1,
            },
            20.0,
            label="no memory · dialogues",
        )
    )
    return out
