"""IQM over seeds with its 95% CI at every point of a sweep (bits, memory sizes, epochs...).

The families' plots beside the claims draw the same estimator the claims use
(:func:`~memrl.stats.aggregate.iqm_ci`, rliable's stratified bootstrap), so a figure's
error bar and a report row's interval mean the same thing. :func:`iqm_points` takes a
*long* table, one row per run and point; :func:`iqm_curves` learning curves stored as one
list per run; :func:`wide` turns either into the table ``dvc plots`` reads.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from memrl.stats.aggregate import iqm_ci, stable_seed

COLUMNS = ("iqm", "ci_low", "ci_high", "n")


def iqm_points(
    df: pd.DataFrame, by: str | Sequence[str], x: str, y: str, reps: int = 500
) -> pd.DataFrame:
    """Per line (``by``) and value of ``x``: the IQM of ``y`` over the rows with its 95% CI.

    :param df: one row per run (seed) and point, with the columns ``by``, ``x`` and ``y``.
    :param by: the column(s) naming a line (a method, a condition); lines keep the order
        they first appear in, points are sorted by ``x``.
    :param x: the sweep's column.
    :param y: the per-run value; every value must be finite.
    :param reps: bootstrap resamples per point (the curves' 500: a band, not a verdict;
        each point's bootstrap is seeded by its names, so figures are reproducible).
    :return: columns ``*by, x, iqm, ci_low, ci_high, n``. A point with one run has no
        interval: its bounds are NaN.
    """
    by = [by] if isinstance(by, str) else list(by)
    missing = [c for c in (*by, x, y) if c not in df.columns]
    if missing:
        raise KeyError(f"no column {missing} in the table (it has {list(df.columns)})")
    rows = []
    for line, g in df.groupby(by, sort=False):
        line = line if isinstance(line, tuple) else (line,)
        for at, p in g.groupby(x, sort=True):
            values = p[y].to_numpy(dtype=np.float64)
            names = dict(zip([*by, x], (*line, at), strict=True))
            if not np.all(np.isfinite(values)):
                raise ValueError(f"non-finite {y} at {names}: {values.tolist()}")
            if len(values) == 1:
                est = {"iqm": float(values[0]), "ci_low": np.nan, "ci_high": np.nan, "n": 1}
            else:
                seed = stable_seed("points", y, *map(str, names.values()))
                est = iqm_ci(values, reps=reps, seed=seed).as_dict()
            rows.append({**names, **est})
    return pd.DataFrame(rows, columns=[*by, x, *COLUMNS])


def iqm_curves(
    runs: pd.DataFrame, by: Sequence[str] = ("env", "method"), reps: int = 500
) -> pd.DataFrame:
    """Learning curves over seeds: per ``by`` group and grid step, the IQM with a 95% CI
    (:func:`iqm_points` on the curves as a long table).

    ``runs`` has one row per seed with a ``curve`` (values on ``grid``) and its ``grid``.
    Steps where some seed has not finished an episode yet (NaN) are left out.
    """
    by = list(by)
    long = runs[[*by, "grid", "curve"]].explode(["grid", "curve"])
    long = long.rename(columns={"grid": "step", "curve": "value"}).astype({"value": float})
    done = long.groupby([*by, "step"], sort=False)["value"].transform(lambda v: v.notna().all())
    return iqm_points(long[done], by, "step", "value", reps).drop(columns="n")


CI_COLUMNS = ("ci_low", "ci_high")  # "<method> ci_low" beside a method's column: its band


def wide(curves: pd.DataFrame, x: str, methods: Sequence[str], by: str = "method") -> pd.DataFrame:
    """A long table (``x``, ``by``, iqm, ci_low, ci_high) as ``dvc plots`` reads it: ``x``,
    one IQM column per method of ``methods`` present (in that order), then each one's 95% CI
    as ``"<method> ci_low"`` and ``"<method> ci_high"`` (the band of ``.dvc/plots/memrl_lines.json``)."""
    present = [m for m in methods if m in set(curves[by])]
    out = curves.pivot(index=x, columns=by, values="iqm")[present]
    for c in CI_COLUMNS:
        out = out.join(curves.pivot(index=x, columns=by, values=c)[present].add_suffix(f" {c}"))
    return out.reset_index()
