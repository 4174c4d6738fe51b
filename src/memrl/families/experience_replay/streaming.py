"""The streaming paper's claims (Elsayed, Vasan & Mahmood 2024): stream Q(λ), learning from
each transition once, against DQN1 (the stream barrier, ER-7) and against DQN with replay at
equal env steps (ER-8), on MinAtar; the stored runs are the family's ``stream`` table."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from memrl.agents.sb3_dqn import minatar_dqn_deviations
from memrl.families.experience_replay.arms import FAMILY, STEPS, Runs, arm_of, floor_of
from memrl.families.experience_replay.params import ExperienceReplayParams
from memrl.stats.claims import MATCHES, Budget, Claim, ClaimResult, Comparison, share
from memrl.stats.compare import Margin
from memrl.stats.curves import checkpoint_windows, window_mean
from memrl.stats.floors import NO_FLOOR_RUNS
from memrl.stats.trend import CHECKPOINTS, trends

STREAMING = "Elsayed, Vasan & Mahmood 2024, Streaming Deep Reinforcement Learning Finally Works"
ER_7 = Claim(
    family=FAMILY,
    claim_id="ER-7",
    paper=STREAMING,
    source="Sec. 2 and Fig. 2 (the stream barrier); reference stream_q_minatar.py",
    statement="Stream Q(λ), learning from each transition once with no replay buffer, "
    "learns MinAtar where DQN with a buffer of 1 and batch 1 (the stream barrier) fails.",
    paper_value="stream Q(λ) well above DQN1 on MinAtar; DQN1 near the floor or unstable",
    metric="mean training return of the last {late:.0%} of {steps} steps on {env}",
    higher_is_better=True,
    regime="final",
    paper_budget=Budget(5_000_000, STEPS),  # stream_q_minatar.py: 5M steps
)
ER_8 = Claim(
    family=FAMILY,
    claim_id="ER-8",
    paper=STREAMING,
    source="Fig. 6 (MinAtar: stream Q(λ) against DQN with replay)",
    statement="Stream Q(λ) is competitive with DQN with a replay buffer on MinAtar.",
    paper_value="stream Q(λ) matches or beats DQN on most MinAtar games at 5M steps",
    # both arms over one window of env steps: the last part of the replay DQN's own run
    metric="mean training return over env steps ({start:,}, {steps:,}] (the last {late:.0%} "
    "of DQN with replay's {steps:,}), both arms, on {env}",
    higher_is_better=True,
    regime="final",
    paper_budget=Budget(5_000_000, STEPS),
)


STREAM_Q, DQN1, DQN_REPLAY = "stream Q(λ)", "DQN1", "DQN"
# "competitive", with no number in the paper: DQN's gap above the random floor, a fifth of it
COMPETITIVE = Margin(
    "a fifth of DQN's gap above the random policy (a stated convention: the paper says "
    "'competitive' and gives curves, no number)",
    gap_share=0.2,
)


ON_THE_ENGINE = (
    "stream Q(λ) and DQN1 trained on the accelerated engine (memrl.engines: JAX on CPU, XLA "
    "pinned to AVX2 and one core a process), each run one compiled loop: the torch agent's "
    "and SB3's updates, equal to them within float rounding from the same initial weights "
    "(tests/test_engine.py); the games ported to JAX, frame-exact against the minatar package "
    "(tests/test_minatar_jax.py); the exploration, sticky actions and Breakout's serve drawn "
    "from jax.random (the same distributions as the package's and the agents' generators, "
    "not their streams); stream Q's normalisation in float32 with Kahan's compensation and "
    "its TD error in float32 (the reference: float64)"
)


def _late_at(df: pd.DataFrame, total: int | None = None) -> np.ndarray:
    """Seeds x checkpoints: mean training return in the window ending at each quarter of
    ``total`` steps (default: each run's own budget)."""
    return np.array(
        [
            checkpoint_windows(
                r.episode_returns, r.episode_lengths, total or r.total_timesteps, CHECKPOINTS
            )
            for r in df.itertuples()
        ],
        dtype=float,
    )


def _window(st, df: pd.DataFrame) -> tuple[int, int]:
    """ER-8's window of env steps, ``(start, stop]``: the last ``late_fraction`` of the replay
    DQN's own run (``dqn_timesteps``), as its rows' ``late_return`` is (the jobs' stream_row),
    so stream Q(λ), run longer, is judged at the same steps."""
    stop = st.dqn_timesteps
    if ran := set(df[df.method == DQN_REPLAY].total_timesteps) - {stop}:
        raise ValueError(f"ER-8: DQN with replay's rows ran {sorted(ran)} steps, not {stop}")
    return int((1 - st.late_fraction) * stop), stop


def _stream(cfg: ExperienceReplayParams, runs: Runs, floors, claim: Claim, worse: str, **kw):
    st, df = cfg.stream, runs.get("stream")
    if st is None or df is None or not len(df) or worse not in set(df.method):
        return None
    # ER-7: both arms' own late window (both run total_timesteps); ER-8: the replay DQN's
    # (it runs dqn_timesteps), stream Q(λ) judged over the same steps of its longer run
    equal = worse == DQN_REPLAY
    start, steps = _window(st, df) if equal else (0, st.total_timesteps)
    est, comps, series = {}, [], {}
    for env_id in st.env_ids:
        env = env_id.split("/")[-1].rsplit("-v", 1)[0]
        fl_est, fl, _ = floor_of(cfg, floors, claim, env_id)
        est |= fl_est
        names = {m: f"{m} · {env}" for m in (STREAM_Q, worse)}
        for m, name in names.items():
            at = df[(df.method == m) & (df.env_id == env_id)].sort_values("seed")
            late, series[name] = at.late_return, _late_at(at)
            if equal and m == STREAM_Q:  # over the DQN's window and quarters of its run
                late = [
                    window_mean(r.episode_returns, r.episode_lengths, start, steps)
                    for r in at.itertuples()
                ]
                series[name] = _late_at(at, steps)
            est[name] = arm_of(cfg, claim, name, late)
        if equal:
            comps.append(
                Comparison(names[STREAM_Q], names[worse], MATCHES, margin=COMPETITIVE, floor=fl)
            )
        else:
            comps.append(Comparison(names[STREAM_Q], names[worse], floor=fl))
    q, budget = st.stream_q, f"{st.total_timesteps} steps on {', '.join(st.env_ids)}"
    same_steps = _equal_steps(st, start) if equal else None  # ER-8's (budget, deviation)
    return ClaimResult(
        claim=replace(
            claim,
            metric=claim.metric.format(
                late=st.late_fraction, start=start, steps=steps, env=", ".join(st.env_ids)
            ),
        ),
        estimates=est,
        ours=comps[0].better,
        comparisons=comps,
        budget=budget + (f" (stream Q(λ)); {same_steps[0]}" if same_steps else ""),
        used=Budget(steps, STEPS),
        trends=trends(claim, comps, series, CHECKPOINTS, cfg.bootstrap_reps),
        trend_note="training return in the window ending at each quarter of the budget",
        floor_reason="" if any(c.floor for c in comps) else NO_FLOOR_RUNS,
        deviations=[
            f"{st.total_timesteps} steps (the paper: 5M) on {len(st.env_ids)} MinAtar games "
            f"(the paper: 5), {st.seeds} seeds (the family's others: {cfg.seeds})",
            f"stream Q(λ) as the reference's stream_q_minatar.py: λ {q.lamda}, κ {q.kappa}, "
            f"step size {q.lr}, ε {q.epsilon_start} -> {q.epsilon_target} over "
            f"{q.exploration_fraction:.0%}, sparsity {q.sparsity}, hidden {q.hidden_size}; "
            "its two forward passes batched, exploration from a generator of its own",
            "DQN1: SB3 DQN with a buffer of 1, batch 1, an update every step, the MinAtar "
            "network and a target network (the paper's DQN1 settings beyond buffer and batch "
            "not retrieved)",
            *((ON_THE_ENGINE,) if st.engine == "xla" else ()),
            *(minatar_dqn_deviations(st.dqn, st.dqn_timesteps) if equal else ()),
            *((same_steps[1],) if same_steps else ()),
            *kw.pop("deviations", []),
        ],
        coverage_complete=False,
        coverage_note=f"{len(st.env_ids)} of the paper's 5 MinAtar games",
        **kw,
    )


def _equal_steps(st, start: int) -> tuple[str, str]:
    """ER-8's budget and deviation: the replay DQN's shorter run, the window both share."""
    stop, pct = st.dqn_timesteps, share(st.dqn_timesteps / ER_8.paper_budget.amount)
    window = f"env steps ({start:,}, {stop:,}]"
    later = f"; its later steps, to {st.total_timesteps:,}, judged by ER-7 alone"
    return f"DQN with replay {stop} steps ({pct} of the paper's 5M); both over {window}", (
        f"DQN with replay ran {stop:,} steps, {pct} of the paper's 5M; stream Q(λ) is "
        f"compared with it at equal env steps, its mean training return over the DQN's last "
        f"{st.late_fraction:.0%}, {window}" + (later if stop < st.total_timesteps else "")
    )


def er_7(cfg: ExperienceReplayParams, runs: Runs, floors=None) -> ClaimResult | None:
    return _stream(cfg, runs, floors, ER_7, DQN1)


def er_8(cfg: ExperienceReplayParams, runs: Runs, floors=None) -> ClaimResult | None:
    return _stream(cfg, runs, floors, ER_8, DQN_REPLAY)
