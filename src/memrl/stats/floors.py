"""Floors on the analysis side: split a family's stored records into its runs and its floor
runs (:mod:`memrl.agents.random_policy`), and turn floor runs into arms the claims compare against."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from memrl.stats.bootstrap import Arm, arm

NO_FLOOR_RUNS = "no floor runs in this run store"


def split(records: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], pd.DataFrame]:
    """(the family's runs, its floor runs as a table: one row per floor job)."""
    runs = [r for r in records if "floor" not in r]
    floors = pd.DataFrame([r for r in records if "floor" in r])
    return runs, floors


def name(floor: str, env: str) -> str:
    """The estimate's name of a floor: ``random · Pendulum-V``."""
    return f"{floor} · {env}"


def floor_of(estimates: dict, env: str, floor: str = "random") -> str | None:
    """The name of ``floor`` on ``env`` when a claim's ``estimates`` hold it, else None."""
    return name(floor, env) if name(floor, env) in estimates else None


def floor_arm(
    floors: pd.DataFrame | None,
    claim_id: str,
    env: str,
    value: str | Callable = "score",
    floor: str = "random",
    reps: int = 2000,
    statistic: str = "iqm",
    items: Callable | None = None,
    clusters: Callable | None = None,
    shared: str = "",
) -> dict[str, Arm]:
    """``{name: arm}`` of ``floor`` on ``env`` (``value``: a column, or a function of a row),
    or ``{}`` when the store holds no such floor run. ``items`` (and ``clusters``): functions
    of a row giving the run's per-item values (and their groups); a floor run once
    (deterministic) is one run whose interval comes from its items, never copies."""
    return labelled_arm(
        floors,
        "floor",
        floor,
        env,
        claim_id,
        name(floor, env),
        value,
        reps,
        statistic,
        items,
        clusters,
        shared,
    )


def labelled_arm(
    table: pd.DataFrame | None,
    column: str,
    label: str,
    env: str,
    claim_id: str,
    arm_name: str,
    value: str | Callable = "score",
    reps: int = 2000,
    statistic: str = "iqm",
    items: Callable | None = None,
    clusters: Callable | None = None,
    shared: str = "",
) -> dict[str, Arm]:
    """``{arm_name: arm}`` of the runs in ``table`` whose ``column`` is ``label`` on ``env``
    (a floor, a positive control), or ``{}`` when there are none; ``value``, ``items`` and
    ``clusters`` as :func:`floor_arm`."""
    if table is None or not len(table) or column not in table:
        return {}
    rows = table[(table[column] == label) & (table.env == env)]
    if not len(rows):
        return {}
    vals = list(rows.apply(value, axis=1) if callable(value) else rows[value])
    per_item = [list(items(r)) for _, r in rows.iterrows()] if items else None
    groups = [list(clusters(r)) for _, r in rows.iterrows()] if items and clusters else None
    if len(vals) == 1 and per_item is None:
        raise ValueError(f"{claim_id} · {arm_name}: one run needs its items for an interval")
    return {
        arm_name: arm(
            vals,
            claim_id,
            arm_name,
            reps,
            statistic,
            items=per_item,
            clusters=groups,
            shared=shared,
        )
    }


FLOOR = "floor"  # the column of a floor in the dvc plots tables


def env_floor(
    floors: pd.DataFrame | None,
    env: str,
    value: str | Callable = "score",
    floor: str = "random",
    items: Callable | None = None,
) -> Arm | None:
    """The arm of ``floor`` on ``env`` for a figure or a plot table (None without floor runs;
    ``items``: as :func:`floor_arm`, needed by a floor run once)."""
    return next(iter(floor_arm(floors, "figures", env, value, floor, items=items).values()), None)


def with_floor(table: pd.DataFrame, floor: Arm | None, name: str = FLOOR) -> pd.DataFrame:
    """A ``dvc plots`` table with the floor as one more line (constant, with its CI band)."""
    if floor is None:
        return table
    return table.assign(
        **{name: floor.iqm, f"{name} ci_low": floor.ci_low, f"{name} ci_high": floor.ci_high}
    )
