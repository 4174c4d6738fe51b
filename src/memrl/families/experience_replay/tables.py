"""The experience-replay family's stored runs as one table per claim, and the CSVs
``dvc plots`` draws."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from memrl.families import Plot
from memrl.families.experience_replay.params import RAE_CONDITIONS, ExperienceReplayParams, q_label
from memrl.stats.floors import FLOOR
from memrl.stats.points import iqm_curves, iqm_points, wide

KINDS = ("q_replay", "cliffwalk", "per_dqn", "her", "rae", "stream")
PLOTS = (
    Plot(
        "q_replay.csv",
        "step",
        ("no replay", "fewest replays", "most replays", FLOOR),
        "Q-learning + replay: error to Q* (IQM over seeds)",
        "environment steps",
        "max |Q - Q*|",
    ),
    Plot(
        "cliffwalk.csv",
        "n_states",
        ("oracle", "prioritized", "uniform"),
        "Blind Cliffwalk: updates until learnt (IQM over seeds)",
        "states n (2^n transitions)",
        "updates until learnt",
    ),
    Plot(
        "per_dqn.csv",
        "step",
        ("DQN", "DQN+PER", FLOOR),
        "DQN vs DQN+PER: training return",
        "environment steps",
        "training return (IQM over seeds)",
    ),
    Plot(
        "her.csv",
        "n_bits",
        ("DQN", "DQN+HER"),
        "Bit flipping: success rate (IQM over seeds)",
        "bits",
        "success rate (greedy)",
    ),
    Plot(
        "rae.csv",
        "step",
        (*RAE_CONDITIONS, FLOOR),
        "Replay across Experiments: training return",
        "environment steps",
        "training return (IQM over seeds)",
    ),
)


def load(results: Sequence[dict[str, Any]]) -> dict[str, pd.DataFrame]:
    """One table per claim's experiment (``KINDS``), one row per run."""
    out = {}
    for kind in KINDS:
        rows = [r for r in results if r["kind"] == kind]
        out[kind] = pd.DataFrame(rows).drop(columns="kind", errors="ignore")
    return out


def from_records(cfg: ExperienceReplayParams, results: Sequence[dict[str, Any]]) -> dict:
    """:func:`load` (the claims' tables; ``cfg`` for the families' common signature)."""
    return load(results)


def sweeps(results: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """The figures' long tables: per line and point, the IQM over seeds with its 95% CI.

    ``q_replay``, ``per_dqn``, ``rae``: learning curves (``step``); ``q_final``: the
    chain's final error against replays per event (lines: ``replay_every``; the no-replay
    runs as one point at ``replay_count`` 0); ``cliffwalk``: updates until learnt against
    ``n_states`` (with each size's ``memory_size``); ``her``: success against ``n_bits``.
    """
    q = results["q_replay"]
    cw = results["cliffwalk"]
    sizes = cw.drop_duplicates("n_states").set_index("n_states").memory_size
    return {
        "q_replay": iqm_curves(q.rename(columns={"steps": "grid", "error": "curve"}), ("config",)),
        "q_final": iqm_points(q, "replay_every", "replay_count", "final_error"),
        "cliffwalk": iqm_points(cw, "method", "n_states", "updates").assign(
            memory_size=lambda d: d.n_states.map(sizes)
        ),
        "per_dqn": iqm_curves(results["per_dqn"], ("method",)),
        "her": iqm_points(results["her"], "method", "n_bits", "success"),
        "rae": iqm_curves(results["rae"], ("condition",)),
        "stream": iqm_curves(results["stream"], ("env", "method"))
        if len(results.get("stream", ()))
        else pd.DataFrame(),
    }


def plot_data(
    cfg: ExperienceReplayParams, sweeps: dict[str, pd.DataFrame]
) -> dict[str, pd.DataFrame]:
    """Wide per-claim tables for ``dvc plots`` (see :data:`PLOTS`): ``x``, one IQM column per
    declared line, then their 95% CIs, from :func:`sweeps`."""
    ks = [k for k in cfg.q_replay.replay_counts if k > 0]
    f = min(cfg.q_replay.replay_every)
    q_labels = {"no replay": "no replay"}
    if ks:
        q_labels[q_label(min(ks), f)] = "fewest replays"
        q_labels[q_label(max(ks), f)] = "most replays"
    q = sweeps["q_replay"]
    q = q[q.config.isin(q_labels)].assign(config=lambda d: d.config.map(q_labels))
    plots = {p.file: p for p in PLOTS}

    def table(name: str, df: pd.DataFrame, by: str) -> pd.DataFrame:
        return wide(df, plots[name].x, plots[name].y, by=by)

    return {
        "q_replay.csv": table("q_replay.csv", q, "config"),
        "cliffwalk.csv": table("cliffwalk.csv", sweeps["cliffwalk"], "method"),
        "per_dqn.csv": table("per_dqn.csv", sweeps["per_dqn"], "method"),
        "her.csv": table("her.csv", sweeps["her"], "method"),
        "rae.csv": table("rae.csv", sweeps["rae"], "condition"),
    }
