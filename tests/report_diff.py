"""Compare two ``report.json`` files claim by claim: every field must be equal, except in
claims whose value is a wall-clock timing (``machine_dependent``: they differ between any
two runs). Used to show a refactor moved no verdict or number (see docs/history.md):

    python tests/report_diff.py BEFORE/report.json AFTER/report.json

Exit 0 when they agree; otherwise each differing field is printed and the exit code is 1.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def machine_dependent() -> set[str]:
    """Ids of the claims whose values are timings."""
    import importlib

    from memrl.families import NAMES
    from memrl.stats.claims import Claim

    out = set()
    for name in NAMES:
        mod = importlib.import_module(f"memrl.families.{name}.claims")
        out |= {
            v.claim_id for v in vars(mod).values() if isinstance(v, Claim) and v.machine_dependent
        }
    return out


def differences(a: Any, b: Any, where: str = "") -> list[str]:
    """Paths at which ``a`` and ``b`` differ (floats compared exactly, as JSON wrote them)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{where}.{k}: only in one" for k in sorted(set(a) ^ set(b))]
        for k in sorted(set(a) & set(b)):
            out += differences(a[k], b[k], f"{where}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{where}: {len(a)} vs {len(b)} items"]
        return [
            d
            for i, (x, y) in enumerate(zip(a, b, strict=True))
            for d in differences(x, y, f"{where}[{i}]")
        ]
    return [] if a == b or (a != a and b != b) else [f"{where}: {a!r} vs {b!r}"]


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    before, after = (json.loads(Path(p).read_text()) for p in argv)
    timings = machine_dependent()
    a = {r["claim_id"]: r for r in before}
    b = {r["claim_id"]: r for r in after}
    found = [f"claims only in one report: {sorted(set(a) ^ set(b))}"] if set(a) != set(b) else []
    for cid in sorted(set(a) & set(b)):
        diffs = differences(a[cid], b[cid], cid)
        if cid in timings:
            print(
                f"{cid}: a timing claim, {len(diffs)} fields differ (wall-clock); verdict "
                f"{a[cid]['verdict']!r} vs {b[cid]['verdict']!r}"
            )
            continue
        found += diffs
    for line in found:
        print(line)
    same = len(set(a) & set(b)) - len(timings & set(a))
    print(f"{'identical' if not found else 'DIFFERENT'}: {same} claims compared field by field")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
