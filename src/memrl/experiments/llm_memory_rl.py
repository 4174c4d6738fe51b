"""The LLM memory RL family: a frozen LLM whose memory is shaped by reinforcement learning.

On the WebShop-like shop of :mod:`memrl.envs.shop`, :func:`run` plays every job of the
profile in parallel processes (REMEMBERER's conditions x runs, then AgentFly's) and returns
one tidy row per job; :func:`claims` turns them into claim rows.

**REMEMBERER / RLEM** (Zhang et al. 2023).

Run ``r`` starts from initial memory ``r % 2`` (annotated trajectories of two ``init``
tasks each) and trains on set ``(r // 2) % 2`` (``train_a`` / ``train_b``), as REMEMBERER
tests robustness over two initial memories x two training sets; its seed is ``r``.
Conditions: ``llm`` (no exemplars), ``static`` (exemplars from the initial memory, never
updated), ``rlem`` (memory updated by n-step Q-learning after each training episode) and
the ablations ``rlem_no_bootstrap`` (targets are the n observed rewards only) and
``rlem_no_discouraged`` (exemplars show no discouraged action).

**AgentFly / Memento** (2025).  The first ``agentfly.tasks`` test tasks are played for
``iterations`` passes; with a case bank (seeded with the annotated cases of the ``init``
tasks) every episode is written back as a case, selected next time by cosine kNN
(``nonparametric``) or a learned Q(s, c) (``parametric``); ``none`` plays without cases.
Each seed plays the tasks in its own order every iteration, so the bank differs between
seeds when a task comes up.

**Memory-R1** (Yan et al. 2025).  On LoCoMo-like dialogues (:mod:`memrl.envs.dialogue`) a
memory manager turns every observed fact into ADD / UPDATE / DELETE / NOOP; the frozen answer
agent then answers the test questions from the final bank.  ``grpo`` trains the manager with
GRPO from the answer agent's exact match (one job per seed); ``add_only``, ``heuristic``
(Mem0-style) and ``prompted`` (the LLM without RL) are deterministic, so they run once and
their row stands for every seed.
"""

from __future__ import annotations

import itertools
import time
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from memrl.config import RuntimeParams
from memrl.params.llm_memory_rl import LLMMemoryRLParams
from memrl.runtime import repo_root, run_jobs, seed_everything
from memrl.stats.aggregate import Estimate, iqm_ci
from memrl.stats.claims import Claim, ClaimResult, Comparison

FAMILY = "llm_memory_rl"
TRAIN_SETS = ("train_a", "train_b")
LABELS = {
    "llm": "LLM only",
    "static": "static exemplars",
    "rlem": "RLEM",
    "rlem_no_bootstrap": "RLEM w/o bootstrap",
    "rlem_no_discouraged": "RLEM w/o discouraged",
}


# =========================================================================== resources
@lru_cache(maxsize=1)
def _scorer(model: str, device: str):
    """One scorer per worker process (the model loads once and serves every job)."""
    from memrl.llm.models import load_model
    from memrl.llm.scoring import LLMScorer

    return LLMScorer(load_model(model, device))


@lru_cache(maxsize=1)
def _embedder(name: str):
    from memrl.llm.embeddings import Embedder

    return Embedder(name)


def load_tasks(cfg: LLMMemoryRLParams):
    """The catalogue and task splits from ``data/`` (a clear error names ``make data``)."""
    from memrl.envs.shop import load_shop

    return load_shop(repo_root() / cfg.shop_data.path)


def initial_memory(cfg: LLMMemoryRLParams, env, tasks, bootstrap: bool = True):
    """An experience memory seeded with the annotated trajectories of ``tasks``."""
    from memrl.envs.shop import expert_episode
    from memrl.memory.experience import ExperienceMemory, Step

    hp = cfg.rlem
    mem = ExperienceMemory(hp.capacity, hp.n_step, hp.gamma, bootstrap)
    for task in tasks:
        mem.update([Step(task.instruction, *t) for t in expert_episode(env, task)])
    return mem


def _setup(cfg: LLMMemoryRLParams, run: int, salt: int):
    """What every job starts from: its seed and RNG, the shop, and this process's LLM."""
    from memrl.envs.shop import ShopEnv

    seed_everything(run)
    rng = np.random.default_rng(np.random.SeedSequence([run, salt]))
    products, splits = load_tasks(cfg)
    env = ShopEnv(products, cfg.shop.max_steps, cfg.shop.n_results)
    scorer, embedder = _scorer(cfg.llm.model, cfg.llm.device), _embedder(cfg.llm.embedder)
    return rng, splits, env, scorer, embedder


# =========================================================================== one run
def rlem_job(cfg: LLMMemoryRLParams, condition: str, run: int, memory_dir: str | None) -> dict:
    """One (condition, run): train (RLEM variants) for ``epochs`` over 10 tasks, then test."""
    from memrl.agents.rlem import MODES, RLEMAgent

    t0 = time.perf_counter()
    rng, splits, env, scorer, embedder = _setup(cfg, run, salt=7)
    init_id, train_set = run % 2, TRAIN_SETS[(run // 2) % 2]
    half = len(splits["init"]) // 2
    init_tasks = splits["init"][init_id * half : (init_id + 1) * half]
    tok0 = scorer.tokens_encoded
    memory = None
    if condition != "llm":
        memory = initial_memory(cfg, env, init_tasks, condition != "rlem_no_bootstrap")
    agent = RLEMAgent(
        scorer, embedder, memory, condition if condition in MODES else "rlem", rng,
        exemplars=cfg.rlem.exemplars, temperature=cfg.llm.temperature,
        discouraged=condition != "rlem_no_discouraged",
    )  # fmt: skip
    train_success, train_score = [], []
    if agent.mode == "rlem":
        tasks = list(splits[train_set])
        for _ in range(cfg.rlem.epochs):
            res = [
                agent.run_episode(env, tasks[i], learn=True) for i in rng.permutation(len(tasks))
            ]
            train_success.append(float(np.mean([r.success for r in res])))
            train_score.append(float(np.mean([r.reward for r in res])))
    test = [agent.run_episode(env, t, learn=False) for t in splits["test"][: cfg.rlem.test_tasks]]
    if memory is not None and memory_dir is not None:
        memory.save(Path(memory_dir) / f"{condition}-run{run}.json")
    return {
        "condition": condition,
        "run": run,
        "init_memory": "AB"[init_id],
        "train_set": train_set if agent.mode == "rlem" else "",
        "test_success": float(np.mean([r.success for r in test])),
        "test_score": float(np.mean([r.reward for r in test])),
        "test_steps": float(np.mean([r.steps for r in test])),
        "train_success": train_success,
        "train_score": train_score,
        "memory_records": len(memory) if memory is not None else 0,
        "decisions": agent.decisions,
        "tokens": scorer.tokens_encoded - tok0,
        "seconds": time.perf_counter() - t0,
    }


def agentfly_job(cfg: LLMMemoryRLParams, condition: str, run: int, memory_dir: str | None) -> dict:
    """One (condition, run) of AgentFly: ``iterations`` passes over the same tasks."""
    from memrl.agents.memento import CaseAgent
    from memrl.envs.shop import expert_episode
    from memrl.memory.cases import Case, CaseBank

    t0 = time.perf_counter()
    rng, splits, env, scorer, embedder = _setup(cfg, run, salt=11)
    tok0 = scorer.tokens_encoded
    hp = cfg.agentfly
    bank = None
    if condition != "none":
        bank = CaseBank(condition, hp.k, hp.q_learning_rate, hp.q_epochs, seed=run)
        for task in splits["init"]:  # annotated cases, as REMEMBERER's initial memories
            played = expert_episode(env, task)
            bank.add(Case(task.instruction, tuple(t.action for t in played), played[-1].reward))
    agent = CaseAgent(scorer, embedder, bank, rng, cfg.llm.temperature)
    tasks = splits["test"][: hp.tasks]
    success, score, best = [], [], np.zeros(len(tasks))
    solved = np.zeros(len(tasks), dtype=bool)
    best_so_far, solved_so_far = [], []
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
    if bank is not None and memory_dir is not None:
        bank.save(Path(memory_dir) / f"agentfly-{condition}-run{run}.json")
    return {
        "paper": "agentfly", "condition": condition, "run": run,
        "iter_success": success, "iter_score": score,
        "cum_success": solved_so_far, "best_score": best_so_far,
        "cases": len(bank) if bank is not None else 0,
        "decisions": agent.decisions, "tokens": scorer.tokens_encoded - tok0,
        "seconds": time.perf_counter() - t0,
    }  # fmt: skip


MR1_LABELS = {"add_only": "add only", "heuristic": "Mem0-style heuristic",
              "prompted": "prompted LLM", "grpo": "Memory-R1 (GRPO)"}  # fmt: skip
MR1_DETERMINISTIC = ("add_only", "heuristic", "prompted")


def load_dialogues(cfg: LLMMemoryRLParams):
    from memrl.envs.dialogue import load_dialogues as load

    return load(repo_root() / cfg.dialogue_data.path)


def memory_r1_job(cfg: LLMMemoryRLParams, condition: str, run: int, memory_dir: str | None) -> dict:
    """One Memory-R1 (condition, run): train the manager (``grpo``), then answer the test
    questions from the bank each manager builds for every test conversation."""
    from memrl.agents import memory_r1 as mr1

    t0 = time.perf_counter()
    seed_everything(run)
    rng = np.random.default_rng(np.random.SeedSequence([run, 13]))
    hp = cfg.memory_r1
    splits = load_dialogues(cfg)
    test = splits["test"][: hp.test_conversations]
    scorer, embedder = _scorer(cfg.llm.model, cfg.llm.device), _embedder(cfg.llm.embedder)
    tok0 = scorer.tokens_encoded
    answerer = mr1.AnswerAgent(scorer, hp.answer_k)
    history: list[dict] = []
    if condition == "add_only":
        manager = mr1.AddOnly()
    elif condition == "heuristic":
        manager = mr1.HeuristicManager(hp.heuristic_noop, hp.heuristic_update)
    elif condition == "prompted":
        manager = mr1.PromptedManager(scorer, hp.related_k)
    else:
        policy = mr1.ManagerPolicy(embedder.embed(["x"]).shape[1], hp.related_k, hp.hidden)
        grpo = mr1.GRPOConfig(hp.epochs, hp.group, hp.probes, hp.learning_rate, hp.clip,
                              hp.update_epochs, hp.beta)  # fmt: skip
        history = mr1.train_grpo(policy, splits["train"], answerer, embedder.embed, grpo, rng)
        manager = mr1.RLManager(policy)
        if memory_dir is not None:
            import torch as th

            th.save(policy.state_dict(), Path(memory_dir) / f"memory_r1-grpo-run{run}.pt")
    train_calls = answerer.calls
    rows, ops = mr1.evaluate(manager, test, answerer, embedder.embed)
    q, o = pd.DataFrame(rows), pd.DataFrame(ops)
    return {
        "paper": "memory_r1", "condition": condition, "run": run,
        "f1": float(q.f1.mean()), "em": float(q.em.mean()),
        "f1_by_category": q.groupby("category").f1.mean().round(4).to_dict(),
        "ops_by_kind": {k: g.op.value_counts().to_dict() for k, g in o.groupby("kind")},
        "probe_em": [float(np.nanmean([h["probe_em"] for h in history if h["epoch"] == e]))
                     for e in range(1, hp.epochs + 1)] if history else [],
        "questions": len(q), "memories": float(q.groupby("conversation").memories.first().mean()),
        "answer_calls_train": train_calls, "answer_calls_test": answerer.calls - train_calls,
        "tokens": scorer.tokens_encoded - tok0, "seconds": time.perf_counter() - t0,
    }  # fmt: skip


# seconds per job measured on the default profile (2026-11-23, 1 thread): two workers
# finish together when the longest jobs go first
EXPECTED_SECONDS = {
    (rlem_job, "rlem"): 160, (rlem_job, "rlem_no_bootstrap"): 137,
    (rlem_job, "rlem_no_discouraged"): 120, (rlem_job, "static"): 33, (rlem_job, "llm"): 17,
    (memory_r1_job, "grpo"): 236, (memory_r1_job, "prompted"): 109,
    (memory_r1_job, "add_only"): 58, (memory_r1_job, "heuristic"): 56,
    (agentfly_job, "nonparametric"): 82, (agentfly_job, "parametric"): 76,
    (agentfly_job, "none"): 54,
}  # fmt: skip


def jobs(cfg: LLMMemoryRLParams, memory_dir: str | None = None) -> list[dict[str, Any]]:
    """Every job, the longest first: REMEMBERER's and AgentFly's (condition, run), Memory-R1's
    GRPO runs and its deterministic baselines (once each)."""
    runs = range(cfg.seeds)
    todo = (
        [(rlem_job, c, r) for c in cfg.rlem.conditions for r in runs]
        + [(agentfly_job, c, r) for c in cfg.agentfly.conditions for r in runs]
        + [(memory_r1_job, c, r) for c in cfg.memory_r1.conditions
           for r in ([0] if c in MR1_DETERMINISTIC else runs)]
    )  # fmt: skip
    todo.sort(key=lambda j: -EXPECTED_SECONDS.get(j[:2], 0))  # stable: runs stay in order
    return [{"fn": fn, "cfg": cfg, "condition": c, "run": r, "memory_dir": memory_dir}
            for fn, c, r in todo]  # fmt: skip


def _job(fn, **kw) -> dict:
    return fn(**kw)


def run(
    cfg: LLMMemoryRLParams, rt: RuntimeParams, memory_dir: str | None = None
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """All jobs of the profile: REMEMBERER's, AgentFly's and Memory-R1's rows, one per
    (condition, run); a deterministic Memory-R1 baseline's single row is repeated for every
    seed (marked ``deterministic``)."""
    _check_model(cfg)
    if memory_dir is not None:
        Path(memory_dir).mkdir(parents=True, exist_ok=True)
    rows = run_jobs(_job, jobs(cfg, memory_dir), rt.workers, rt.torch_threads,
                    desc="LLM memory RL")  # fmt: skip
    rlem = _in_order([r for r in rows if r.get("paper") is None], cfg.rlem.conditions)
    fly = _in_order([r for r in rows if r.get("paper") == "agentfly"], cfg.agentfly.conditions)
    mr1 = []
    for c in cfg.memory_r1.conditions:
        got = [r for r in rows if r.get("paper") == "memory_r1" and r["condition"] == c]
        det = c in MR1_DETERMINISTIC
        if det:  # run once: the same row for every seed
            got = [{**got[0], "run": s} for s in range(cfg.seeds)]
        mr1 += [{**r, "deterministic": det} for r in got]
    mr1 = pd.DataFrame(mr1).drop(columns="paper")
    return rlem, fly.drop(columns="paper"), mr1


def _in_order(rows: list[dict], conditions) -> pd.DataFrame:
    """Rows as a table ordered by the profile's condition order, then by run."""
    rank = {c: i for i, c in enumerate(conditions)}
    return pd.DataFrame(sorted(rows, key=lambda r: (rank[r["condition"]], r["run"])))


def _check_model(cfg: LLMMemoryRLParams) -> None:
    """Fail before any job starts if the model or the data is missing (and convert once)."""
    from memrl.llm.models import ensure_model

    ensure_model(cfg.llm.model)
    load_tasks(cfg)
    load_dialogues(cfg)


# =========================================================================== claims
def _est(values, cfg: LLMMemoryRLParams, salt: int) -> Estimate:
    return iqm_ci(np.asarray(values, dtype=np.float64), reps=cfg.bootstrap_reps, seed=salt)


def claims(cfg: LLMMemoryRLParams, df: pd.DataFrame) -> list[ClaimResult]:
    """REMEMBERER's claims, from the runs (verdicts computed, never typed)."""
    paper = "Zhang et al. 2023, Large Language Models Are Semi-Parametric Reinforcement Learning Agents (REMEMBERER)"
    hp = cfg.rlem
    budget = (
        f"{hp.epochs} epochs over 10 training tasks (paper: 3 x 10), {hp.test_tasks} test tasks "
        f"(paper: 100); {cfg.seeds} runs (initial memory x training set)"
    )
    deviations = [
        f"LLM: {cfg.llm.model} scoring admissible actions by mean token log-likelihood, sampled at "
        f"temperature {cfg.llm.temperature:g} (paper: text-davinci-003 generating the action, "
        "temperature 0.1)",
        "environment: a generated WebShop-like shop (WebShop is not installable offline); "
        f"{cfg.shop.n_results} results per page (WebShop 10), at most {cfg.shop.max_steps} "
        "actions (WebShop 15)",
        f"n-step = {hp.n_step}, gamma = {hp.gamma:g}, alpha = 1/N (the reference WebShop launch: "
        "--n-step-flatten 1, gamma 1, update mode mean)",
    ]
    out: list[ClaimResult] = []
    conds = [c for c in cfg.rlem.conditions if c in set(df.condition)]

    def est(metric: str, salt: int, sub=None) -> dict[str, Estimate]:
        d = df if sub is None else sub
        return {
            LABELS[c]: _est(d[d.condition == c][metric], cfg, salt + i)
            for i, c in enumerate(conds)
            if (d.condition == c).any()
        }

    for k, (metric, what) in enumerate(
        [("test_success", "success rate"), ("test_score", "score (WebShop reward)")]
    ):
        e = est(metric, 100 * (k + 1))
        comps = []
        if "static" in conds:
            comps.append(Comparison(LABELS["rlem"], LABELS["static"]))
        if "llm" in conds:
            comps.append(
                Comparison(LABELS["static" if "static" in conds else "rlem"], LABELS["llm"])
            )
        if not comps:
            continue
        out.append(
            ClaimResult(
                Claim(
                    FAMILY, f"LLM-{k + 1}", paper, "Sec. 4.2, Table 1 (WebShop)",
                    f"An experience memory updated by RL (RLEM) raises the {what} of a frozen LLM "
                    "agent above static exemplars, which beat the LLM alone.",
                    "qualitative: RLEM > static exemplars (ReAct-style) > LLM only; RLEM +4% SR "
                    "over the prior state of the art (table values not retrieved)",
                    f"{what} on the test tasks after training", True,
                ),
                e, LABELS["rlem"], comps, budget=budget, deviations=deviations,
            )
        )  # fmt: skip

    # robustness: RLEM's gain over static exemplars, paired per run (same initial memory),
    # across the (initial memory x training set) combos the runs cover
    if "static" in conds:
        by = {c: df[df.condition == c].set_index("run") for c in ("rlem", "static")}
        gain = (by["rlem"].test_score - by["static"].test_score).dropna()
        combos = {f"memory {by['rlem'].init_memory[r]} · {by['rlem'].train_set[r]}": float(g)
                  for r, g in gain.items()}  # fmt: skip
        e = {"RLEM − static (score gain)": _est(gain.values, cfg, 300),
             "no gain": Estimate(0.0, 0.0, 0.0, 0)}  # fmt: skip
        n_combos = len(combos)
        out.append(
            ClaimResult(
                Claim(
                    FAMILY, "LLM-3", paper, "Sec. 4.3, Table 3 (robustness)",
                    "RLEM's gain over static exemplars holds across different initial experience "
                    "memories and training sets.",
                    "qualitative: RLEM beats the static baseline for 2 initial memories x 2 "
                    "training sets",
                    "test score of RLEM minus static exemplars, paired per run", True,
                ),
                e, "RLEM − static (score gain)",
                [Comparison("RLEM − static (score gain)", "no gain")],
                budget=budget, deviations=deviations,
                coverage_complete=n_combos >= 4,
                coverage_note="" if n_combos >= 4 else
                f"{n_combos} runs cover {n_combos} of the 4 (memory x training set) combos",
                extra={"gain_per_combo": combos},
            )
        )  # fmt: skip

    ablations = [c for c in ("rlem_no_bootstrap", "rlem_no_discouraged") if c in conds]
    if ablations:
        e = est("test_score", 400)
        out.append(
            ClaimResult(
                Claim(
                    FAMILY, "LLM-4", paper, "Sec. 4.4, Table 4 (ablations)",
                    "Both n-step bootstrapping in the Q update and showing discouraged actions "
                    "contribute to RLEM's performance.",
                    "qualitative: removing either lowers success rate and score",
                    "score on the test tasks after training", True,
                ),
                {k: v for k, v in e.items() if k in (LABELS["rlem"], *[LABELS[a] for a in ablations])},
                LABELS["rlem"], [Comparison(LABELS["rlem"], LABELS[a]) for a in ablations],
                budget=budget, deviations=deviations,
            )
        )  # fmt: skip
    return out


FLY_LABELS = {"none": "no memory", "nonparametric": "non-parametric", "parametric": "parametric"}


def agentfly_claims(cfg: LLMMemoryRLParams, fly: pd.DataFrame) -> list[ClaimResult]:
    """AgentFly / Memento's claims from its runs (verdicts computed, never typed)."""
    paper = "Zhou et al. 2025, AgentFly / Memento: Fine-tuning LLM Agents without Fine-tuning LLMs"
    hp = cfg.agentfly
    conds = [c for c in hp.conditions if (fly.condition == c).any()]
    budget = (f"{hp.iterations} iterations over {hp.tasks} tasks (paper: 5 over GAIA / "
              f"DeepResearcher); {cfg.seeds} seeds")  # fmt: skip
    deviations = [
        f"LLM: {cfg.llm.model} scoring admissible shop actions (paper: GPT-4.1 planner with "
        "o4-mini / o3 executors on research tasks)",
        "cases: the shop episode's instruction, action sequence and outcome; the bank starts "
        f"with the {cfg.shop_data.n_init} annotated init cases",
        "parametric Q(s, c): MLP on [s, c, s*c, outcome] fit with binary cross-entropy to the "
        "episode's reward (a soft label; the reference code uses binary success)",
    ]
    out: list[ClaimResult] = []
    last = hp.iterations - 1
    e = {
        FLY_LABELS[c]: _est([v[last] for v in fly[fly.condition == c].best_score], cfg, 500 + i)
        for i, c in enumerate(conds)
    }
    order = [c for c in ("parametric", "nonparametric", "none") if c in conds]
    comps = [Comparison(FLY_LABELS[a], FLY_LABELS[b]) for a, b in itertools.pairwise(order)]
    if comps:
        out.append(
            ClaimResult(
                Claim(
                    FAMILY, "LLM-5", paper, "Sec. 4, Table 3 / Fig. 4 (iterations)",
                    "Case-based memory raises an LLM agent's results, and a learned (parametric) "
                    "case selection does better than similarity (non-parametric) retrieval.",
                    "DeepResearcher after 5 iterations: parametric 85.44 >= non-parametric 84.85 "
                    ">= no memory 84.47 (F1, cumulative)",
                    f"best score per task up to iteration {hp.iterations}, mean over tasks", True,
                ),
                e, FLY_LABELS[order[0]], comps, budget=budget, deviations=deviations,
            )
        )  # fmt: skip
    mem = [c for c in ("parametric", "nonparametric") if c in conds]
    if mem and hp.iterations > 1:
        e2: dict[str, Estimate] = {}
        comps = []
        for i, c in enumerate(mem):
            g = fly[fly.condition == c]
            a, b = f"{FLY_LABELS[c]} · iteration {hp.iterations}", f"{FLY_LABELS[c]} · iteration 1"
            e2[a] = _est([v[last] for v in g.iter_score], cfg, 600 + 2 * i)
            e2[b] = _est([v[0] for v in g.iter_score], cfg, 601 + 2 * i)
            comps.append(Comparison(a, b))
        out.append(
            ClaimResult(
                Claim(
                    FAMILY, "LLM-6", paper, "Sec. 4, Fig. 4 (continual learning over iterations)",
                    "With a case bank the agent improves over iterations on the same tasks, "
                    "without changing the LLM's weights.",
                    "DeepResearcher: parametric 80.46 -> 85.44, non-parametric 79.84 -> 84.85 "
                    "(iteration 1 -> 5)",
                    "score of each iteration's episodes (not cumulative)", True,
                ),
                e2, next(iter(e2)), comps, budget=budget, deviations=deviations,
            )
        )  # fmt: skip
    return out


def iteration_curves(fly: pd.DataFrame) -> pd.DataFrame:
    """AgentFly per iteration: score, success and their cumulative versions, per run."""
    rows = []
    for _, r in fly.iterrows():
        for i in range(len(r.iter_score)):
            rows.append({"condition": FLY_LABELS[r.condition], "run": r.run, "iteration": i + 1,
                         "score": r.iter_score[i], "success": r.iter_success[i],
                         "best_score": r.best_score[i], "cum_success": r.cum_success[i]})  # fmt: skip
    return pd.DataFrame(rows)


def training_curves(df: pd.DataFrame) -> pd.DataFrame:
    """Training success and score per epoch of the RLEM variants: one row per (run, epoch)."""
    rows = []
    for _, r in df[df.train_success.map(len) > 0].iterrows():
        for ep, (s, sc) in enumerate(zip(r.train_success, r.train_score, strict=True)):
            rows.append({"condition": LABELS[r.condition], "run": r.run, "epoch": ep + 1,
                         "success": s, "score": sc})  # fmt: skip
    return pd.DataFrame(rows)


def memory_r1_claims(cfg: LLMMemoryRLParams, mr1: pd.DataFrame) -> list[ClaimResult]:
    """Memory-R1's claim from its runs, on the answer agent's F1 and exact match."""
    paper = "Yan et al. 2025, Memory-R1: Enhancing LLM Agents to Manage and Utilize Memories via RL"
    hp = cfg.memory_r1
    conds = [c for c in hp.conditions if (mr1.condition == c).any()]
    if "grpo" not in conds or len(conds) < 2:
        return []
    n_test = int(mr1.questions.iloc[0])
    budget = (f"GRPO: {hp.epochs} epochs over {hp.probes} probed training turns, G = {hp.group}; "
              f"{n_test} test questions; {cfg.seeds} seeds (the baselines are deterministic: "
              "one run stands for every seed)")  # fmt: skip
    deviations = [
        f"manager: an MLP head ({hp.hidden} units) on frozen MiniLM embeddings of the fact and "
        f"its {hp.related_k} most related memories (paper: LLaMA-3.1-8B / Qwen-2.5-7B fine-tuned)",
        f"answer agent: {cfg.llm.model} choosing among candidate answers by log-likelihood from "
        f"the top {hp.answer_k} memories (paper: the LLM generates from 60 retrieved memories "
        "after distilling them)",
        "data: generated LoCoMo-like dialogues (facts introduced, changed, retracted, restated; "
        "single-hop, multi-hop and temporal questions), split like the paper's 152 / 81 / rest "
        "questions by whole conversations",
        "reward: the mean exact match on the probe question asked right after the turn and on "
        "the question about the memory the operation would touch first (the paper pairs each "
        "operation with a question whose evidence is the turn; the probe alone left "
        "overwriting other memories unpunished)",
        f"Mem0-style heuristic: similarity thresholds (NOOP at cos >= {hp.heuristic_noop:g}, "
        f"UPDATE at >= {hp.heuristic_update:g}) instead of Mem0's LLM decision",
    ]
    counts = memory_r1_ops(mr1).groupby(level="condition", sort=False).sum()
    shares = counts.div(counts.sum(axis=1), axis=0).round(3)
    op_shares = {c: {op: float(shares.loc[c, op]) for op in counts if counts.loc[c, op] > 0}
                 for c in counts.index}  # fmt: skip
    out = []
    for k, (metric, what, value) in enumerate([
        ("f1", "F1", "LLaMA-3.1-8B on LoCoMo: Memory-R1-GRPO 45.02 F1 vs Mem0 30.41 "
                     "(Memory-R1-PPO 41.05)"),
        ("em", "exact match", "qualitative: the RL-trained manager beats Mem0 and the "
                              "untrained LLM manager (EM is the training reward; table "
                              "reports F1 / BLEU-1 / LLM-judge)"),
    ]):  # fmt: skip
        e = {MR1_LABELS[c]: _est(mr1[mr1.condition == c][metric], cfg, 700 + 10 * k + i)
             for i, c in enumerate(conds)}  # fmt: skip
        comps = [Comparison(MR1_LABELS["grpo"], MR1_LABELS[c])
                 for c in ("heuristic", "prompted") if c in conds]  # fmt: skip
        out.append(
            ClaimResult(
                Claim(
                    FAMILY, f"LLM-{7 + k}", paper, "Sec. 4, Table 1 (LoCoMo)",
                    f"A memory manager trained with RL (GRPO) from the answer agent's exact match "
                    f"raises the answer agent's {what} above a Mem0-style manager and the same "
                    "LLM prompted to manage memory without RL.",
                    value, f"{what} of the answer agent on the test questions", True,
                ),
                e, MR1_LABELS["grpo"], comps, budget=budget, deviations=deviations,
                extra={"f1_by_category": {MR1_LABELS[c]: mr1[mr1.condition == c]
                                          .f1_by_category.iloc[0] for c in conds},
                       "operations chosen on the test turns (share)": op_shares},
            )
        )  # fmt: skip
    return out


def memory_r1_ops(mr1: pd.DataFrame) -> pd.DataFrame:
    """How often each manager chose each operation per kind of turn (summed over runs)."""
    rows = []
    for _, r in mr1[~mr1.deterministic | (mr1.run == 0)].iterrows():
        for kind, counts in r.ops_by_kind.items():
            for op, n in counts.items():
                rows.append({"condition": MR1_LABELS[r.condition], "kind": kind, "op": op, "n": n})
    from memrl.agents.memory_r1 import OPS

    df = pd.DataFrame(rows)
    table = df.groupby(["condition", "kind", "op"], sort=False).n.sum().unstack(fill_value=0)
    return table.reindex(columns=[o for o in OPS if o in table.columns])
