"""The LLM memory RL family's stored runs as tables (REMEMBERER, AgentFly, Memory-R1),
their curves, and the CSVs ``dvc plots`` draws."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from memrl.families import Plot
from memrl.families.llm_memory_rl.params import LLMMemoryRLParams
from memrl.stats.points import iqm_points, wide

LABELS = {
    "llm": "LLM only",
    "static": "static exemplars",
    "rlem": "RLEM",
    "rlem_no_bootstrap": "RLEM w/o bootstrap",
    "rlem_no_discouraged": "RLEM w/o discouraged",
}
FLY_LABELS = {"none": "no memory", "nonparametric": "non-parametric", "parametric": "parametric"}
MR1_LABELS = {
    "add_only": "add only",
    "heuristic": "Mem0-style heuristic",
    "prompted": "prompted LLM",
    "grpo": "Memory-R1 (GRPO)",
}
READER = "deterministic reader"  # Memory-R1's learnability control (floors.reader_control)
# its policy-class ceiling: the GRPO head trained by cross-entropy on the best operations
SUPERVISED = "the same head supervised on the best operations"
OPS = ("ADD", "NOOP", "UPDATE", "DELETE")  # as memrl.agents.memory_r1.OPS (a test checks)
# the operation each kind of turn calls for, as the dialogue generator annotates it
# (memrl.envs.dialogue; no manager sees the kind)
EXPECTED_OP = {
    "intro": "ADD",
    "change": "UPDATE",
    "retract": "DELETE",
    "repeat": "NOOP",
    "smalltalk": "NOOP",
}

PLOTS = (
    Plot(
        "training_epochs.csv",
        "epoch",
        ("RLEM", "RLEM w/o bootstrap", "RLEM w/o discouraged"),
        "REMEMBERER: training score per epoch (IQM over runs)",
        "epoch",
        "WebShop score (0-1)",
    ),
    Plot(
        "agentfly_iterations.csv",
        "iteration",
        ("no memory", "non-parametric", "parametric", "random search-then-buy (floor)"),
        "AgentFly: best score per task so far, over iterations (IQM over seeds)",
        "iteration",
        "best score so far (0-1)",
    ),
)


class Runs(NamedTuple):
    """One row per (condition, run): REMEMBERER's ``rlem``, AgentFly's ``fly`` and
    Memory-R1's ``mr1`` (a deterministic baseline is its one run, marked ``deterministic``:
    its spread comes from its test questions, never from copies), and the positive
    controls (``controls``: one row per (control, run))."""

    rlem: pd.DataFrame
    fly: pd.DataFrame
    mr1: pd.DataFrame
    controls: pd.DataFrame = pd.DataFrame()


def _in_order(rows: list[dict], conditions) -> pd.DataFrame:
    """Rows as a table ordered by the profile's condition order, then by run."""
    rank = {c: i for i, c in enumerate(conditions)}
    df = pd.DataFrame(sorted(rows, key=lambda r: (rank[r["condition"]], r["run"])))
    return df.drop(columns="paper")


def load(cfg: LLMMemoryRLParams, results: Sequence[dict[str, Any]]) -> Runs:
    """Stored results (:meth:`memrl.runs.RunStore.results`) as :class:`Runs`."""
    rlem = [r for r in results if r.get("paper") == "rememberer"]
    fly = [r for r in results if r.get("paper") == "agentfly"]
    mr1 = []
    for c in cfg.memory_r1.conditions:
        got = [r for r in results if r.get("paper") == "memory_r1" and r["condition"] == c]
        det = len(got) == 1 < cfg.seeds  # a deterministic baseline the grid ran once
        mr1 += [{**r, "deterministic": det} for r in got]
    controls = pd.DataFrame([r for r in results if "control" in r])
    return Runs(
        _in_order(rlem, cfg.rlem.conditions),
        _in_order(fly, cfg.agentfly.conditions),
        _in_order(mr1, cfg.memory_r1.conditions),
        controls,
    )


def from_records(cfg: LLMMemoryRLParams, results: Sequence[dict[str, Any]]) -> Runs:
    """:func:`load` (the families' common signature: the claims' tables from a store's results)."""
    return load(cfg, results)


def test_items(metric: str):
    """A shop run's per-task values of ``test_score`` / ``test_success`` (its items)."""
    key = metric.removeprefix("test_")
    return lambda row: row["test_items"][key]


def task_best(row) -> list[float]:
    """Each task's best score over an AgentFly run's iterations (the items of best_score)."""
    return list(np.max(np.asarray(row["task_scores"], float), axis=0))


def iteration_curves(fly: pd.DataFrame) -> pd.DataFrame:
    """AgentFly per iteration: score, success and their cumulative versions, per run."""
    rows = []
    for _, r in fly.iterrows():
        for i in range(len(r.iter_score)):
            rows.append(
                {
                    "condition": FLY_LABELS[r.condition],
                    "run": r.run,
                    "iteration": i + 1,
                    "score": r.iter_score[i],
                    "success": r.iter_success[i],
                    "best_score": r.best_score[i],
                    "cum_success": r.cum_success[i],
                }
            )
    return pd.DataFrame(rows)


def floor_iterations(
    floors: pd.DataFrame | None, policy: str = "random search-then-buy"
) -> pd.DataFrame:
    """The shop floor's runs per iteration, shaped as :func:`iteration_curves` (condition
    ``"<policy> (floor)"``): what the AgentFly curves are drawn against."""
    if floors is None or not len(floors) or "iter_score" not in floors:
        return pd.DataFrame()
    rows = []
    for _, r in floors[floors.floor == policy].iterrows():
        for i, (s, b) in enumerate(zip(r.iter_score, r.best_score, strict=True)):
            rows.append(
                {
                    "condition": f"{policy} (floor)",
                    "run": r.run,
                    "iteration": i + 1,
                    "score": s,
                    "best_score": b,
                }
            )
    return pd.DataFrame(rows)


def training_curves(df: pd.DataFrame) -> pd.DataFrame:
    """Training success and score per epoch of the RLEM variants: one row per (run, epoch)."""
    rows = []
    for _, r in df[df.train_success.map(len) > 0].iterrows():
        for ep, (s, sc) in enumerate(zip(r.train_success, r.train_score, strict=True)):
            rows.append(
                {
                    "condition": LABELS[r.condition],
                    "run": r.run,
                    "epoch": ep + 1,
                    "success": s,
                    "score": sc,
                }
            )
    return pd.DataFrame(rows)


def memory_r1_ops(mr1: pd.DataFrame) -> pd.DataFrame:
    """How often each manager chose each operation per kind of turn (summed over runs)."""
    rows = []
    for _, r in mr1[~mr1.deterministic | (mr1.run == 0)].iterrows():
        for kind, counts in r.ops_by_kind.items():
            for op, n in counts.items():
                rows.append({"condition": MR1_LABELS[r.condition], "kind": kind, "op": op, "n": n})
    df = pd.DataFrame(rows)
    table = df.groupby(["condition", "kind", "op"], sort=False).n.sum().unstack(fill_value=0)
    return table.reindex(columns=[o for o in OPS if o in table.columns])


def operation_fit(ops: pd.DataFrame) -> pd.Series:
    """Per manager, the share of test turns on which it chose the operation the turn calls
    for (:data:`EXPECTED_OP`); ``ops`` as :func:`memory_r1_ops` returns it."""
    counts = ops.stack()
    counts = counts[counts > 0]
    fit = [EXPECTED_OP.get(kind) == op for _, kind, op in counts.index]
    hits = counts[fit].groupby(level="condition", sort=False).sum()
    total = counts.groupby(level="condition", sort=False).sum()
    return (hits.reindex(total.index, fill_value=0) / total).rename("fit")


def plot_data(curves: pd.DataFrame, iters: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Wide tables for ``dvc plots`` (see :data:`PLOTS`): ``x``, one IQM column per declared
    condition, then their 95% CIs."""
    epochs, fly = PLOTS
    return {
        epochs.file: wide(
            iqm_points(curves, "condition", "epoch", "score"), "epoch", epochs.y, by="condition"
        ),
        fly.file: wide(
            iqm_points(iters, "condition", "iteration", "best_score"),
            "iteration",
            fly.y,
            by="condition",
        ),
    }
