"""The recurrent off-policy family's stored runs as tables: runs, curves, T-Maze success,
the FFM timing, and the CSVs ``dvc plots`` draws."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import pandas as pd

from memrl.envs.registry import short_env
from memrl.families import Plot
from memrl.stats.aggregate import estimate
from memrl.stats.floors import FLOOR
from memrl.stats.points import wide

STEPS, RETURN = "environment steps", "training return (last 10 episodes)"
PLOTS = (
    Plot(
        "Pendulum-V.csv",
        "step",
        ("SAC", "SAC-prev", "RSAC-LSTM", "RTD3-LSTM", "RSAC-LSTM-shared", FLOOR),
        "Pendulum-V (velocities only): training return (IQM over seeds)",
        STEPS,
        RETURN,
    ),
    Plot(
        "Pendulum-P.csv",
        "step",
        ("SAC", "SAC-prev", "RSAC-LSTM", FLOOR),
        "Pendulum-P (positions only): training return (IQM over seeds)",
        STEPS,
        RETURN,
    ),
    Plot(
        "CartPole-P.csv",
        "step",
        ("PPO-LSTM", FLOOR),
        "CartPole-P (positions only): LSTM-PPO training return (IQM over seeds)",
        STEPS,
        RETURN,
    ),
    *(  # POPGym's own envs: PPO with each core (issue 72)
        Plot(
            f"{task}.csv",
            "step",
            ("PPO-GRU", "PPO-FFM", "PPO-S5", "PPO-LSTM", FLOOR),
            f"POPGym {task}: PPO training return (IQM over seeds)",
            STEPS,
            RETURN,
        )
        for task in (
            "PositionOnlyCartPoleMedium",
            "RepeatPreviousEasy",
            "RepeatFirstEasy",
            "CountRecallEasy",
        )
    ),
    Plot(
        "tmaze.csv",
        "length",
        ("SACD-GRU", "SACD-window"),
        "Passive T-Maze: success rate against corridor length (IQM over seeds)",
        "corridor length (= correlation horizon)",
        "success rate (greedy)",
    ),
)


class Runs(NamedTuple):
    """Every stored run of the family: ``main`` (one row per env, method and seed), ``tmaze``
    (one per T-Maze length, method and seed), ``timing`` (every memory core, ms per repeat,
    and its parameters), ``card`` (the memory card's runs) and ``truncation`` (RO-11's fair
    test: cloned like the card's, every training corridor longer than K)."""

    main: pd.DataFrame
    tmaze: pd.DataFrame
    timing: pd.DataFrame | None
    card: tuple[dict[str, Any], ...] = ()
    truncation: tuple[dict[str, Any], ...] = ()

    def budgets(self) -> dict[str, int]:
        """Env -> training steps of its runs."""
        return dict(zip(self.main.env, self.main.total_timesteps.astype(int), strict=False))


def load(results: Sequence[dict[str, Any]], env_order: Sequence[str] = ()) -> Runs:
    """Stored results (see :meth:`memrl.runs.RunStore.results`) as :class:`Runs`; rows ordered
    by ``env_order`` (the profile's env order), method and seed."""
    timing = [r for r in results if "ms" in r]
    df = pd.DataFrame([r for r in results if "ms" not in r and "card" not in r])
    order = {e: i for i, e in enumerate(env_order)}
    df = df.assign(_o=df.env.map(order).fillna(len(order) + df.length))
    df = df.sort_values(["_o", "method", "seed"], kind="stable").drop(columns="_o")
    df = df.reset_index(drop=True)
    t = None
    if timing:
        params = timing[0].get("params", {})
        t = pd.DataFrame(
            [
                # the device the timing ran on; a record without one ran on the CPU
                # (jobs.core_timing builds its tensors there)
                {
                    "core": c,
                    "repeat": i,
                    "ms": v,
                    "params": params.get(c),
                    "device": timing[0].get("device", "cpu"),
                }
                for c, ms in timing[0]["ms"].items()
                for i, v in enumerate(ms)
            ]
        )
    card = tuple(r for r in results if "card" in r and r.get("study", "card") == "card")
    truncation = tuple(r for r in results if r.get("study") == "truncation")
    return Runs(df[df.length == 0].reset_index(drop=True), df[df.length > 0], t, card, truncation)


def from_records(cfg: Any, results: Sequence[dict[str, Any]]) -> Runs:
    """:func:`load` in the profile's env order (what the claims take)."""
    return load(results, [short_env(e.env_id) for e in cfg.envs])


def tmaze_success(runs: Runs, reps: int) -> pd.DataFrame:
    """Success rate against T-Maze length per method: IQM over seeds with a 95% CI."""
    rows = []
    for (m, L), g in runs.tmaze.groupby(["method", "length"]):
        e = estimate(g.success, "tmaze", f"{m} · L={L}", reps)
        rows.append(
            {"method": m, "length": L, "iqm": e.iqm, "ci_low": e.ci_low, "ci_high": e.ci_high}
        )
    return pd.DataFrame(rows)


def plot_data(curve_df: pd.DataFrame, success_df: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Wide tables for ``dvc plots`` (see :data:`PLOTS`): per env (step, one IQM column per
    method) and T-Maze success (length, one column per method), each with its 95% CI."""
    plots = {p.file: p for p in PLOTS}
    out = {}
    for env, g in curve_df.groupby("env", sort=False):
        methods = plots[f"{env}.csv"].y if f"{env}.csv" in plots else sorted(set(g.method))
        out[f"{env}.csv"] = wide(g, "step", methods)
    if len(success_df):
        out["tmaze.csv"] = wide(success_df, "length", plots["tmaze.csv"].y)
    return out


def truncation_table(runs: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """RO-11's fair test: one row per (arm, xi) with the seeds' mean success, their lowest
    and highest, and the seeds."""
    rows = [
        {"arm": r["arm"], "xi": int(xi), "seed": r["seed"], "success": v}
        for r in runs
        for xi, v in r["success"].items()
    ]
    if not rows:
        return pd.DataFrame(columns=["arm", "xi", "mean", "min", "max", "seeds"])
    g = pd.DataFrame(rows).groupby(["arm", "xi"], sort=False).success
    out = g.agg(["mean", "min", "max", "count"]).rename(columns={"count": "seeds"})
    return out.reset_index()
