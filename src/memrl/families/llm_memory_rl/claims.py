"""The LLM memory RL family's claims: one function per claim turning the stored runs
(:class:`~.tables.Runs`) into comparisons (what REMEMBERER, AgentFly and Memory-R1 say is
data in :mod:`.statements`). Verdicts come from :func:`memrl.stats.claims.verdict`; nothing
here trains."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pandas as pd

from memrl.families.llm_memory_rl.arms import (
    FLY_TASKS,
    SHOP_TASKS,
    checkpointed,
    control_arm,
    per_checkpoint,
    runs_arm,
    runs_of,
)
from memrl.families.llm_memory_rl.memory_r1_claims import llm_7, llm_8
from memrl.families.llm_memory_rl.params import LLMMemoryRLParams
from memrl.families.llm_memory_rl.setups import model_name, narrower
from memrl.families.llm_memory_rl.statements import (
    EPISODES,
    ITERATIONS,
    LLM_1,
    LLM_2,
    LLM_3,
    LLM_4,
    LLM_5,
    LLM_6,
)
from memrl.families.llm_memory_rl.tables import (
    FLY_LABELS,
    LABELS,
    Runs,
    task_best,
    test_items,
)
from memrl.stats.aggregate import reference
from memrl.stats.bootstrap import Arm, arm
from memrl.stats.claims import Budget, Claim, ClaimResult, Comparison
from memrl.stats.floors import NO_FLOOR_RUNS, floor_arm
from memrl.stats.floors import name as floor_name
from memrl.stats.trend import trends

SHOP_FLOORS = ("random search-then-buy", "random")  # the stricter of the two is the floor


def _shop_floor(
    cfg, floors, claim: Claim, value, items, shared: str = SHOP_TASKS
) -> tuple[dict[str, Arm], str | None, str | None]:
    """(arms, floor, ceiling) on the shop: the knowledge-free policies (the higher-scoring
    one is the floor) and the annotated expert (``oracle``, the ceiling, run once), scored
    by ``value`` (a column or a function of a floor run's row) with ``items`` (a function of
    a row: its per-task values)."""
    est: dict[str, Arm] = {}
    for f in (*SHOP_FLOORS, "oracle"):
        est |= floor_arm(
            floors, claim.claim_id, "shop", value, f, cfg.bootstrap_reps, items=items, shared=shared
        )
    names = [floor_name(f, "shop") for f in SHOP_FLOORS if floor_name(f, "shop") in est]
    fl = max(names, key=lambda f: est[f].iqm, default=None)
    top = floor_name("oracle", "shop")
    return est, fl, top if top in est else None


def divergences(runs: Runs, name: str) -> list[dict]:
    """Where the control left its expert's path (first run): the expert's and the chosen
    action with their mean token log-likelihoods."""
    df = runs.controls
    if not len(df) or "divergences" not in df:
        return []
    rows = df[df.control == name].sort_values("run")
    return list(rows.divergences.iloc[0]) if len(rows) else []


# (what our model does, on what; the paper's models and benchmarks): narrower than the paper's
_RLEM_SETUP = ("on a generated WebShop-like shop", "text-davinci-003 on WebShop and WikiHow")
_FLY_SETUP = (
    "on the generated shop's tasks",
    "a GPT-4.1 planner with o4-mini / o3 executors on GAIA and DeepResearcher",
)


# =========================================================================== REMEMBERER
def _rlem_budget(cfg: LLMMemoryRLParams, runs: Runs) -> str:
    hp = cfg.rlem
    return (
        f"{hp.epochs} epochs over 10 training tasks (paper: 3 x 10), {hp.test_tasks} test "
        f"tasks (paper: 100); {runs_of(runs.rlem)} runs (initial memory x training set)"
    )


def _rlem_deviations(cfg: LLMMemoryRLParams) -> list[str]:
    hp = cfg.rlem
    return [
        f"LLM: {model_name(cfg)} scoring admissible actions by mean token log-likelihood, sampled "
        f"at temperature {cfg.llm.temperature:g} (paper: text-davinci-003 generating the action, "
        "temperature 0.1)",
        "environment: a generated WebShop-like shop (WebShop is not installable offline); "
        f"{cfg.shop.n_results} results per page (WebShop 10), at most {cfg.shop.max_steps} "
        "actions (WebShop 15)",
        f"n-step = {hp.n_step}, gamma = {hp.gamma:g}, alpha = 1/N (the reference WebShop launch: "
        "--n-step-flatten 1, gamma 1, update mode mean); the w/o-bootstrap ablation learns from "
        "full-episode returns, as the reference's n_step_flatten None",
        "initial memories from expert demonstrations that earn the full reward on every task "
        "(the expert ranks purchases by the reward they would really get)",
    ]


def _rlem_est(cfg, runs: Runs, claim: Claim, metric: str) -> dict[str, Arm]:
    """Each condition's arm: its runs, and each run's test tasks as items."""
    df, per_task = runs.rlem, test_items(metric)
    return {
        LABELS[c]: runs_arm(
            g[metric],
            claim.claim_id,
            LABELS[c],
            cfg.bootstrap_reps,
            [per_task(r) for _, r in g.iterrows()],
            SHOP_TASKS,
        )
        for c in cfg.rlem.conditions
        if len(g := df[df.condition == c])
    }


def _rlem_control(cfg, runs: Runs, claim: Claim, metric: str) -> dict:
    """The claim's positive control (expert exemplars) as ClaimResult keywords."""
    est = control_arm(
        cfg, runs, claim, "expert exemplars", "shop", metric, test_items(metric), shared=SHOP_TASKS
    )
    if not est:
        return {}
    diverged = divergences(runs, "expert exemplars")
    return {
        "positive_control": next(iter(est.items())),
        "control_note": "the static agent with the test tasks' own expert trajectories as its "
        f"memory; it left the expert's path on {len(diverged)} of {cfg.rlem.test_tasks} test "
        "tasks (first run)",
        "control_detail": diverged,
    }


def _rlem_trends(cfg, runs: Runs, claim: Claim, comps, metric: str) -> dict:
    fractions, series = checkpointed(runs.rlem, metric.replace("test_", "checkpoint_"), LABELS)
    return {
        "used": Budget(cfg.rlem.epochs * cfg.shop_data.n_train, EPISODES),
        "trends": trends(claim, comps, series, fractions, cfg.bootstrap_reps),
        "trend_note": "the test tasks after every training epoch (the untrained baselines "
        "keep their one test)",
    }


def _rlem_vs_baselines(cfg, runs: Runs, claim: Claim, metric: str, floors) -> ClaimResult | None:
    conds = set(runs.rlem.condition)
    est, fl, top = _shop_floor(cfg, floors, claim, metric, test_items(metric))
    pairs = []
    if "static" in conds:
        pairs.append((LABELS["rlem"], LABELS["static"]))
    if "llm" in conds:
        pairs.append((LABELS["static" if "static" in conds else "rlem"], LABELS["llm"]))
    if not pairs:
        return None
    comps = [Comparison(a, b, floor=fl, ceiling=top) for a, b in pairs]
    return ClaimResult(
        claim=claim,
        estimates=est | _rlem_est(cfg, runs, claim, metric),
        ours=LABELS["rlem"],
        comparisons=comps,
        budget=_rlem_budget(cfg, runs),
        deviations=_rlem_deviations(cfg),
        **narrower(cfg, *_RLEM_SETUP),
        floor_reason="" if fl else NO_FLOOR_RUNS,
        **_rlem_trends(cfg, runs, claim, comps, metric),
        **_rlem_control(cfg, runs, claim, metric),
    )


def llm_1(cfg: LLMMemoryRLParams, runs: Runs, floors=None) -> ClaimResult | None:
    return _rlem_vs_baselines(cfg, runs, LLM_1, "test_success", floors)


def llm_2(cfg: LLMMemoryRLParams, runs: Runs, floors=None) -> ClaimResult | None:
    return _rlem_vs_baselines(cfg, runs, LLM_2, "test_score", floors)


def llm_3(cfg: LLMMemoryRLParams, runs: Runs, floors=None) -> ClaimResult | None:
    """RLEM's gain over static exemplars, paired per run (same initial memory), across the
    (initial memory x training set) combos the runs cover."""
    df = runs.rlem
    if not (df.condition == "static").any():
        return None
    by = {c: df[df.condition == c].set_index("run") for c in ("rlem", "static")}
    gain = (by["rlem"].test_score - by["static"].test_score).dropna()
    combos = {
        f"memory {by['rlem'].init_memory[r]} · {by['rlem'].train_set[r]}": float(g)
        for r, g in gain.items()
    }
    name = "RLEM − static (score gain)"
    fl_est, fl, top = _shop_floor(cfg, floors, LLM_3, "test_score", test_items("test_score"))
    sides = {
        k: v
        for k, v in _rlem_est(cfg, runs, LLM_3, "test_score").items()
        if k in (LABELS["rlem"], LABELS["static"])
    }
    est = (
        fl_est
        | sides
        | {name: arm(gain.values, "LLM-3", name, cfg.bootstrap_reps), "no gain": reference(0.0)}
    )
    n = len(combos)
    # the gain is judged only where RLEM or static exemplars clear the shop's floor
    comps = [Comparison(name, "no gain", floor=fl, ceiling=top, sides=tuple(sides) if fl else ())]
    fractions = list(max(df.checkpoints, key=len))
    runs_ = sorted(gain.index)
    paired = per_checkpoint(
        by["rlem"].loc[runs_].checkpoint_score, len(fractions)
    ) - per_checkpoint(by["static"].loc[runs_].checkpoint_score, len(fractions))
    return ClaimResult(
        claim=LLM_3,
        estimates=est,
        ours=name,
        comparisons=comps,
        budget=_rlem_budget(cfg, runs),
        deviations=_rlem_deviations(cfg),
        used=Budget(cfg.rlem.epochs * cfg.shop_data.n_train, EPISODES),
        trends=trends(LLM_3, comps, {name: paired, "no gain": 0.0}, fractions, cfg.bootstrap_reps),
        trend_note="paired gain on the test tasks after every training epoch",
        floor_reason="" if fl else NO_FLOOR_RUNS,
        **narrower(
            cfg,
            *_RLEM_SETUP,
            *([] if n >= 4 else [f"{n} runs cover {n} of the 4 (memory x training set) combos"]),
        ),
        extra={"gain_per_combo": combos},
        **_rlem_control(cfg, runs, LLM_3, "test_score"),
    )


def llm_4(cfg: LLMMemoryRLParams, runs: Runs, floors=None) -> ClaimResult | None:
    conds = set(runs.rlem.condition)
    ablations = [c for c in ("rlem_no_bootstrap", "rlem_no_discouraged") if c in conds]
    if not ablations:
        return None
    keep = (LABELS["rlem"], *[LABELS[a] for a in ablations])
    est, fl, top = _shop_floor(cfg, floors, LLM_4, "test_score", test_items("test_score"))
    est |= {k: v for k, v in _rlem_est(cfg, runs, LLM_4, "test_score").items() if k in keep}
    comps = [Comparison(LABELS["rlem"], LABELS[a], floor=fl, ceiling=top) for a in ablations]
    return ClaimResult(
        claim=LLM_4,
        estimates=est,
        ours=LABELS["rlem"],
        comparisons=comps,
        floor_reason="" if fl else NO_FLOOR_RUNS,
        budget=_rlem_budget(cfg, runs),
        deviations=_rlem_deviations(cfg),
        **narrower(cfg, *_RLEM_SETUP),
        **_rlem_trends(cfg, runs, LLM_4, comps, "test_score"),
        **_rlem_control(cfg, runs, LLM_4, "test_score"),
    )


# =========================================================================== AgentFly
def _fly_budget(cfg: LLMMemoryRLParams, runs: Runs) -> str:
    hp = cfg.agentfly
    return (
        f"{hp.iterations} iterations over {hp.tasks} tasks (paper: 5 over GAIA / "
        f"DeepResearcher); {runs_of(runs.fly)} seeds"
    )


def _fly_deviations(cfg: LLMMemoryRLParams) -> list[str]:
    return [
        f"LLM: {model_name(cfg)} scoring admissible shop actions (paper: GPT-4.1 planner with "
        "o4-mini / o3 executors on research tasks)",
        "cases: the shop episode's instruction, action sequence and outcome; the bank starts "
        f"with the {cfg.shop_data.n_init} annotated init cases",
        "parametric Q(s, c): MLP on [s, c, s*c, outcome] fit with binary cross-entropy to the "
        "episode's reward (a soft label; the reference code uses binary success)",
    ]


def _fly_conds(cfg: LLMMemoryRLParams, runs: Runs) -> list[str]:
    return [c for c in cfg.agentfly.conditions if (runs.fly.condition == c).any()]


def _fly_control(cfg, runs: Runs, claim: Claim) -> dict:
    """AgentFly's positive control (each task's own expert case in the bank, one pass)."""
    est = control_arm(
        cfg,
        runs,
        claim,
        "expert cases",
        "shop",
        "test_score",
        test_items("test_score"),
        None,
        FLY_TASKS,
    )
    if not est:
        return {}
    return {
        "positive_control": next(iter(est.items())),
        "control_note": "one pass over the tasks with each task's own expert case in the bank "
        "(score per task)",
    }


def llm_5(cfg: LLMMemoryRLParams, runs: Runs, floors=None) -> ClaimResult | None:
    conds, fly, last = _fly_conds(cfg, runs), runs.fly, cfg.agentfly.iterations - 1
    order = [c for c in ("parametric", "nonparametric", "none") if c in conds]
    est, fl, top = _shop_floor(
        cfg, floors, LLM_5, lambda r: r.best_score[last], task_best, FLY_TASKS
    )
    comps = [
        Comparison(FLY_LABELS[a], FLY_LABELS[b], floor=fl, ceiling=top, effect=True)
        for a, b in itertools.pairwise(order)
    ]
    if not comps:
        return None
    est |= {
        FLY_LABELS[c]: runs_arm(
            [v[last] for v in g.best_score],
            "LLM-5",
            FLY_LABELS[c],
            cfg.bootstrap_reps,
            [task_best(r) for _, r in g.iterrows()],
            FLY_TASKS,
        )
        for c in conds
        for g in [fly[fly.condition == c]]
    }
    n = cfg.agentfly.iterations
    series = {
        FLY_LABELS[c]: np.array(fly[fly.condition == c].best_score.tolist(), float) for c in conds
    }
    # the control makes one pass: the floor it must clear is scored on one pass too
    first, fl1, _ = _shop_floor(
        cfg, floors, LLM_5, lambda r: r.iter_score[0], lambda r: r["task_scores"][0], FLY_TASKS
    )
    one_pass = f"{fl1} (one pass)" if fl1 else None
    if fl1:
        est[one_pass] = first[fl1]
    return ClaimResult(
        claim=replace(LLM_5, metric=LLM_5.metric.format(n=n)),
        estimates=est,
        ours=FLY_LABELS[order[0]],
        comparisons=comps,
        budget=_fly_budget(cfg, runs),
        deviations=_fly_deviations(cfg),
        **narrower(cfg, *_FLY_SETUP),
        used=Budget(n, ITERATIONS),
        trends=trends(LLM_5, comps, series, [(i + 1) / n for i in range(n)], cfg.bootstrap_reps),
        trend_note="the same measure up to each iteration",
        floor_reason="" if fl else NO_FLOOR_RUNS,
        **_fly_control(cfg, runs, LLM_5),
        control_floor=one_pass,
    )


def llm_6(cfg: LLMMemoryRLParams, runs: Runs, floors=None) -> ClaimResult | None:
    hp, fly = cfg.agentfly, runs.fly
    mem = [c for c in ("parametric", "nonparametric") if c in _fly_conds(cfg, runs)]
    if not mem or hp.iterations < 2:
        return None
    est, fl, top = _shop_floor(
        cfg, floors, LLM_6, lambda r: r.iter_score[-1], lambda r: r["task_scores"][-1], FLY_TASKS
    )
    series: dict[str, np.ndarray] = {}
    comps = []
    n = hp.iterations
    for c in mem:
        g = fly[fly.condition == c]
        a, b = f"{FLY_LABELS[c]} · iteration {n}", f"{FLY_LABELS[c]} · iteration 1"
        for name, i in ((a, -1), (b, 0)):
            # paired by task; an iteration copying another item by item is named (copies)
            est[name] = runs_arm(
                [v[i] for v in g.iter_score],
                "LLM-6",
                name,
                cfg.bootstrap_reps,
                [t[i] for t in g.task_scores],
                FLY_TASKS,
            )
        scores = np.array(g.iter_score.tolist(), float)
        series[a], series[b] = scores[:, 1:], np.repeat(scores[:, :1], n - 1, axis=1)
        comps.append(Comparison(a, b, floor=fl, ceiling=top, effect=True))
    return ClaimResult(
        claim=LLM_6,
        estimates=est,
        ours=comps[0].better,
        comparisons=comps,
        budget=_fly_budget(cfg, runs),
        floor_reason="" if fl else NO_FLOOR_RUNS,
        deviations=_fly_deviations(cfg),
        **narrower(cfg, *_FLY_SETUP),
        used=Budget(n, ITERATIONS),
        trends=trends(LLM_6, comps, series, [(i + 1) / n for i in range(1, n)], cfg.bootstrap_reps),
        trend_note="iteration k's score against iteration 1's, k = 2..n",
        **_fly_control(cfg, runs, LLM_6),
    )


CLAIMS = (llm_1, llm_2, llm_3, llm_4, llm_5, llm_6, llm_7, llm_8)


def claims(
    cfg: LLMMemoryRLParams, runs: Runs, floors: pd.DataFrame | None = None
) -> list[ClaimResult]:
    """Every claim the profile's runs (and floor runs) can test, in order."""
    return [r for f in CLAIMS if (r := f(cfg, runs, floors)) is not None]
