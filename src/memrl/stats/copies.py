"""Arms that copy another: what more seeds cannot tell apart, and collapses on some seeds.

A compared arm is a **copy** (a verdict's *identical*) when it equals, on every seed and
item (:func:`~memrl.stats.bootstrap.identical`), the arm it is compared with, or an arm whose
runs are all one run (a deterministic baseline's answers, which a policy collapsed onto on
every seed): more seeds of it are more copies. Two arms alike seed by seed that still vary
over their seeds (two conditions at the same first iteration, before either has learned)
are not: more seeds inform each one's comparison with a third arm.

An arm that equals another item by item on some of its seeds but not all has **collapsed**
on those seeds (:func:`~memrl.stats.bootstrap.copied_runs`): named in the verdict's detail.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memrl.stats.bootstrap import Arm, copied_runs, identical


def compared(comparisons: Sequence[Any]) -> list[str]:
    """The arms the comparisons name (``better`` and ``worse``), in order, once each."""
    return list(dict.fromkeys(n for c in comparisons for n in (c.better, c.worse)))


def one_run(arm: Any) -> bool:
    """Every run of ``arm`` is the same run (values and items): its seeds add nothing."""
    if not isinstance(arm, Arm):
        return False
    return len(set(zip(arm.values, arm.items or [()] * len(arm.values), strict=True))) == 1


def copies(estimates: Mapping[str, Any], comparisons: Sequence[Any]) -> list[tuple[str, str]]:
    """(arm, the arm it copies) for each compared arm that is a copy, as above."""
    partners = {(c.better, c.worse) for c in comparisons} | {
        (c.worse, c.better) for c in comparisons
    }
    out: list[tuple[str, str]] = []
    for a in compared(comparisons):
        b = next(
            (
                b
                for b, other in estimates.items()
                if b != a
                and identical(estimates[a], other)
                and ((a, b) in partners or one_run(other))
            ),
            None,
        )
        if b is not None and (b, a) not in out:
            out.append((a, b))
    return out


def collapsed(estimates: Mapping[str, Any], comparisons: Sequence[Any]) -> list[str]:
    """Each compared arm that is not a copy but equals another item by item on some of its
    seeds, as a sentence for the verdict's detail."""
    whole = {a for a, _ in copies(estimates, comparisons)}
    out = []
    for a in (a for a in compared(comparisons) if a not in whole):
        est = estimates[a]
        for b, other in estimates.items():
            k = copied_runs(est, other) if b != a else 0
            if 0 < k < est.n:
                out.append(f"{a} scores as {b} on each of {est.shared} on {k} of {est.n} seeds")
    return out
