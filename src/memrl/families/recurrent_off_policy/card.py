"""The memory card: what each memory core can remember (Cherepanov et al. 2024's method).

Every core is trained the same way (behaviour cloning of oracle Passive T-Maze trajectories,
:mod:`memrl.agents.cloning`) with one ``K``, then scored at correlation horizons ``xi``
(corridor lengths) below and past ``K``. What ``K`` is depends on the core (``K_kind``,
:data:`memrl.agents.offline_policies.K_KIND`): the span a transformer or window attends to
(``context``), the span truncated backpropagation lets a recurrent core's gradients reach
(``truncation``), or nothing (``none``: RTRL). Its class follows from the runs by a declared
rule, never typed in, on the horizons inside the training corridors only:

- a core **remembers** at ``xi`` when its success IQM over seeds is at least
  :data:`REMEMBERS` and the 95% CI's lower end (seeds, and episodes within seeds) clears
  chance (0.5) by :data:`MARGIN`;
- **fails at xi <= K**: it does not remember at some ``xi <= K`` (its context alone should do);
- **long-term**: it remembers at every ``xi <= K`` and at ``xi > K`` too; its *reach* is the
  largest ``xi / K`` up to which it remembers at every tested horizon;
- **short-term**: it remembers at every ``xi <= K`` and at no ``xi > K``.

Horizons past the longest training corridor measure length extrapolation, not memory: their
rows say ``in_training_range: false`` and each class entry lists them apart
(``extrapolation``). Nothing here trains; :func:`card` reads stored runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from memrl.memory.cores import CORES
from memrl.stats.bootstrap import arm

REMEMBERS = 0.9  # success IQM at which a core counts as recalling the cue
CHANCE = 0.5  # a fixed turn succeeds on half of the mazes
# how far above chance the CI's lower end must lie: declared, not measured (a tenth of the
# way from a coin to the cue: with 50 episodes per seed, one near-chance seed cannot pass)
MARGIN = 0.1
LONG, SHORT, FAILS = "long-term", "short-term", "fails at xi <= K"
# the timing job's names of the cores the card classifies (DT and RATE are not timed)
TIMED = {kind: entry.timed for kind, entry in CORES.items()}


def remembers(iqm: float, ci_low: float) -> bool:
    return iqm >= REMEMBERS and ci_low > CHANCE + MARGIN


def classify(points: dict[int, tuple[float, float]], K: int) -> tuple[str, float]:
    """The class of one core and its reach (largest ``xi / K`` remembered at every tested
    horizon up to it; 0 when it fails at the shortest) from ``{xi: (iqm, ci_low)}``."""
    ok = {xi: remembers(*points[xi]) for xi in sorted(points)}
    reach = 0.0
    for xi, hit in ok.items():
        if not hit:
            break
        reach = xi / K
    if not all(hit for xi, hit in ok.items() if xi <= K):
        return FAILS, reach
    return (LONG if any(hit for xi, hit in ok.items() if xi > K) else SHORT), reach


def card(results: Sequence[dict[str, Any]], reps: int, timing: Any = None) -> dict[str, Any]:
    """The card from the stored card runs (one per core and seed, each with its success at
    every ``xi``, per episode where it kept them): rows (core, K, K_kind, xi, in or past the
    training corridors, success IQM with its CI over seeds and episodes) and one class per
    core from the rows in the training range, with its extrapolation apart and its costs
    (parameters; seconds per training run, median over seeds; with ``timing``, the timing
    job's median ms of a training step), as ``results/<profile>/memory_card.json`` holds
    them."""
    ms = timing.groupby("core").ms.median() if timing is not None and len(timing) else {}
    by_core: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        by_core.setdefault(r["core"], []).append(r)
    rows, classes = [], []
    for core, runs in by_core.items():
        K, kind_of_k = runs[0]["K"], runs[0].get("K_kind", "context")
        trained = runs[0].get("trained_up_to")  # the longest training corridor
        points, beyond = {}, {}
        for xi in sorted({int(x) for r in runs for x in r["success"]}):
            vals = [r["success"][str(xi)] for r in runs]
            items = [r["episodes"][str(xi)] for r in runs] if "episodes" in runs[0] else None
            a = arm(None if items else vals, "memory card", f"{core} · xi={xi}", reps, items=items)
            inside = trained is None or xi <= trained
            rows.append(
                {
                    "core": core,
                    "K": K,
                    "K_kind": kind_of_k,
                    "xi": xi,
                    "xi_over_K": xi / K,
                    "in_training_range": inside,
                    "iqm": a.iqm,
                    "ci_low": a.ci_low,
                    "ci_high": a.ci_high,
                    "n_seeds": len(vals),
                }
            )
            if inside:
                points[xi] = (a.iqm, a.ci_low)
            else:
                beyond[str(xi)] = {"remembers": remembers(a.iqm, a.ci_low), "iqm": a.iqm}
        kind, reach = classify(points, K)
        seconds = [r["seconds"] for r in runs if isinstance(r.get("seconds"), int | float)]
        classes.append(
            {
                "core": core,
                "K": K,
                "K_kind": kind_of_k,
                "class": kind,
                "reach_xi_over_K": reach,
                "extrapolation": beyond,
                "final_loss": float(np.mean([r["losses"][-1] for r in runs])),
                "params": runs[0].get("params"),
                "seconds_per_run": round(float(np.median(seconds)), 1) if seconds else None,
                "ms_per_step": (
                    round(float(ms[TIMED[core]]), 1) if TIMED.get(core) in ms else None
                ),
            }
        )
    out = {
        "rule": f"remembers at xi: success >= {REMEMBERS} and CI low > {CHANCE} + {MARGIN} "
        f"(CI over seeds and episodes); {LONG}: remembers at every xi <= K and beyond K; "
        f"{SHORT}: at every xi <= K only; {FAILS}: not at some xi <= K; classes on the "
        "horizons inside the training corridors, the others are extrapolation",
        "rows": rows,
        "classes": classes,
    }
    return out | {"section": section(out)} if rows else out


FIGURE = "recurrent_off_policy/figures/memory_card.png"  # under the profile's results


def section(memory_card: dict[str, Any]) -> dict[str, Any]:
    """The card as a section the report and the site render as they find it (they import no
    family code): its title, a paragraph, the table of :func:`summary` and its figure."""
    head, body = summary(memory_card)
    return {
        "id": "memory-card",
        "title": "The memory card: what each core remembers",
        "text": "Every model trained by behaviour cloning of oracle Passive T-Maze runs with "
        "one K (what K is for each: its context, its gradients' truncation, or none), scored "
        "at correlation horizons ξ; success IQM [95% CI] over seeds and episodes. "
        f"Rule: {memory_card['rule']}.",
        "head": head,
        "body": body,
        "figure": FIGURE,
        "figure_alt": "success against xi / K for every core",
        "caption": "Success against ξ / K, one panel per kind of K (context, truncation, "
        "none): IQM over seeds with its 95% CI; chance 0.5, ξ = K dashed, horizons past the "
        "training corridors (extrapolation) shaded.",
    }


def summary(memory_card: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The card as a header and rows of text (the report's and the site's table): each
    core's success IQM [95% CI] at every xi, its class and reach, and its costs."""
    rows = memory_card.get("rows", [])
    horizons = sorted({r["xi"] for r in rows})
    K = rows[0]["K"] if rows else 0
    past = {r["xi"] for r in rows if not r.get("in_training_range", True)}

    def name(xi: int) -> str:
        return f"ξ={xi}" + (" (K)" if xi == K else "") + (" (extrapolation)" if xi in past else "")

    head = ["core", "K is", *(name(xi) for xi in horizons)]
    head += ["class", "reach (ξ/K)", "parameters", "s per run", "ms per training step"]
    cells = {
        (r["core"], r["xi"]): f"{r['iqm']:.2f} [{r['ci_low']:.2f}, {r['ci_high']:.2f}]"
        for r in rows
    }
    body = [
        [
            c["core"],
            c.get("K_kind", "context"),
            *(cells.get((c["core"], xi), "—") for xi in horizons),
            c["class"],
            f"{c['reach_xi_over_K']:g}",
            f"{c['params']:,}" if c.get("params") else "—",
            f"{c['seconds_per_run']:g}" if c.get("seconds_per_run") else "—",
            f"{c['ms_per_step']:g}" if c.get("ms_per_step") else "not timed",
        ]
        for c in memory_card.get("classes", [])
    ]
    return head, body


def table(memory_card: dict[str, Any]) -> Any:
    """:func:`summary` as a DataFrame indexed by core (the notebook's table)."""
    import pandas as pd

    head, body = summary(memory_card)
    return pd.DataFrame(body, columns=head).set_index("core")
