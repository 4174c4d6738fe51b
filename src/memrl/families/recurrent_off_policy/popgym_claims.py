"""The POPGym claims on PPO with each memory core (issue 72): RO-5 (FFM matches or beats a
GRU, Morad et al. 2023), RO-8 (S5 beats a GRU, Lu et al. 2023) and POPGym's own headline as
a counter-claim, RO-12 (the GRU is the strongest memory model overall, Morad et al. ICLR
2023), judged per task and over the suite, all scored by **MMER** as the papers score them.

MMER (POPGym's metric: the maximum over training of the mean episodic return) is computed
here from each run's raw episode log: the episodes that ended during each update's rollout
(``rollout`` env steps: popjaxrl's metric per update) are averaged, and the run's MMER is the
largest of those means. POPGym's returns are already scaled to [-1, 1] per episode. The
suite's score is, per seed, the mean MMER over the tasks (the papers' suite-wide mean); its
floor the random policy's mean over the same tasks. Holm runs across every comparison of a
claim (the tasks and the suite).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from memrl.families.recurrent_off_policy.floor_arms import comparator, floor_arms
from memrl.families.recurrent_off_policy.params import POPGYM, RecurrentOffPolicyParams
from memrl.families.recurrent_off_policy.statements import RO_5, RO_8, RO_12, STEPS
from memrl.families.recurrent_off_policy.tables import Runs
from memrl.schema import beside_paper
from memrl.stats.aggregate import reference, stable_seed
from memrl.stats.bootstrap import arm
from memrl.stats.claims import MATCHES, Budget, Claim, ClaimResult, Comparison
from memrl.stats.compare import gap_margin
from memrl.stats.floors import NO_FLOOR_RUNS
from memrl.stats.learners import LearnerCheck, learns
from memrl.stats.trend import trends

SUITE = "POPGym suite"  # the suite-wide mean's name in the estimates
FRACTIONS = (0.25, 0.5, 0.75, 1.0)  # MMER so far at these shares of the budget (trends)


def update_means(returns: Sequence[float], lengths: Sequence[int], rollout: int) -> np.ndarray:
    """The mean return of the episodes that ended in each update's rollout (NaN where none
    ended), from a run's episode log (lengths: env steps between successive episode ends)."""
    ends = np.cumsum(np.asarray(lengths, dtype=np.int64))
    if not len(ends):
        return np.array([])
    upd = (ends - 1) // int(rollout)
    sums = np.bincount(upd, weights=np.asarray(returns, dtype=np.float64))
    counts = np.bincount(upd)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def mmer(returns, lengths, rollout: int, upto: int | None = None) -> float:
    """POPGym's MMER: the largest per-update mean episodic return (:func:`update_means`),
    over the updates whose rollouts end by env step ``upto`` (all, by default); NaN if no
    episode ended."""
    means = update_means(returns, lengths, rollout)
    if upto is not None:
        means = means[: max(0, int(upto) // int(rollout))]
    means = means[~np.isnan(means)]
    return float(means.max()) if len(means) else float("nan")


def _ppo(runs: Runs) -> pd.DataFrame:
    """The PPO runs on POPGym's envs, with each run's MMER."""
    main = runs.main
    if "rollout" not in main or not len(main):
        return main.iloc[0:0]
    g = main[main.method.str.startswith("PPO-") & main.env_id.str.startswith(POPGYM)].copy()
    g["mmer"] = [
        mmer(r.episode_returns, r.episode_lengths, r.rollout) for r in g.itertuples(index=False)
    ]
    return g


def _name(method: str, env: str) -> str:
    return f"{method} · {env}"


def _tasks(g: pd.DataFrame, methods: Sequence[str]) -> list[str]:
    """Tasks (in the profile's order) where every one of ``methods`` ran."""
    return [
        e
        for e in dict.fromkeys(g.env)
        if all(((g.env == e) & (g.method == m)).any() for m in methods)
    ]


def _suite_floor(cfg, floors: pd.DataFrame | None, claim: Claim, tasks: list[str]) -> dict:
    """The random policy's suite-wide mean: per seed, its mean score over ``tasks``."""
    if floors is None or not len(floors) or not {"floor", "score"} <= set(floors):
        return {}
    f = floors[(floors.floor == "random") & floors.env.isin(tasks)]
    full = f.groupby("seed").env.nunique() == len(tasks)  # seeds with every task's floor
    vals = f[f.seed.isin(full[full].index)].groupby("seed").score.mean()
    if len(vals) < 2:
        return {}
    name = f"random · {SUITE}"
    return {name: arm(list(vals), claim.claim_id, name, cfg.bootstrap_reps)}


def _arms(cfg, g, claim: Claim, methods: Sequence[str], tasks: list[str]):
    """Per task and suite-wide MMER arms of ``methods`` and their MMER-so-far series."""
    est, series = {}, {}
    steps = dict(zip(g.env, g.total_timesteps.astype(int), strict=False))
    for m in methods:
        per_task = []
        for e in tasks:
            r = g[(g.method == m) & (g.env == e)].sort_values("seed")
            est[_name(m, e)] = arm(list(r.mmer), claim.claim_id, _name(m, e), cfg.bootstrap_reps)
            series[_name(m, e)] = np.array(
                [
                    [
                        mmer(x.episode_returns, x.episode_lengths, x.rollout, f * steps[e])
                        for f in FRACTIONS
                    ]
                    for x in r.itertuples(index=False)
                ]
            )
            per_task.append(r.set_index("seed").mmer)
        suite = pd.concat(per_task, axis=1).dropna()  # seeds that ran every task
        est[_name(m, SUITE)] = arm(
            list(suite.mean(1)), claim.claim_id, _name(m, SUITE), cfg.bootstrap_reps
        )
    return est, series


def _judge(
    cfg: RecurrentOffPolicyParams,
    runs: Runs,
    floors,
    claim: Claim,
    pairs: list[tuple[str, str]],
    *,
    matches: bool = False,
    suite_only: bool = False,
    deviations: Sequence[str] = (),
) -> ClaimResult | None:
    """``better`` against ``worse`` for each pair: per task (unless ``suite_only``) and over
    the suite, by MMER, each beside the random policy's floor and the maximum of 1."""
    g = _ppo(runs)
    methods = list(dict.fromkeys(m for p in pairs for m in p))
    tasks = _tasks(g, methods) if len(g) else []
    if not tasks:
        return None
    est, series = _arms(cfg, g, claim, methods, tasks)
    est |= floor_arms(cfg, floors, claim, tasks) | _suite_floor(cfg, floors, claim, tasks)
    comps = []
    for e in ([] if suite_only else tasks) + [SUITE]:
        est[f"maximum · {e}"] = reference(1.0)  # POPGym's returns are at most 1 per episode
        fl = comparator(est, e)
        for better, worse in pairs:
            extra = {"margin": gap_margin(fl, est[_name(worse, e)].iqm)} if matches else {}
            rel = (MATCHES,) if matches else ()
            comps.append(
                Comparison(
                    _name(better, e),
                    _name(worse, e),
                    *rel,
                    floor=fl,
                    ceiling=f"maximum · {e}",
                    **extra,
                )
            )
    steps = dict(zip(g.env, g.total_timesteps.astype(int), strict=False))
    seeds = g.groupby("env").seed.nunique()
    floor = est.get(f"random · {SUITE}")
    learners = [  # each core shown able to learn: its suite-wide MMER above the random policy's
        learns(
            _name(m, SUITE),
            "the suite's tasks, where a policy above random is known (POPGym's maximum 1)",
            est[_name(m, SUITE)],
            floor,
            True,
            stable_seed(claim.claim_id, m, "learner"),
            "the random policy's suite mean",
        )
        if floor is not None
        else LearnerCheck(_name(m, SUITE), "the suite's tasks", None, "no floor runs")
        for m in methods
    ]
    hp = cfg.ppo_popgym
    return ClaimResult(
        claim=claim,
        estimates=est,
        ours=_name(pairs[0][0], SUITE),
        comparisons=comps,
        budget=", ".join(f"{e}: {steps[e]:,} steps, {seeds[e]} seeds" for e in tasks),
        deviations=[
            "PPO as popjaxrl's run_popgym.py (the S5 paper's code; POPGym's baselines agree on "
            f"envs, rollout, epochs, minibatches): {hp.n_envs} envs x {hp.n_steps} steps per "
            f"update (paper 64 x 1024), {hp.n_epochs} epochs (30), minibatches of "
            f"{hp.batch_size // hp.n_steps} segments (8 of 8), lr {hp.learning_rate:g} (5e-5), "
            f"one shared core of width {hp.hidden_size} (256) under heads {hp.net_arch}",
            "MMER: per update, the mean return of the episodes that ended in its rollout "
            "(popjaxrl's per-update metric), the maximum over training; the suite's score the "
            "mean over its tasks per seed",
            *deviations,
        ],
        coverage_complete=False,
        coverage_note=f"{len(tasks)} POPGym tasks at Easy (papers: the POPGym suite, "
        "Easy/Medium/Hard)",
        used=Budget(min(steps[e] for e in tasks), STEPS),
        trends=trends(claim, comps, series, FRACTIONS, cfg.bootstrap_reps),
        trend_note="MMER so far at 25/50/75/100% of the budget",
        floor_reason="" if any(c.floor for c in comps) else NO_FLOOR_RUNS,
        learners=learners,
        extra={"MMER (IQM over seeds)": {k: round(v.iqm, 3) for k, v in est.items() if " · " in k}},
    )


def popgym_scale(cfg: RecurrentOffPolicyParams, paper: RecurrentOffPolicyParams) -> str:
    """POPGym PPO's scale beside the ``paper`` profile's (popjaxrl's values, typed once in
    params.yaml)."""
    if cfg.ppo_popgym is None or paper.ppo_popgym is None:
        return "PPO on POPGym: no ppo_popgym block"
    fields = ("n_steps", "batch_size", "n_epochs", "learning_rate", "hidden_size", "embed")
    fields += ("s5_layers", "s5_state")
    return "PPO on POPGym: " + beside_paper(cfg.ppo_popgym, paper.ppo_popgym, fields)


def _cores(cfg: RecurrentOffPolicyParams) -> str:
    hp = cfg.ppo_popgym
    if hp is None:
        return ""
    return (
        f"FFM m={hp.ffm_memory} c={hp.ffm_context} (paper: m 32, c 4); S5 {hp.s5_layers} "
        f"layer(s) with {(hp.s5_state or hp.hidden_size) // 2} complex states (popjaxrl: 4 "
        "layers, 128 states), reset inside its scan at episode starts; GRU, LSTM and FFM "
        "reset by cutting segments at episode starts (RLlib's sequences in POPGym)"
    )


def ro_5(cfg: RecurrentOffPolicyParams, runs: Runs, floors=None) -> ClaimResult | None:
    pair = [("PPO-FFM", "PPO-GRU")]
    return _judge(cfg, runs, floors, RO_5, pair, matches=True, deviations=[_cores(cfg)])


def ro_8(cfg: RecurrentOffPolicyParams, runs: Runs, floors=None) -> ClaimResult | None:
    return _judge(cfg, runs, floors, RO_8, [("PPO-S5", "PPO-GRU")], deviations=[_cores(cfg)])


def ro_12(cfg: RecurrentOffPolicyParams, runs: Runs, floors=None) -> ClaimResult | None:
    """POPGym's headline: the GRU above each other core of ours on the suite-wide MMER."""
    main = runs.main
    ran = set(main.method[main.env_id.str.startswith(POPGYM, na=False)]) if len(main) else ()
    others = [m for m in ("PPO-LSTM", "PPO-FFM", "PPO-S5") if m in ran]  # on POPGym's envs
    if not others:
        return None
    return _judge(
        cfg, runs, floors, RO_12, [("PPO-GRU", m) for m in others], suite_only=True,
        deviations=[
            _cores(cfg),
            "POPGym compares 13 memory models under RLlib's PPO; ours: "
            f"{', '.join(m.removeprefix('PPO-') for m in ['PPO-GRU', *others])} from the cores "
            "table, the GRU against each, suite-wide only (as its headline)",
        ],
    )  # fmt: skip
