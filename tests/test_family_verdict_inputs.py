"""Issue 71's verdict inputs in the recurrent, episodic-control and experience-replay
families, on fabricated runs: DQN's learnability judged on its full run (EC-1, EC-4), the
T-Maze arms paired by seed (RO-10, RO-11), ER-4's level against arms at the floor."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
from test_claims import cfg_of, ec_runs

from memrl.envs.registry import short_env
from memrl.families.episodic_control import claims as ec
from memrl.stats.claims import INCONCLUSIVE, PARTIALLY


def _ec_floors(cfg, level: float = 0.0) -> pd.DataFrame:
    """The random policy's runs, at ``level`` in every window."""
    rng = np.random.default_rng(1)
    rows = []
    for e in cfg.envs:
        t = e.total_timesteps
        for s in range(cfg.seeds):
            rows.append(
                {
                    "floor": "random",
                    "env": short_env(e.env_id),
                    "seed": s,
                    "total_timesteps": t,
                    "episode_returns": list(level + rng.normal(0, 0.1, 8)),
                    "episode_lengths": [t // 8] * 8,
                }
            )
    return pd.DataFrame(rows)


def _dqn_at(df: pd.DataFrame, early: float, late: float) -> pd.DataFrame:
    """DQN at ``early`` in the early window (episodes 1-2) and ``late`` after."""
    df = df.copy()
    rng = np.random.default_rng(2)
    for i in df.index[df.method == "DQN"]:
        e, lt = early + rng.normal(0, 0.1), late + rng.normal(0, 0.1)
        df.at[i, "early_return"], df.at[i, "late_return"] = e, lt
        df.at[i, "episode_returns"] = [e] * 2 + [lt] * 6
    return df


def test_dqn_learns_on_its_full_run_not_inside_the_early_window():
    """EC-1 and EC-4: DQN at the random floor early (the claim's effect) no longer sets the
    comparison aside when its full run learns (late 5 against the floor's 0): MFEC and NEC
    ahead of it early hold. A DQN that stays at the floor on its full run fails its control:
    the verdict is inconclusive (learner), naming it."""
    cfg = cfg_of("episodic_control")
    floors = _ec_floors(cfg)
    learns = {
        r.claim.claim_id: r for r in ec.claims(cfg, _dqn_at(ec_runs(cfg, True), 0, 5), floors)
    }
    for cid in ("EC-1", "EC-4"):
        r = learns[cid]
        assert r.learners and all(lc.passed for lc in r.learners), r.learners
        dqn = [o for o in r.outcomes if o.comparison.worse.startswith("DQN")]
        assert dqn and all(o.outcome == "holds" for o in dqn), [o.judgement for o in dqn]
        assert r.decision.category == PARTIALLY  # fewer games than the paper's
    stuck = {r.claim.claim_id: r for r in ec.claims(cfg, _dqn_at(ec_runs(cfg, True), 0, 0), floors)}
    for cid in ("EC-1", "EC-4"):
        r = stuck[cid]
        assert r.decision.category == INCONCLUSIVE and r.decision.reason == "learner"
        assert "DQN · " in r.verdict and "does not learn in its own full run" in r.verdict
        assert any(lc["passed"] is False for lc in r.to_row()["learners"])


def test_tmaze_arms_at_one_seed_share_their_mazes_and_are_paired_by_seed():
    """RO-10's card cores and RO-11's arms are scored on the same mazes at one seed (the
    card job seeds episode i of seed s as 10**6 (s + 1) + i): paired by seed and maze, runs
    in seed order whatever the store's order."""
    from memrl.families.recurrent_off_policy import claims as ro
    from memrl.families.recurrent_off_policy.statements import RO_10
    from memrl.families.recurrent_off_policy.truncation_claims import _arm
    from memrl.stats.bootstrap import paired_by_seed

    cfg = cfg_of("recurrent_off_policy")
    rng = np.random.default_rng(3)
    runs = [
        {"arm": a, "core": a.lower(), "seed": s, "episodes": {"12": list(rng.random(20) < 0.7)}}
        for s in (2, 0, 1)
        for a in ("GRU", "LSTM")
    ]
    for r in runs:
        r["episodes"]["12"] = [float(v) for v in r["episodes"]["12"]]
        r["success"] = {"12": float(np.mean(r["episodes"]["12"]))}
    (_, g), (_, lstm) = (_arm(cfg, runs, a, 12) for a in ("GRU", "LSTM"))
    assert paired_by_seed(g, lstm)
    first = next(r for r in runs if r["arm"] == "GRU" and r["seed"] == 0)["episodes"]["12"]
    assert list(g.items[0]) == first  # seed order
    (_, cg), (_, cl) = (ro._card_arm(cfg, runs, c, 12, RO_10) for c in ("gru", "lstm"))
    assert paired_by_seed(cg, cl) and not paired_by_seed(cg, replace(g, per_seed=False))


def test_er4_decides_nothing_where_every_arm_and_the_floor_score_zero():
    """ER-4 at 30-50 bits: DQN+HER, DQN and the random policy score 0 on every seed; the
    paper's level (0.9) no longer "clears" the floor for an arm at it: every comparison at
    those lengths is undecided (floor), where a DQN+HER that solves them is judged."""
    import test_claims as tc

    from memrl.families.experience_replay import claims as er

    cfg = tc.cfg_of("experience_replay")
    runs = tc.er_runs(cfg, True)
    her = runs["her"].copy()
    long = her.n_bits >= 30
    her.loc[long, "success"] = 0.0
    her["checkpoint_success"] = [
        [0.0] * 4 if lg else c for lg, c in zip(long, her.checkpoint_success, strict=True)
    ]
    floors = pd.DataFrame(
        [
            {"floor": "random", "env": f"bits {n}", "n_bits": n, "seed": s, "score": 0.0}
            for n in cfg.her.n_bits
            for s in range(cfg.seeds)
        ]
    )
    zero = er.er_4(cfg, {**runs, "her": her}, floors)
    long_n = [n for n in cfg.her.n_bits if n >= 30]
    named = [(o, o.comparison.better + " " + o.comparison.worse) for o in zero.outcomes]
    at_zero = [o for o, t in named if any(f"· {n} bits" in t for n in long_n)]
    assert at_zero and all(o.judgement.reason == "floor" for o in at_zero), [
        (str(o.comparison), o.judgement.reason) for o in at_zero
    ]


def test_ec3_is_judged_at_a_conservative_radius():
    """EC-3 ("at conservative thresholds, no significant loss") at the radius that
    aggregates (keeps < 94% of exact MFEC's keys) and keeps the most: with the sweep keeping
    103%, 95%, 91%, 72% and 42% (r = 1, 1.2, 1.3, 1.5, 2), r = 1.3, conservative (>= 90%);
    the sweep {1, 1.5, 2} judged r = 1.5, which keeps 72%."""
    cfg = cfg_of("episodic_control")
    assert {1.2, 1.3} <= set(cfg.aggregation.merge_radii)
    kept = {0.0: 1.0, 1.0: 1.03, 1.2: 0.95, 1.3: 0.91, 1.5: 0.72, 2.0: 0.42}
    df = ec_runs(cfg, True)
    sweep = df.env == short_env(cfg.aggregation.env_id)
    df.loc[sweep, "memory_size"] = [
        1000.0 * kept[r] + s for r, s in zip(df[sweep].merge_radius, df[sweep].seed, strict=True)
    ]
    ec3 = next(r for r in ec.claims(cfg, df) if r.claim.claim_id == "EC-3")
    assert ec3.ours == "MFEC r=1.3", ec3.ours
    assert "keeping 91% of exact MFEC's keys (conservative)" in ec3.coverage_note
