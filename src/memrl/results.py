"""Where a family's outputs go, and how they are written (atomically, never half)."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import textwrap
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from memrl.runtime import atomic_path, atomic_write_json, repo_root
from memrl.stats.claims import ClaimResult, comparison_text, seeds_text, share

# for `dvc metrics`: an inconclusive verdict is no score (null), not a low one; the scale is
# symmetric around "mixed", as the verdicts are
VERDICT_SCORE = {
    "reproduced": 1.0,
    "partially": 0.75,
    "mixed": 0.5,
    "inconclusive": None,
    "partially contradicted": 0.25,
    "not reproduced": 0.0,
}


def verdict_score(category: str) -> float | None:
    """A verdict's category as a number for ``dvc metrics`` (None: inconclusive)."""
    return VERDICT_SCORE[category]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def output_dir(path: str) -> Path:
    """``path`` relative to the repo root, or a fresh scratch folder when empty.

    A notebook run by hand or under nbval writes to scratch, so it can never
    overwrite the outputs DVC tracks under ``results/``. The scratch folder
    (``memrl-<pid>-*``) is removed when the kernel exits; a kernel killed by a signal
    cannot do that, so each new scratch folder first removes those of processes that are
    gone.
    """
    if not path:
        for old in Path(tempfile.gettempdir()).glob("memrl-*-*"):
            pid = old.name.split("-")[1]
            if old.is_dir() and pid.isdigit() and not _alive(int(pid)):
                shutil.rmtree(old, ignore_errors=True)
        scratch = Path(tempfile.mkdtemp(prefix=f"memrl-{os.getpid()}-"))
        atexit.register(shutil.rmtree, scratch, ignore_errors=True)
        return scratch
    out = Path(path)
    out = out if out.is_absolute() else repo_root() / out
    out.mkdir(parents=True, exist_ok=True)
    return out


def save_table(df: pd.DataFrame, path: Path) -> None:
    """A tidy table as CSV, list-valued columns left out."""
    flat = df[[c for c in df.columns if not df[c].map(lambda v: isinstance(v, list)).any()]]
    with atomic_path(path) as tmp:
        flat.to_csv(tmp, index=False)


def save_figure(fig, path: Path) -> None:
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110, bbox_inches="tight")


def save_claims(out: Path, rows: Sequence[ClaimResult]) -> None:
    """``claims.json`` (full rows, read by the report) and ``metrics/`` (see :func:`save_metrics`)."""
    full = [r.to_row() for r in rows]
    atomic_write_json(out / "claims.json", full)
    save_metrics(out / "metrics", full)


def save_metrics(folder: Path, rows: Sequence[dict]) -> None:
    """For ``dvc metrics``: one file per claim (``<claim_id>.json``), all with the same keys,
    so ``dvc metrics show`` prints one dense row per claim: our IQM, its 95% CI, seeds,
    coverage of the paper's budget and the verdict score. ``rows`` are ``claims.json``'s."""
    folder.mkdir(parents=True, exist_ok=True)
    names = {f"{r['claim_id']}.json" for r in rows}
    for stale in folder.glob("*.json"):  # a claim renamed or dropped since the last run here
        if stale.name not in names:
            stale.unlink()
    for r in rows:
        ours = r["estimates"][r["ours_name"]]
        metrics = {k: ours[k] for k in ("iqm", "ci_low", "ci_high")}
        metrics |= {
            "seeds": r["n_seeds"],
            "coverage": r["coverage"],
            "verdict_score": verdict_score(r["category"]),
        }
        atomic_write_json(folder / f"{r['claim_id']}.json", metrics)


def claims_text(rows: Sequence[ClaimResult], digits: int = 3, width: int = 100) -> str:
    """The claims as plain text for the notebook's claims cell, one block per claim that
    reads at ``width`` columns: the verdict, our headline value with its CI, the floor, the
    seeds and the coverage, then each comparison (difference, CI, outcome) on its own lines."""

    def g(x: float) -> str:
        return f"{x:.{digits}g}"

    def wrap(text: str, first: str, rest: str) -> list[str]:
        return textwrap.wrap(text, width, initial_indent=first, subsequent_indent=rest)

    out: list[str] = []
    for r in rows:
        e = r.estimates[r.ours]
        name = next((c.floor for c in r.comparisons if c.floor), None)
        floor = f"{name} {g(r.estimates[name].iqm)}" if name else f"none ({r.floor_reason})"
        out += wrap(f"{r.claim.claim_id}: {r.verdict}", "", "    ")
        head = (
            f"ours: {r.ours} {g(e.iqm)} [{g(e.ci_low)}, {g(e.ci_high)}]; floor: {floor}; "
            f"{seeds_text(r.n_seeds, r.one_run)}; coverage {share(r.coverage)}"
        )
        out += wrap(head, "  ", "    ")
        for o in r.outcomes:
            out += wrap(comparison_text(o.as_dict(), digits), "  - ", "    ")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def budget_table(rows: Sequence[ClaimResult]) -> pd.DataFrame:
    """Per claim: its regime, our budget beside the paper's, coverage, each comparison's
    trend and the verdict (for the notebook's coverage-and-trend cell)."""
    return pd.DataFrame(
        [
            {
                "claim": r.claim.claim_id,
                "regime": r.claim.regime,
                "ours": str(r.used) if r.used else "n/a",
                "paper": str(r.claim.paper_budget) if r.claim.paper_budget else "not retrieved",
                "coverage": share(r.coverage),
                "trend": "; ".join(t.summary() for t in r.trends) or r.trend_note,
                "verdict": r.verdict,
            }
            for r in rows
        ]
    ).set_index("claim")
