"""What a profile's design can decide, checked before its jobs run.

A comparison that no outcome could decide at 95% (3 seeds against 3 reach p = 1/20, 5 seeds
against a constant 1/32: :func:`memrl.stats.design.decidable`) is named *design* by the
verdict after the runs. That is too late: the compute is spent. So before a family's jobs run
for a profile meant to decide (not ``smoke``, whose two seeds test the wiring), its claims
are built on **phantom runs**, and every comparison whose design cannot decide is an error
that names it and the seeds per arm that could.

Phantom runs have the grid's shape and nothing new in them: each job's stored result (the
profile's own run store), or, for a job not run yet, the stored result of another job of
its group (the same label but the seed or run, e.g. another seed of RSAC-LSTM · Pendulum-V)
with the seed set to the job's. Only the seeds and items enter the design, so a copy's
values do not matter. A job group with no stored run at all (a new env, method or task)
gives no shape to copy: that family is not checked, and the check says so.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Sequence
from typing import Any

from memrl.config import ConfigError
from memrl.families import Family, load_family
from memrl.runs import RunStore, job_group
from memrl.stats.claims import ClaimResult
from memrl.stats.compare import threshold_of
from memrl.stats.design import decidable, seeds_for_design
from memrl.stats.floors import split

DECIDING = ("default", "paper")  # profiles whose verdicts decide (smoke's 2 seeds cannot)
SEED_FIELDS = ("seed", "run")  # what tells a group's jobs apart, in kwargs and results


class DesignError(ConfigError):
    """Some comparison of the profile cannot be decided at its seeds, whatever they score."""


def phantom_records(specs: Sequence[Any], store: RunStore) -> tuple[list[dict], list[str]]:
    """(one result per job of ``specs``, as above; the job groups with no stored run)."""
    stored: dict[str, dict] = {}
    for key in sorted(store.keys()):
        try:
            stored[key] = json.loads((store.root / f"{key}.json").read_text())
        except (OSError, ValueError):  # lost or half-written: no shape to copy
            continue
    by_group: dict[tuple[str, str], dict] = {}
    for rec in stored.values():
        by_group.setdefault((rec["spec"]["fn"], job_group(rec["spec"]["label"])), rec["result"])
    out, missing = [], []
    for s in specs:
        group = job_group(s.label)
        result = stored[s.key]["result"] if s.key in stored else by_group.get((s.fn, group))
        if result is None:
            missing.append(group)
            continue
        seed = {k: s.kwargs[k] for k in SEED_FIELDS if k in s.kwargs and k in result}
        out.append({**result, **seed})
    return out, sorted(set(missing))


def undecidable(result: ClaimResult) -> list[str]:
    """Each of the claim's comparisons that no outcome of its design could decide (judged
    against what :meth:`ClaimResult.against` gives), with the seeds per arm that could."""
    est, higher, out = result.estimates, result.claim.higher_is_better, []
    for c in result.comparisons:
        worse, threshold = result.against(c), threshold_of(c.relation, result.margin(c))
        if not decidable(est[c.better], worse, threshold, higher):
            need = seeds_for_design(est[c.better], worse, threshold=threshold)
            text = c.text(result.claim.paper_effect)
            out.append(f"{result.claim.claim_id}: {text} (~{need} seeds per arm could)")
    return out


def judged(fam: Family, cfg: Any, records: list[dict], paper: Any) -> list[ClaimResult]:
    """The family's claims on ``records`` (floor runs among them), as its notebook builds them."""
    runs, floors = split(records)
    claims = fam.module("claims").claims
    extra = {"paper": paper} if "paper" in inspect.signature(claims).parameters else {}
    return claims(cfg, fam.module("tables").from_records(cfg, runs), floors, **extra)


def faults(fam: Family, cfg: Any, records: list[dict], paper: Any) -> list[str]:
    """:func:`undecidable` over every claim :func:`judged` builds on ``records``."""
    return [f for r in judged(fam, cfg, records, paper) for f in undecidable(r)]


def check(fam: Family, cfg: Any, profile: str, specs: Sequence[Any], store: RunStore) -> str:
    """Raise :class:`DesignError` when a comparison of ``fam``'s claims for ``profile``
    cannot decide at its seeds; else return a line saying what was checked."""
    if profile not in DECIDING:
        return f"{fam.name}: design not checked ({profile}'s seeds test the wiring, not the claims)"
    records, missing = phantom_records(specs, store)
    if missing and not store.keys():  # a fresh clone: the stores are DVC outputs, not in git
        from memrl.runner import pull_command

        return (
            f"{fam.name}: design not checked: no stored runs in {fam.runs_dir(profile)} to take "
            f"the jobs' shapes from; `{pull_command(fam, profile)}` gets the published ones"
            + (" (`python -m memrl design` pulls them itself)" if profile == "default" else "")
        )
    if missing:
        return (
            f"{fam.name}: design not checked before the runs ({len(missing)} job groups have "
            f"no stored run to take their shape from, e.g. {missing[0]}): the verdicts name it"
        )
    paper = cfg if profile == "paper" else load_family(fam.name, "paper")
    found = faults(fam, cfg, records, paper)
    if found:
        raise DesignError(
            f"{fam.name} ({profile}): {len(found)} comparisons cannot decide at these seeds "
            "whatever the runs score; give their arms more seeds in params.yaml:\n  "
            + "\n  ".join(found)
        )
    return f"{fam.name}: every comparison's design can decide at the profile's seeds"
