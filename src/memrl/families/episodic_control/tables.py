"""The episodic-control family's stored runs as tables, and the CSVs ``dvc plots`` draws."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from memrl.envs.registry import short_env
from memrl.families import Plot
from memrl.stats.floors import FLOOR
from memrl.stats.points import wide

PLOTS = tuple(
    Plot(
        f"{env}.csv",
        "step",
        (*methods, FLOOR),
        f"Episodic control on {where}: training return (IQM over seeds)",
        "environment steps",
        "training return (mean of recent episodes)",
    )
    for env, methods, where in [
        ("Breakout", ("DQN", "MFEC", "NEC"), "MinAtar Breakout"),
        ("SpaceInvaders", ("DQN", "MFEC"), "MinAtar Space Invaders"),
        ("CartPole", ("DQN", "MFEC", "NEC"), "CartPole"),
    ]
)


def load(results: Sequence[dict[str, Any]], env_order: Sequence[str]) -> pd.DataFrame:
    """One row per (env, method incl. aggregation radius, seed), ordered by ``env_order``
    (the profile's), method and seed. Fails when a run ended no episode in the early or
    late window (the claims' scores would be undefined)."""
    df = pd.DataFrame(list(results))
    bad = df[df[["early_return", "late_return"]].isna().any(axis=1)]
    if len(bad):
        raise RuntimeError(
            "no episode ended in the early or late window of: "
            + ", ".join(sorted(set(bad.env + " " + bad.method)))
            + " — raise total_timesteps or early_fraction in params.yaml"
        )
    order = {e: i for i, e in enumerate(env_order)}
    df = df.assign(_o=df.env.map(order)).sort_values(["_o", "method", "seed"], kind="stable")
    return df.drop(columns="_o").reset_index(drop=True)


def from_records(cfg: Any, results: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """:func:`load` in the profile's env order (what the claims take)."""
    return load(results, [short_env(e.env_id) for e in cfg.envs])


def plot_data(curve_df: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Wide per-env tables (step, one IQM column per declared method, then their 95% CIs)
    for ``dvc plots`` (see :data:`PLOTS`)."""
    methods = {p.file: p.y for p in PLOTS}  # an env params.yaml adds: every method it ran
    return {
        f"{env}.csv": wide(g, "step", methods.get(f"{env}.csv", ("DQN", "MFEC", "NEC")))
        for env, g in curve_df.groupby("env", sort=False)
    }
