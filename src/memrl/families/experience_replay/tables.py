"""The experience-replay family's stored runs as one table per claim, and the CSVs
``dvc plots`` draws."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from memrl.families import Plot
from memrl.families.experience_replay.params import RAE_CONDITIONS, ExperienceReplayParams, q_label
from memrl.stats.aggregate import iqm

KINDS = ("q_replay", "cliffwalk", "per_dqn", "her", "rae")
PLOTS = (
    Plot("q_replay.csv", "step", ("no replay", "fewest replays", "most replays"),
         "Q-learning + replay: error to Q* (IQM over seeds)", "environment steps",
         "max |Q - Q*|"),
    Plot("cliffwalk.csv", "n_states", ("oracle", "prioritized", "uniform"),
         "Blind Cliffwalk: median updates until learnt", "states n (2^n transitions)",
         "updates until learnt (median)"),
    Plot("per_dqn.csv", "step", ("DQN", "DQN+PER"), "DQN vs DQN+PER: training return",
         "environment steps", "training return (IQM over seeds)"),
    Plot("her.csv", "n_bits", ("DQN", "DQN+HER"), "Bit flipping: success rate", "bits",
         "success rate (greedy)"),
    Plot("rae.csv", "step", RAE_CONDITIONS, "Replay across Experiments: training return",
         "environment steps", "training return (IQM over seeds)"),
)  # fmt: skip


def load(results: Sequence[dict[str, Any]]) -> dict[str, pd.DataFrame]:
    """One table per claim's experiment (``KINDS``), one row per run."""
    out = {}
    for kind in KINDS:
        rows = [r for r in results if r["kind"] == kind]
        out[kind] = pd.DataFrame(rows).drop(columns="kind")
    return out


def _iqm_over_seeds(
    df: pd.DataFrame, key: str, x: str, y: str, labels: dict[str, str]
) -> pd.DataFrame:
    """Wide table: ``x`` then one column per label, each the IQM over seeds of ``y``."""
    cols = {}
    for name, label in labels.items():
        runs = df[df[key] == name]
        cols[label] = iqm(np.array(runs[y].tolist(), dtype=float))
    return pd.DataFrame({x: df[x].iloc[0], **cols})


def plot_data(
    cfg: ExperienceReplayParams, results: dict[str, pd.DataFrame]
) -> dict[str, pd.DataFrame]:
    """Wide per-claim tables with fixed column names, for ``dvc plots`` (see :data:`PLOTS`)."""
    q = results["q_replay"]
    ks = [k for k in cfg.q_replay.replay_counts if k > 0]
    f = min(cfg.q_replay.replay_every)
    q_labels = {"no replay": "no replay"}
    if ks:
        q_labels[q_label(min(ks), f)] = "fewest replays"
        q_labels[q_label(max(ks), f)] = "most replays"
    cw = results["cliffwalk"].groupby(["n_states", "method"]).updates.median().unstack()
    her = results["her"].groupby(["n_bits", "method"]).success.mean().unstack()
    return {
        "q_replay.csv": _iqm_over_seeds(q, "config", "steps", "error", q_labels).rename(
            columns={"steps": "step"}
        ),
        "cliffwalk.csv": cw.reset_index()[["n_states", "oracle", "prioritized", "uniform"]],
        "per_dqn.csv": _iqm_over_seeds(
            results["per_dqn"], "method", "grid", "curve", {"DQN": "DQN", "DQN+PER": "DQN+PER"}
        ).rename(columns={"grid": "step"}),
        "her.csv": her.reset_index()[["n_bits", "DQN", "DQN+HER"]],
        "rae.csv": _iqm_over_seeds(
            results["rae"], "condition", "grid", "curve", {c: c for c in RAE_CONDITIONS}
        ).rename(columns={"grid": "step"}),
    }
