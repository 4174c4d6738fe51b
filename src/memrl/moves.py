"""How each verdict moved since the last publication, and what in its inputs changed.

The verdicts a profile last published are kept in ``results/<profile>/previous.json`` (a
snapshot of that ``report.json``, taken when a round starts, before its republish
overwrites it). The report stage compares every claim with it and writes the outcome into
the claim's row of ``report.json`` as ``since_published``::

    {"revision": "f99b9332", "from": "partially contradicted (coverage)",
     "to": "inconclusive (learner)", "moved": true,
     "why": ["reason: coverage -> learner", "seeds: 6 -> 8", ...]}

``why`` lists what differs between the two rows' inputs, computed, never typed: the verdict's
reason and detail, the seeds, the budget and its coverage, the setup as the deviations name
it, the learnability controls and the hardware, and each comparison added, dropped or whose
outcome changed. A verdict *moved* when its category or its reason changed.

    python -m memrl.moves --snapshot REVISION [results/default]   # take the snapshot
    python -m memrl.moves --history [results/default]   # docs/history.md's block from it
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memrl.runtime import atomic_write_json, atomic_write_text
from memrl.stats.learners import PASSED

PREVIOUS = "previous.json"  # results/<profile>/: the verdicts the profile last published
KEPT = ("verdict", "category", "reason", "detail", "n_seeds", "budget", "coverage")


def snapshot(rows: list[dict[str, Any]], revision: str) -> dict[str, Any]:
    """What a comparison with the next report needs of each published claim."""
    claims = {}
    for r in rows:
        claims[r["claim_id"]] = {k: r.get(k) for k in KEPT} | {
            "deviations": list(r.get("deviations") or []),
            "learners": [_learner(x) for x in r.get("learners") or []],
            "hardware": (r.get("hardware") or {}).get("covers"),
            "comparisons": {c["text"]: c["outcome"] for c in r.get("comparisons") or []},
        }
    return {"revision": revision, "claims": claims}


def _learner(x: dict[str, Any]) -> str:
    return f"{x.get('arm', '?')} ({x.get('setting', '?')}): {PASSED[x.get('passed')]}"


def _pct(x: float | None) -> str:
    return "unknown" if x is None else f"{100 * x:.3g}%"


def why(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """What differs between a claim's published inputs (``old``, a snapshot entry) and its
    new ones (``new``, the same shape), one line each."""
    out = []
    for k in ("category", "reason", "detail", "n_seeds", "budget"):
        if old.get(k) != new.get(k):
            label = {"n_seeds": "seeds"}.get(k, k)
            out.append(f"{label}: {old.get(k) or 'none'} -> {new.get(k) or 'none'}")
    if old.get("coverage") != new.get("coverage"):
        out.append(f"coverage: {_pct(old.get('coverage'))} -> {_pct(new.get('coverage'))}")
    gone = [d for d in old.get("deviations", []) if d not in new.get("deviations", [])]
    added = [d for d in new.get("deviations", []) if d not in old.get("deviations", [])]
    if gone or added:
        out.append(f"setup: {len(gone)} deviations dropped, {len(added)} new")
    if old.get("learners") != new.get("learners"):
        before = "; ".join(old.get("learners") or []) or "none"
        out.append(f"learnability controls: {before} -> {'; '.join(new['learners']) or 'none'}")
    if old.get("hardware") != new.get("hardware"):
        out.append(f"covers the paper's hardware: {old.get('hardware')} -> {new.get('hardware')}")
    was, now = old.get("comparisons", {}), new.get("comparisons", {})
    for text, outcome in now.items():
        if text not in was:
            out.append(f"new comparison {text}: {outcome}")
        elif was[text] != outcome:
            out.append(f"{text}: {was[text]} -> {outcome}")
    out += [f"comparison dropped {text} (was {o})" for text, o in was.items() if text not in now]
    return out


def since(rows: list[dict[str, Any]], previous: dict[str, Any] | None) -> dict[str, dict]:
    """Each claim's ``since_published`` entry (none without a snapshot)."""
    if not previous:
        return {}
    now = snapshot(rows, "")["claims"]
    out = {}
    for cid, new in now.items():
        old = previous["claims"].get(cid)
        if old is None:
            moved, reasons = True, ["a new claim"]
        else:
            moved = (old["category"], old["reason"]) != (new["category"], new["reason"])
            reasons = why(old, new)
        out[cid] = {
            "revision": previous["revision"],
            "from": old and short(old),
            "to": short(new),
            "moved": moved,
            "why": reasons,
        }
    return out


def load_previous(results: Path) -> dict[str, Any] | None:
    path = Path(results) / PREVIOUS
    return json.loads(path.read_text()) if path.is_file() else None


def short(entry: dict[str, Any]) -> str:
    """A verdict's category and reason: ``partially contradicted (coverage)``."""
    reason = entry.get("reason")
    return entry["category"] + (f" ({reason})" if reason else "")


def text(s: dict[str, Any] | None) -> str:
    """One line: ``moved since f99b9332: A -> B (reason: ... ; seeds: 6 -> 8)``."""
    if not s:
        return ""
    head = (
        f"moved since {s['revision']}: {s['from']} -> {s['to']}"
        if s["moved"]
        else f"same verdict as at {s['revision']}"
    )
    return head + (f" ({'; '.join(s['why'])})" if s["why"] else " (no input changed)")


# =========================================================================== docs/history.md
HISTORY_START = "<!-- moves: generated from results/default/report.json by `python -m memrl.moves --history`; do not edit -->"  # noqa: E501
HISTORY_END = "<!-- moves: end -->"


def history_block(rows: list[dict[str, Any]]) -> str:
    """A section per claim: from what to what since the last publication, and why."""
    out = []
    for r in rows:
        s = r.get("since_published")
        out.append(f"### {r['claim_id']}\n")
        out.append(f"*{r['statement']}*\n")
        if not s:
            out.append(f"Verdict: {r['verdict']} (no earlier publication to compare with).\n")
            continue
        head = "moved" if s["moved"] else "same verdict"
        was = s["from"] or "none"
        out.append(f"{head.capitalize()} since {s['revision']}: **{was}** -> **{s['to']}**.\n")
        out.append(f"Now: {r['verdict']}.\n")
        if s["why"]:
            out.append("What changed in its inputs:\n\n" + "\n".join(f"- {w}" for w in s["why"]))
            out.append("")
        else:
            out.append("Nothing in its inputs changed.\n")
    return "\n".join(out).rstrip("\n")


def write_history(root: Path, results: Path | None = None) -> Path:
    from memrl.readme import replace_block

    rows = json.loads(((results or root / "results" / "default") / "report.json").read_text())
    path = Path(root) / "docs" / "history.md"
    body = history_block(rows)
    atomic_write_text(
        path, replace_block(path.read_text(), "moves", HISTORY_START, HISTORY_END, body)
    )
    return path


if __name__ == "__main__":
    import sys

    from memrl.runtime import repo_root

    args = sys.argv[1:]
    root = repo_root()
    if args[:1] == ["--snapshot"] and len(args) in (2, 3):
        res = Path(args[2]) if len(args) == 3 else root / "results" / "default"
        rows = json.loads((res / "report.json").read_text())
        atomic_write_json(res / PREVIOUS, snapshot(rows, args[1]))
        print(f"wrote {res / PREVIOUS}")
    elif args[:1] == ["--history"] and len(args) in (1, 2):
        print(f"wrote {write_history(root, Path(args[1]) if len(args) == 2 else None)}")
    else:
        sys.exit(
            "usage: python -m memrl.moves --snapshot REVISION [results/<profile>]"
            "  |  --history [results/<profile>]"
        )
