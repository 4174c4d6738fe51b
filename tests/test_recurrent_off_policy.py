import numpy as np
import pandas as pd
import pytest

from memrl.config import ConfigError
from memrl.envs.registry import make, short_env
from memrl.families import load_family
from memrl.families.recurrent_off_policy import claims as ro
from memrl.families.recurrent_off_policy import jobs, tables
from memrl.families.recurrent_off_policy.params import parse_method
from memrl.stats.claims import CONTRADICTED, MIXED, NOT_REPRODUCED, PARTIALLY, REPRODUCED
from memrl.stats.points import CI_COLUMNS

INCONCLUSIVE = "inconclusive (budget)"


def test_method_names_parse_into_algorithm_core_and_sharing():
    assert parse_method("SAC") == ("SAC", None, False)
    assert parse_method("RSAC-LSTM-shared") == ("RSAC", "lstm", True)
    assert parse_method("SACD-window") == ("SACD", "window", False)
    cfg = load_family("recurrent_off_policy", "smoke")
    p = cfg.agent_params("RTD3-GRU-shared")
    assert (p.core, p.shared_encoder, p.policy_delay) == ("gru", True, cfg.rtd3.policy_delay)


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d["envs"][0].update(methods=["RSAC-XL"]), "unknown method 'RSAC-XL'"),
        (lambda d: d["envs"][0].update(env_id="memrl/Pendulum-Q-v1"), "unknown gymnasium env"),
        (lambda d: d["tmaze"].update(lengths=[4, 40]), "must cover the longest T-Maze"),
        (lambda d: d["envs"][0].update(total_timesteps=100), "learning_starts must be below"),
        (lambda d: d["rsac"].update(hidden_size="64"), "rsac.hidden_size"),
    ],
)
def test_bad_values_fail_before_training(params_with, mutate, message):
    with pytest.raises(ConfigError, match=message):
        load_family("recurrent_off_policy", "default", params_with(mutate, "recurrent_off_policy"))


def test_make_registers_the_suites_pomdp_ids():
    env = make("memrl/PassiveTMaze-v0", 0, length=3)
    assert env.unwrapped.length == 3
    assert make("memrl/Pendulum-V-v1", 0).observation_space.shape == (1,)


def test_random_phase_of_the_t_maze_scores_chance():
    """Regression: the exploration generator must not replay the env's (seeded alike), or
    every random turn mirrors the cue and a random agent scores 0 (or 1). At the junction
    (length 1: the turn is the first move) one move of the four is right: 1/4."""
    from memrl.agents import recurrent_loop
    from memrl.agents.contract import Evals
    from memrl.agents.recurrent_sac_discrete import RecurrentSACDiscrete

    cfg = load_family("recurrent_off_policy", "smoke")
    p = cfg.agent_params("SACD-GRU", tmaze=True).model_copy(update={"learning_starts": 10_000})
    for seed in (0, 1):

        def env_fn(s):
            return make(jobs.TMAZE_ID, s, length=1)

        out = recurrent_loop.train(RecurrentSACDiscrete.for_env, env_fn, p, 400, seed, Evals(4))
        assert len(out["episode_returns"]) == 400 and len(out["eval_returns"]) == 4
        assert 0.15 < np.mean(out["episode_returns"]) < 0.35


def fake_runs(cfg, good: float, bad: float, seeds: int | None = None, timing=None) -> tables.Runs:
    """Runs where the paper's better method scores ``good`` and the other ``bad`` (``seeds``:
    the profile's by default)."""
    rng = np.random.default_rng(0)
    seeds = cfg.seeds if seeds is None else seeds
    better = {"RSAC-LSTM", "SACD-FFM", "SACD-GRU", "PPO-FFM", "PPO-GRU"}
    rows = []
    for e in cfg.envs:
        env = short_env(e.env_id)
        for m in e.methods:
            for s in range(e.seeds or seeds):  # an env may ask for more (RO-1, RO-4), as the grid
                v = good if m in better else bad
                if m in ("SACD-S5", "PPO-S5"):  # above the GRU when the papers hold, below if not
                    v = good + 0.1 * (good - bad)
                v = v + rng.normal(0, 1)
                pop = e.env_id.startswith("popgym/")
                if m in ("RPPO", "PPO-LSTM") and not pop:  # CartPole's return stops at 500
                    v = 500.0 if good > bad else 100.0 + rng.normal(0, 1)
                rows.append(
                    {
                        "env": env,
                        "method": m,
                        "length": 0,
                        "seed": s,
                        "total_timesteps": e.total_timesteps,
                        "eval_return": v,
                        "checkpoints": [0.25, 0.5, 0.75, 1.0],
                        "checkpoint_eval": [v - 30, v - 20, v - 10, v],
                    }
                )
                if pop:  # PPO's episode log: 4 updates of 2 episodes, the last one's mean v
                    q = e.total_timesteps // 4
                    log = [v + d + x for d in (-30, -20, -10, 0) for x in (-1, 1)]
                    rows[-1] |= {"env_id": e.env_id, "rollout": q, "episode_returns": log}
                    rows[-1]["episode_lengths"] = [q // 2] * 8
    for L in cfg.tmaze.lengths:
        for m in cfg.tmaze.methods:
            for s in range(seeds):
                ok = m == "SACD-GRU" or L <= cfg.sacd.context
                rows.append(
                    {
                        "env": f"T-Maze L={L}",
                        "method": m,
                        "length": L,
                        "seed": s,
                        "total_timesteps": L,
                        "eval_return": 0.0,
                        # seeds differ a little: identical seeds have no spread to judge
                        "success": (1.0 if ok else 0.5) - 0.02 * (s % 2),
                        "checkpoints": [0.5, 1.0],
                        "checkpoint_eval": [0.5, 1.0 if ok else 0.5],
                    }
                )
    df = pd.DataFrame(rows)
    return tables.Runs(df[df.length == 0].reset_index(drop=True), df[df.length > 0], timing)


def default_cfg():
    cfg = load_family("recurrent_off_policy", "default")
    return cfg.model_copy(update={"bootstrap_reps": 200})  # fast; verdicts are not borderline


def claims(cfg, runs, floors=None):
    """The family's claims beside the ``paper`` profile, as the notebook calls them."""
    return ro.claims(cfg, runs, floors, paper=load_family("recurrent_off_policy", "paper"))


def test_claims_verdicts_follow_the_runs():
    # 5 seeds against a constant (RO-4's majority of seeds at 500) cannot decide at 95%: all 5
    # at 500 happens in 1 of 32 experiments where each seed's chance is one half
    five = default_cfg()  # every env at the family's 5 seeds (the default gives some more)
    five = five.model_copy(
        update={"envs": [e.model_copy(update={"seeds": None}) for e in five.envs]}
    )
    got = {r.claim.claim_id: r for r in claims(five, fake_runs(five, -150.0, -1200.0))}
    # against a constant, 5 seeds cannot decide whatever they score: the design says so
    assert got["RO-4"].verdict == (
        "inconclusive (design: no outcome can decide at these seeds; ~6 per arm could)"
    )
    cfg = five.model_copy(update={"seeds": 6})
    good = {r.claim.claim_id: r for r in claims(cfg, fake_runs(cfg, -150.0, -1200.0))}
    assert set(good) == {"RO-1", "RO-2", "RO-3", "RO-4", "RO-5", "RO-7", "RO-8", "RO-12"}
    # final-regime claims at < 50% of the papers' budgets: "partially" when they hold,
    # "partially contradicted" when they fail, both narrowed by the budget
    assert good["RO-1"].coverage < 0.5 and good["RO-1"].decision.category == PARTIALLY
    assert good["RO-3"].decision.category == PARTIALLY
    assert good["RO-7"].decision.category == REPRODUCED  # the T-Maze paper's budget is unknown
    assert good["RO-4"].decision.category == REPRODUCED  # LSTM-PPO at the zoo's 100k steps
    assert good["RO-1"].to_row()["n_seeds"] == 6  # the paper's constants are not seeds
    bad = {r.claim.claim_id: r for r in claims(cfg, fake_runs(cfg, -1200.0, -150.0))}
    assert {bad[c].decision.category for c in ("RO-1", "RO-3", "RO-8")} == {CONTRADICTED}
    assert good["RO-8"].decision.category == PARTIALLY  # S5 above the GRU at 0.05% of 15M steps
    assert bad["RO-4"].decision.category == NOT_REPRODUCED  # at 100% coverage a failure is a "no"
    # at the papers' budgets the same runs are judged by the comparisons alone
    full = cfg.model_copy(
        update={"envs": [e.model_copy(update={"total_timesteps": 100_000}) for e in cfg.envs]}
    )
    good = {r.claim.claim_id: r for r in claims(full, fake_runs(full, -150.0, -1200.0))}
    assert (
        good["RO-1"].decision.category == REPRODUCED
        and good["RO-4"].decision.category == REPRODUCED
    )
    bad = {r.claim.claim_id: r for r in claims(full, fake_runs(full, -1200.0, -150.0))}
    assert {bad[c].decision.category for c in ("RO-1", "RO-3", "RO-4")} == {NOT_REPRODUCED}


def test_recurrent_sacs_scale_is_stated_beside_the_paper_profile_it_is_given():
    cfg = default_cfg()
    paper = load_family("recurrent_off_policy", "paper")
    rows = ro.claims(cfg, fake_runs(cfg, -150.0, -1200.0), paper=paper)
    first = {r.claim.claim_id: r.deviations[0] for r in rows}
    for cid in ("RO-1", "RO-2", "RO-3"):
        assert first[cid].startswith("recurrent SAC/TD3: hidden_size 64 (paper 128)"), first[cid]
    assert not first["RO-4"].startswith("recurrent SAC/TD3")


def test_claims_carry_trends_from_the_checkpoint_evaluations():
    cfg = default_cfg()
    rows = {r.claim.claim_id: r for r in claims(cfg, fake_runs(cfg, -150.0, -1200.0))}
    trends = rows["RO-1"].trends
    vs_sac = trends[0]
    vs_optimum = next(t for t in trends if "near-optimal" in t.comparison)
    assert [p.fraction for p in vs_sac.points] == [0.25, 0.5, 0.75, 1.0]
    assert vs_sac.direction == "steady" and vs_sac.heading == "the paper's way"
    # RSAC climbs by 30 toward the near-optimal constant: the gap closes
    assert vs_optimum.points[-1].effect.iqm - vs_optimum.points[0].effect.iqm == pytest.approx(
        30, abs=2
    )
    assert rows["RO-7"].trends[0].points[0].fraction == 0.5


def test_t_maze_claim_fails_when_the_window_agent_recalls_beyond_its_context():
    cfg = default_cfg()
    runs = fake_runs(cfg, -150.0, -1200.0)
    runs.tmaze.loc[runs.tmaze.method == "SACD-window", "success"] = 1.0  # beyond K: not the claim
    # the GRU below it there on every seed: a CI that only touches 0 decides nothing (issue 71)
    gru_long = (runs.tmaze.method == "SACD-GRU") & (runs.tmaze.length == max(cfg.tmaze.lengths))
    runs.tmaze.loc[gru_long, "success"] -= 0.05
    rows = {r.claim.claim_id: r for r in claims(cfg, runs)}
    # the window's comparisons beyond K fail, the rest do not decide: the mirror of "partially"
    assert rows["RO-7"].decision.category == CONTRADICTED


def _timing(device: str = "cuda", **ms: float) -> pd.DataFrame:
    """Timings as tables.load builds them, on ``device`` (a GPU by default: the hardware the
    papers' speed-ups rest on, so the setup covers it)."""
    names = {"loop": "GRUCell loop", "gru": "nn.GRU", "s5x4": "S5 (4 layers)"}
    return pd.DataFrame(
        [
            {"core": names.get(c, c), "repeat": r, "ms": v + r, "params": 1, "device": device}
            for c, v in ms.items()
            for r in range(5)  # as the default's timing repeats (3 against 3 cannot decide)
        ]
    )


def test_timing_claims_test_the_papers_ratio():
    cfg = default_cfg()  # the papers' timing sizes

    def judged(timing):
        return {r.claim.claim_id: r for r in claims(cfg, fake_runs(cfg, 0, -1, timing=timing))}

    rows = judged(_timing(FFM=10.0, loop=30.0, gru=25.0))
    assert "RO-9" not in rows  # no S5 timed
    # 2.7x faster is not "about two orders of magnitude": the stated number fails, the
    # bare direction ("faster") holds beside it
    assert rows["RO-6"].decision.category == NOT_REPRODUCED
    beside = [c["direction"]["outcome"] for c in rows["RO-6"].to_row()["comparisons"]]
    assert beside == ["holds", "holds"]
    assert rows["RO-6"].extra["speed-up"]["GRUCell loop / FFM"] == 2.67
    assert rows["RO-6"].claim.machine_dependent and not any(
        r.claim.machine_dependent for r in claims(cfg, fake_runs(cfg, 0, -1))
    )

    # S5 on fair pairs (equal depth, resets on both sides, 1 and 2 threads) and against
    # torch's GRU: "over five times faster" holds only where every ratio's CI lies above 5
    def fair(s5: float, cell: float) -> dict[str, float]:
        return {
            f"{name} · {d} · {t}": v * (4 if d.startswith("4") else 1)
            for name, v in (("S5", s5), ("GRUCell loop", cell))
            for d in ("1 layer, resets", "4 layers, resets")
            for t in ("1 thread", "2 threads")
        }

    rows = judged(_timing(FFM=10.0, loop=600.0, gru=100.0, **fair(10.0, 600.0)))
    assert rows["RO-9"].decision.category == REPRODUCED and len(rows["RO-9"].comparisons) == 5
    assert all(" resets · " in name for name in rows["RO-9"].estimates if name != "nn.GRU")
    assert set(rows["RO-6"].estimates) == {"FFM", "GRUCell loop", "nn.GRU"}
    slower = judged(_timing(FFM=10.0, loop=600.0, gru=30.0, **fair(50.0, 30.0)))["RO-9"]
    assert slower.verdict == NOT_REPRODUCED
    # faster, but not five times: the paper's number fails though the direction holds
    some = judged(_timing(FFM=10.0, loop=600.0, gru=30.0, **fair(10.0, 30.0)))["RO-9"]
    assert some.to_row()["comparisons"][0]["direction"]["outcome"] == "holds"
    assert some.decision.category == NOT_REPRODUCED


def test_timing_on_other_hardware_than_the_papers_does_not_cover_it():
    """RO-6 and RO-9 rest on parallel scans on accelerators: timed on a CPU (a record
    without a device ran there), the setup does not cover the paper's, and a hold and a
    fail narrow alike (*partially* / *partially contradicted*, reason coverage); on a GPU
    they are judged as covering."""
    cfg = default_cfg()
    fair = {
        f"{name} · {d} · {t}": v * (4 if d.startswith("4") else 1)
        for name, v in (("S5", 10.0), ("GRUCell loop", 600.0))
        for d in ("1 layer, resets", "4 layers, resets")
        for t in ("1 thread", "2 threads")
    }

    def judged(device: str | None):
        t = _timing(FFM=10.0, loop=30.0, gru=100.0, **fair)
        t = t.drop(columns="device") if device is None else t.assign(device=device)
        return {r.claim.claim_id: r for r in claims(cfg, fake_runs(cfg, 0, -1, timing=t))}

    gpu, cpu, old = judged("cuda"), judged("cpu"), judged(None)
    assert gpu["RO-9"].verdict == REPRODUCED and gpu["RO-6"].verdict == NOT_REPRODUCED
    for rows in (cpu, old):
        assert rows["RO-9"].decision.category == PARTIALLY  # the hold narrowed
        assert rows["RO-6"].decision.category == CONTRADICTED  # the fail narrowed alike
        for cid in ("RO-6", "RO-9"):
            assert rows[cid].decision.reason == "coverage"
            assert "run on cpu, not accelerators (GPU parallel scans)" in rows[cid].verdict
            row = rows[cid].to_row()
            assert row["device"] == "cpu" and row["hardware"]["covers"] is False
            assert not row["coverage_complete"]
    assert gpu["RO-6"].to_row()["hardware"]["covers"] is True


def test_plot_tables_are_the_declared_dvc_plots():
    cfg = load_family("recurrent_off_policy", "default")
    curve = pd.DataFrame(
        [
            {
                "env": short_env(e.env_id),
                "method": m,
                "step": s,
                "iqm": 1.0,
                "ci_low": 0.5,
                "ci_high": 1.5,
            }
            for e in cfg.envs
            for m in e.methods
            for s in (1, 2)
        ]
    )
    success = pd.DataFrame(
        [
            {"method": m, "length": L, "iqm": 1.0, "ci_low": 0.5, "ci_high": 1.5}
            for m in cfg.tmaze.methods
            for L in cfg.tmaze.lengths
        ]
    )
    made = tables.plot_data(curve, success)
    assert set(made) == {p.file for p in tables.PLOTS}
    ran = {f"{short_env(e.env_id)}.csv": set(e.methods) for e in cfg.envs}
    for p in tables.PLOTS:  # the declared methods that ran, in order, then their CI bands
        y = [m for m in p.y if "floor" not in m and m in ran.get(p.file, p.y)]  # (floor: joined)
        bands = [f"{m} {c}" for c in CI_COLUMNS for m in y]
        assert list(made[p.file].columns) == [p.x, *y, *bands], p.file
        assert (made[p.file][[f"{m} ci_high" for m in y]] == 1.5).all().all()


def test_grid_has_one_job_per_run_and_the_timing():
    cfg = load_family("recurrent_off_policy", "smoke")
    specs = jobs.grid(cfg)
    n_main = sum(len(e.methods) for e in cfg.envs) + len(cfg.tmaze.lengths) * len(cfg.tmaze.methods)
    n_main += len(cfg.card.models)  # one memory-card run per model and seed
    n_trunc = cfg.truncation.seeds * len(cfg.truncation.arms())  # RO-11's fair test
    assert len(specs) == 1 + cfg.seeds * n_main + n_trunc
    # an env may ask for more seeds than the family's (RO-4 against a constant)
    more = cfg.model_copy(
        update={
            "envs": [
                e.model_copy(update={"seeds": 3}) if i == 0 else e for i, e in enumerate(cfg.envs)
            ]
        }
    )
    assert len(jobs.grid(more)) == len(specs) + len(cfg.envs[0].methods)
    assert len({s.key for s in specs}) == len(specs)
    # a claims-only parameter does not change any job: no retraining for a new bootstrap
    other = cfg.model_copy(update={"bootstrap_reps": 7, "near_optimal": {}})
    assert [s.key for s in jobs.grid(other)] == [s.key for s in specs]


def test_every_job_function_runs_its_smoke_job():
    """One smoke job per job function of the family (SAC, SAC-prev, RPPO, PPO-LSTM, PPO on
    POPGym, RSAC, RTD3, SACD, the timing, the memory card), run in this process: each returns
    its row."""
    from memrl import families
    from memrl.families import load_family
    from memrl.jobs import resolve

    specs = families.get("recurrent_off_policy").grid(load_family("recurrent_off_policy", "smoke"))
    first = {}  # the cheapest smoke job of each function
    for s in sorted(specs, key=lambda s: s.cost):
        if ".jobs:" in s.fn and s.fn not in first:
            first[s.fn] = s
    assert len(first) == 10, sorted(first)
    for spec in first.values():
        row = resolve(spec.fn)(**spec.kwargs)
        assert isinstance(row, dict) and row, spec.name


def _card_runs(cfg, rate: float, dt: float, seeds: int | None = None) -> list[dict]:
    K, seeds = cfg.card.context, cfg.seeds if seeds is None else seeds
    return [
        {
            "card": True,
            "core": core,
            "K": K,
            "seed": s,
            # seeds differ a little (0.98 / 1.0): identical seeds have no spread to judge
            "success": {
                str(xi): (1.0 if xi <= K else v) - 0.02 * (s % 2) for xi in cfg.card.horizons
            },
            "losses": [0.5, 0.01],
        }
        for core, v in (("rate", rate), ("dt", dt))
        for s in range(seeds)
    ]


def test_rate_claim_follows_the_card_runs():
    cfg = default_cfg().model_copy(update={"seeds": 6})  # "beats chance" against 0.5 needs 6
    base = fake_runs(cfg, -150.0, -1200.0)

    def judged(rate, dt):
        runs = base._replace(card=tuple(_card_runs(cfg, rate, dt)))
        return {r.claim.claim_id: r for r in claims(cfg, runs)}["RO-10"]

    held = judged(1.0, 0.5)
    assert held.decision.category == PARTIALLY  # 20 of the reference's 200 epochs
    assert held.claim.metric.startswith(f"success rate of {cfg.card.eval_episodes} ")
    # below half the budget a fail is narrowed as a hold is (RATE below chance: a CI that
    # only touches the threshold decides nothing, issue 71)
    assert judged(0.45, 0.5).decision.category == CONTRADICTED
    full = cfg.model_copy(
        update={"card": cfg.card.model_copy(update={"transformer": {"epochs": 200}})}
    )
    runs = base._replace(card=tuple(_card_runs(full, 1.0, 0.5)))
    assert {r.claim.claim_id: r for r in claims(full, runs)}[
        "RO-10"
    ].decision.category == REPRODUCED
    runs = base._replace(card=tuple(_card_runs(full, 0.45, 0.5)))
    # RATE below chance at the full budget: every comparison fails, the mirror of reproduced
    assert {r.claim.claim_id: r for r in claims(full, runs)}[
        "RO-10"
    ].decision.category == NOT_REPRODUCED


def test_t_maze_claims_beat_the_chance_runs_not_a_constant():
    """RO-7 and RO-10 compare against chance's runs on the same corridors (the walk with a
    coin-flip turn: their seeds vary around 0.5), not against the number 0.5."""
    cfg = default_cfg()
    rng = np.random.default_rng(1)
    envs = [f"T-Maze L={L}" for L in cfg.tmaze.lengths]
    envs += [f"T-Maze xi={xi}" for xi in cfg.card.horizons]
    floors = pd.DataFrame(
        [
            {"floor": "chance", "env": e, "seed": s, "episode_returns": rng.integers(0, 2, 50)}
            for e in envs
            for s in range(5)
        ]
    )
    runs = fake_runs(cfg, -150.0, -1200.0)._replace(card=tuple(_card_runs(cfg, 1.0, 0.5)))
    rows = {r.claim.claim_id: r for r in claims(cfg, runs, floors)}
    for cid in ("RO-7", "RO-10"):
        worse = {c.worse for c in rows[cid].comparisons}
        assert "chance" not in worse and any(w.startswith("chance · T-Maze") for w in worse)
        assert all(
            o.judgement.difference.ci_low < o.judgement.difference.ci_high
            for o in rows[cid].outcomes
        )
    assert rows["RO-7"].decision.category == REPRODUCED


def test_the_truncation_claim_follows_its_fair_test():
    """RO-11 on its own runs (issue 56), every training corridor longer than K, judged per
    seed (issue 71): each truncated core's share of seeds recalling the cue past K within the
    margin of the floor's share, RTRL's above it (exact tests); the full-BPTT controls
    reported beside, never compared. No truncated seed recalling cannot show "within 0.1" at
    6 seeds (undecided), RTRL's holds; the truncated cores carrying the cue make it fail; a
    truncated core that never walks (below the random policy) decides nothing; half its
    seeds recalling (the IQM would trim them) fails it."""
    from memrl.families.recurrent_off_policy.params import bptt_arm, truncated_arm
    from memrl.families.recurrent_off_policy.truncation_claims import ro_11

    cfg = default_cfg()
    # the default's design, narrowed to keep the test quick: two cores, two judged corridors
    small = {"cores": ["gru"], "train_lengths": [12, 16], "horizons": [12, 16, 48], "seeds": 6}
    cfg = cfg.model_copy(update={"truncation": cfg.truncation.model_copy(update=small)})
    c = cfg.truncation
    K = c.context
    judged = [xi for xi in c.horizons if K < xi <= max(c.train_lengths)]
    assert judged and min(c.train_lengths) > K
    base = fake_runs(cfg, -150.0, -1200.0)
    rng = np.random.default_rng(4)

    def episodes(rate: float) -> list[float]:
        return [float(x) for x in rng.random(c.eval_episodes) < rate]

    floors = pd.DataFrame(
        [
            {"floor": f, "env": f"T-Maze xi={xi}", "seed": s, "episode_returns": e}
            for xi in c.horizons
            for s in range(c.seeds)
            for f, e in (("chance", episodes(0.5)), ("random", episodes(0.0)))
        ]
    )

    def judged_with(truncated: float, control: float = 1.0, recalling: int = 0):
        runs = []
        for s in range(c.seeds):
            for name, _, _ in c.arms():
                rate = truncated if "truncated" in name else control
                if "truncated" in name and s < recalling:  # these seeds recall the cue
                    rate = 1.0
                eps = {str(xi): episodes(rate) for xi in c.horizons}
                runs.append(
                    {
                        "card": True,
                        "study": "truncation",
                        "arm": name,
                        "seed": s,
                        "episodes": eps,
                        "success": {k: float(np.mean(v)) for k, v in eps.items()},
                    }
                )
        return ro_11(cfg, base._replace(truncation=tuple(runs)), floors)

    held = judged_with(0.5)
    n_trunc = len(c.cores) * len(c.epochs)
    assert len(held.comparisons) == n_trunc + 1  # one per truncated arm, RTRL; no control
    assert not any(bptt_arm("gru") in n for o in held.comparisons for n in (o.better, o.worse))
    got = [o.outcome for o in held.outcomes]
    assert got == ["undecided"] * n_trunc + ["holds"], held.verdict
    assert held.decision.category == PARTIALLY, held.verdict
    assert truncated_arm("gru", c.epochs[0]) in held.extra[next(iter(held.extra))]
    controls = next(v for k, v in held.extra.items() if k.startswith("positive controls"))
    assert f"{bptt_arm('gru')}: 6 of 6 seeds recall, above the floor's share" in controls
    # the truncated cores carry the cue past K: their comparisons fail, RTRL's holds
    assert judged_with(1.0).decision.category == MIXED
    # most seeds recall (an IQM trims up to a quarter of them): the claim fails there
    half = judged_with(0.5, recalling=4)
    assert [o.outcome for o in half.outcomes][:n_trunc] == ["fails"] * n_trunc, half.verdict
    # a truncated core that never learned to walk: at the random policy, it decides nothing
    assert judged_with(0.0).decision.category != REPRODUCED
    # the controls at chance (RTRL among them): nothing shows the cores can carry the cue
    assert judged_with(0.5, control=0.5).decision.category != REPRODUCED
