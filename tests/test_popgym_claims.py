"""The POPGym claims (RO-5, RO-8, RO-12, RO-9 re-timed) on PPO runs: MMER from a run's
episode log, verdicts that follow the runs and mirror when they flip."""

import numpy as np
import pandas as pd
import pytest

from memrl.families import load_family
from memrl.families.recurrent_off_policy import claims as ro
from memrl.families.recurrent_off_policy import popgym_claims, tables
from memrl.stats.claims import CONTRADICTED, PARTIALLY

TASKS = ("RepeatPreviousEasy", "RepeatFirstEasy", "CountRecallEasy")


def test_mmer_is_the_best_update_mean():
    """Episodes grouped by the update whose rollout they ended in (rollout 10 steps)."""
    returns = [0.0, 1.0, 0.2, 0.4, -1.0]
    lengths = [4, 4, 4, 4, 16]  # ends 4, 8 | 12, 16 | - | 32: update 2 ends none (NaN)
    means = popgym_claims.update_means(returns, lengths, 10)
    assert means[:2].tolist() == pytest.approx([0.5, 0.3]) and np.isnan(means[2])
    assert popgym_claims.mmer(returns, lengths, 10) == pytest.approx(0.5)
    assert popgym_claims.mmer(returns, lengths, 10, upto=10) == pytest.approx(0.5)
    assert np.isnan(popgym_claims.mmer([], [], 10))


def runs(cfg, score: dict[str, float], seeds: int = 5) -> tables.Runs:
    """PPO runs on three POPGym tasks whose MMER is ``score[core]`` (+ noise), each reached
    at the last of 4 updates."""
    rng = np.random.default_rng(0)
    rows = []
    for t in TASKS:
        for m, v in score.items():
            for s in range(seeds):
                best = v + rng.normal(0, 0.01)
                q = 125_000
                log = [best + d + x for d in (-0.3, -0.2, -0.1, 0.0) for x in (-0.01, 0.01)]
                rows.append(
                    {"env": t, "env_id": f"popgym/{t}-v0", "method": m, "length": 0, "seed": s,
                     "total_timesteps": 4 * q, "eval_return": best, "rollout": q,
                     "episode_returns": log, "episode_lengths": [q // 2] * 8,
                     "checkpoints": [0.25, 0.5, 0.75, 1.0], "checkpoint_eval": [best] * 4}
                )  # fmt: skip
    df = pd.DataFrame(rows)
    return tables.Runs(df, df.iloc[0:0], None)


def judged(score: dict[str, float], floors: pd.DataFrame | None = None) -> dict:
    cfg = load_family("recurrent_off_policy", "default").model_copy(update={"bootstrap_reps": 200})
    paper = load_family("recurrent_off_policy", "paper")
    return {r.claim.claim_id: r for r in ro.claims(cfg, runs(cfg, score), floors, paper=paper)}


def test_a_core_that_never_beats_the_random_policy_decides_nothing():
    """Each core's learnability control: its suite-wide MMER above the random policy's
    (floor runs per task and seed); S5 at the floor makes RO-8 inconclusive (learner)."""
    rng = np.random.default_rng(1)
    floors = pd.DataFrame(
        [
            {"floor": "random", "env": t, "seed": s, "score": -0.5 + rng.normal(0, 0.01)}
            for t in TASKS
            for s in range(5)
        ]
    )
    got = judged({"PPO-GRU": 0.5, "PPO-FFM": 0.5, "PPO-S5": -0.5}, floors)
    assert got["RO-8"].decision.reason == "learner", got["RO-8"].verdict
    assert "PPO-S5 · POPGym suite does not learn" in got["RO-8"].verdict
    assert got["RO-5"].decision.reason != "learner"  # FFM and the GRU both learn


def test_popgym_claims_follow_the_runs_and_mirror():
    """FFM and S5 above the GRU: RO-5 and RO-8 hold (narrowed by 3.3% of the papers' 15M
    steps), POPGym's counter-claim fails; the GRU above both: the mirror."""
    up = judged({"PPO-GRU": 0.2, "PPO-FFM": 0.6, "PPO-S5": 0.6, "PPO-LSTM": 0.6})
    down = judged({"PPO-GRU": 0.6, "PPO-FFM": 0.2, "PPO-S5": 0.2, "PPO-LSTM": 0.2})
    for cid in ("RO-5", "RO-8"):
        assert up[cid].decision.category == PARTIALLY, up[cid].verdict
        assert down[cid].decision.category == CONTRADICTED, down[cid].verdict
        assert len(up[cid].comparisons) == len(TASKS) + 1  # each task and the suite
        assert up[cid].deviations[0].startswith("PPO on POPGym: n_steps 128 (paper 1024)")
    assert up["RO-12"].decision.category == CONTRADICTED
    assert down["RO-12"].decision.category == PARTIALLY
    assert len(down["RO-12"].comparisons) == 3  # the GRU against LSTM, FFM, S5 on the suite
    assert up["RO-5"].estimates["PPO-FFM · POPGym suite"].iqm == pytest.approx(0.6, abs=0.02)
    # trends: MMER so far at each quarter of the budget, the last quarter's the run's MMER
    assert [p.fraction for p in up["RO-8"].trends[0].points] == [0.25, 0.5, 0.75, 1.0]


def test_ro_9_times_whole_ppo_training_per_env_step():
    cfg = load_family("recurrent_off_policy", "default").model_copy(update={"bootstrap_reps": 200})
    paper = load_family("recurrent_off_policy", "paper")

    def timing(s5: float, gru: float) -> pd.DataFrame:
        rows = [
            {"core": f"PPO-{c} · per env step", "repeat": r, "ms": v * (1 + 0.01 * r),
             "params": 1, "device": "cuda"}
            for c, v in (("S5", s5), ("GRU", gru))
            for r in range(5)
        ] + [
            {"core": c, "repeat": r, "ms": 10.0 + r, "params": 1, "device": "cuda"}
            for c in ("FFM", "GRUCell loop", "nn.GRU")  # RO-6's cores
            for r in range(5)
        ]  # fmt: skip
        return pd.DataFrame(rows)

    def ro_9(t):
        r = runs(cfg, {"PPO-GRU": 0.2})._replace(timing=t)
        return {x.claim.claim_id: x for x in ro.claims(cfg, r, paper=paper)}["RO-9"]

    slower = ro_9(timing(0.8, 0.4))  # S5 2x slower per env step (as measured on this CPU)
    assert [(c.better, c.worse) for c in slower.comparisons] == [
        ("PPO-S5 · per env step", "PPO-GRU · per env step")
    ]
    assert slower.claim.metric.startswith("ms per env step of whole PPO training")
    assert slower.decision.category in (CONTRADICTED, "not reproduced"), slower.verdict
    faster = ro_9(timing(0.05, 0.4))  # 8x faster: the paper's "over five times" holds
    assert faster.verdict.startswith(("reproduced", "partially")), faster.verdict
