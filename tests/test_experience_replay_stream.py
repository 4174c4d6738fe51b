"""ER-8 compares stream Q(λ) with DQN with replay at equal env steps: the replay DQN runs a
budget of its own (``stream.dqn_timesteps``, 20% of the paper's 5M by default) and stream
Q(λ) runs ``total_timesteps``, so stream Q(λ) is judged over the DQN's late window of its
longer run, from the stored episode logs (no job changes); ER-7 (stream Q(λ) against DQN1,
both at ``total_timesteps``) keeps both arms' own late window."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from memrl.families import load_family
from memrl.families.experience_replay import streaming as er
from memrl.families.experience_replay import tables as er_tables
from memrl.profiles import PROFILES
from memrl.stats.curves import window_mean

TOTAL, DQN_STEPS, LATE = 10_000, 2_000, 0.2  # the default's 5M and 1M, scaled down
EARLY_Q, LATE_Q, DQN = 5.0, 50.0, 5.2  # stream Q(λ) before and after the DQN's last step


def cfg():
    base = load_family("experience_replay", "default").model_copy(update={"bootstrap_reps": 200})
    short = {"total_timesteps": TOTAL, "dqn_timesteps": DQN_STEPS, "late_fraction": LATE}
    return base.model_copy(update={"stream": base.stream.model_copy(update=short)})


def row(env_id: str, method: str, seed: int, steps: int, value) -> dict:
    """A stored stream row (as the jobs' stream_row writes it): episodes of 100 steps,
    each returning ``value(end step)`` plus noise; ``late_return`` its own last window."""
    rng = np.random.default_rng([seed, len(method)])
    ends = np.arange(100, steps + 1, 100)
    rets = [float(value(e) + rng.normal(0, 0.3)) for e in ends]
    lens = [100] * len(ends)
    return {
        "kind": "stream",
        "seed": seed,
        "env": env_id.split("/")[-1].rsplit("-v", 1)[0],
        "env_id": env_id,
        "method": method,
        "late_return": window_mean(rets, lens, int((1 - LATE) * steps), steps),
        "total_timesteps": steps,
        "episode_returns": rets,
        "episode_lengths": lens,
    }


@pytest.fixture(scope="module")
def judged():
    c = cfg()

    def stream_q(end: int) -> float:  # level with DQN up to its last step, far above after
        return EARLY_Q if end <= DQN_STEPS else LATE_Q

    rows = [
        row(e, m, s, steps, value)
        for e in c.stream.env_ids
        for m, steps, value in (
            (er.STREAM_Q, TOTAL, stream_q),
            (er.DQN1, TOTAL, lambda end: 1.0),
            (er.DQN_REPLAY, DQN_STEPS, lambda end: DQN),
        )
        for s in range(c.stream.seeds)
    ]
    runs = {"stream": er_tables.load(rows)["stream"]}
    floors = pd.DataFrame(
        [
            {"floor": "random", "env": e, "seed": s, "score": 0.5 + 0.05 * s}
            for e in c.stream.env_ids
            for s in range(c.stream.seeds)
        ]
    )
    return c, runs, er.er_7(c, runs, floors), er.er_8(c, runs, floors)


def test_er8_judges_stream_q_over_the_dqns_late_window(judged):
    c, runs, _, r = judged
    df = runs["stream"]
    start = int((1 - LATE) * DQN_STEPS)  # (1,600, 2,000]: the DQN's last 20%
    for e in c.stream.env_ids:
        env = e.split("/")[-1].rsplit("-v", 1)[0]
        q = df[(df.method == er.STREAM_Q) & (df.env_id == e)].sort_values("seed")
        want = [
            window_mean(x.episode_returns, x.episode_lengths, start, DQN_STEPS)
            for x in q.itertuples()
        ]
        got = r.estimates[f"{er.STREAM_Q} · {env}"]
        assert np.allclose(sorted(got.values), sorted(want))  # the DQN's window, not its own
        assert abs(got.iqm - EARLY_Q) < 0.5 and q.late_return.min() > LATE_Q - 1
        dqn = df[(df.method == er.DQN_REPLAY) & (df.env_id == e)]
        assert np.allclose(
            sorted(r.estimates[f"{er.DQN_REPLAY} · {env}"].values), sorted(dqn.late_return)
        )
    # at equal steps stream Q(λ) is level with DQN (its own late window would be 10x above)
    assert all(abs(o.judgement.difference.iqm - (EARLY_Q - DQN)) < 0.5 for o in r.outcomes)
    assert r.used.amount == DQN_STEPS and r.coverage == DQN_STEPS / 5_000_000
    assert r.decision.reason == "budget"  # 0.04% of the paper's 5M: the budget narrows it
    window = f"env steps ({start:,}, {DQN_STEPS:,}]"
    assert window in r.budget and "DQN with replay 2000 steps (0.04% of the paper's 5M)" in r.budget
    said = [d for d in r.deviations if "equal env steps" in d]
    assert len(said) == 1 and window in said[0] and "0.04% of the paper's 5M" in said[0]
    assert window in r.claim.metric
    # its trend: both arms at the quarters of the DQN's run
    assert r.trend_note and all(t.points for t in r.trends)


def test_er7_keeps_both_arms_own_late_window(judged):
    c, runs, r, _ = judged
    df = runs["stream"]
    for e in c.stream.env_ids:
        env = e.split("/")[-1].rsplit("-v", 1)[0]
        for m in (er.STREAM_Q, er.DQN1):
            at = df[(df.method == m) & (df.env_id == e)]
            assert np.allclose(sorted(r.estimates[f"{m} · {env}"].values), sorted(at.late_return))
    assert r.used.amount == TOTAL and "equal env steps" not in " ".join(r.deviations)


def test_er8_refuses_dqn_rows_of_another_budget(judged):
    c, runs, _, _ = judged
    other = c.model_copy(update={"stream": c.stream.model_copy(update={"dqn_timesteps": 3_000})})
    with pytest.raises(ValueError, match="DQN with replay's rows ran"):
        er.er_8(other, runs)


@pytest.mark.parametrize("profile", PROFILES)
def test_each_profile_says_what_window_er8_compares(profile):
    """smoke and paper run the replay DQN as long as stream Q(λ) (the window is both arms'
    own last one); the default runs it 20% of the paper's 5M."""
    st = load_family("experience_replay", profile).stream
    start = int((1 - st.late_fraction) * st.dqn_timesteps)
    budget, deviation = er._equal_steps(st, start)
    assert f"({start:,}, {st.dqn_timesteps:,}]" in budget and "equal env steps" in deviation
    if profile in ("smoke", "paper"):
        assert st.dqn_timesteps == st.total_timesteps and "ER-7" not in deviation
    else:
        assert st.dqn_timesteps == 1_000_000 < st.total_timesteps
        assert "20% of the paper's 5M" in budget and "20% of the paper's 5M" in deviation
        assert "(800,000, 1,000,000]" in budget
