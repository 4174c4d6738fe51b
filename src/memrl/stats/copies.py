"""Arms that copy another: comparisons more seeds cannot decide, and collapses.

Two compared arms are **copies** (a verdict's *identical*) when they are equal on every seed
and item (:func:`~memrl.stats.bootstrap.identical`): more seeds of them are more copies, and
no number of seeds tells them apart. An arm alike a *third* arm decides nothing about its own
comparisons: two conditions that score alike at their first iteration, before either has
learned, are each compared with their own fifth, where more seeds inform.

A compared arm that equals another of the claim's arms item by item on some or all of its
seeds (:func:`~memrl.stats.bootstrap.copied_runs`: a policy that collapsed onto a baseline's
answers) is named in the verdict's detail, whatever the verdict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memrl.stats.bootstrap import copied_runs, identical

COPIED = " scores as "  # the verb of a collapse's sentence (the README's one line counts them)


def copies(estimates: Mapping[str, Any], comparisons: Sequence[Any]) -> list[tuple[str, str]]:
    """(better, worse) of each comparison between copies, once each."""
    out: list[tuple[str, str]] = []
    for c in comparisons:
        pair = (c.better, c.worse)
        if identical(estimates[c.better], estimates[c.worse]) and pair not in out:
            out.append(pair)
    return out


def collapsed(estimates: Mapping[str, Any], comparisons: Sequence[Any]) -> list[str]:
    """Each compared arm that equals another arm (not one it is a copy of in a comparison)
    item by item on some or all of its seeds, as a sentence for the verdict's detail."""
    whole = {frozenset(p) for p in copies(estimates, comparisons)}
    out = []
    for a in dict.fromkeys(n for c in comparisons for n in (c.better, c.worse)):
        est = estimates[a]
        for b, other in estimates.items():
            k = copied_runs(est, other) if b != a and {a, b} not in whole else 0
            if k:
                out.append(f"{a}{COPIED}{b} on each of {est.shared} on {k} of {est.entered} seeds")
    return out
