"""One job, as rl-zoo's ``train.py`` runs one configuration: ``python -m memrl list FAMILY``
(its jobs, each group with its price) and ``python -m memrl run FAMILY 'WORDS' --seed N``
(one job here, announced with its length and price, a bar of its progress against the price).

The price is :mod:`memrl.estimate`'s (the stored runs' and the published timings' seconds of
the job's group); a job reports no steps as it runs, so the bar measures the CPU time it has
used against that price, and the share of its budget that is carries a "~".
"""

from __future__ import annotations

import argparse
import sys
import threading
from typing import Any


def select(specs: list[Any], job: str, seed: int) -> Any:
    """The one spec whose label holds every word of ``job`` (any case) and ``seed``."""
    words = job.lower().split()
    # the label itself first ("MFEC · Breakout" is not "MFEC r=2 · Breakout"), then its whole
    # words ("RSAC-LSTM" is not "RSAC-LSTM-shared"), else parts of it
    hits = [s for s in specs if _unseeded(s.name).lower() == job.lower()]
    hits = hits or [s for s in specs if set(words) <= set(s.name.lower().split())]
    hits = hits or [s for s in specs if all(w in s.name.lower() for w in words)]
    seeded = [s for s in hits if s.kwargs.get("seed", seed) == seed]
    if len(seeded) == 1:
        return seeded[0]
    if hits and not seeded:  # the job exists: say which seeds it takes
        have = sorted({s.kwargs["seed"] for s in hits if "seed" in s.kwargs})
        more = f" (`--set seeds={seed + 1}` runs seeds 0 to {seed})" if seed > max(have) else ""
        raise LookupError(f"'{job}' has no seed {seed} in this profile; its seeds: {have}{more}")
    names = sorted({_unseeded(s.name) for s in (hits or specs)})
    if hits:
        raise LookupError(f"'{job}' matches several jobs:\n  " + "\n  ".join(names))
    return _no_such_job(job, names)


def _no_such_job(job: str, names: list[str]) -> Any:
    """Raise the error for a ``job`` no label holds: the labels nearest to it (difflib), not
    every one of the family's."""
    import difflib

    by_lower = {n.lower(): n for n in names}
    near = difflib.get_close_matches(job.lower(), list(by_lower), n=5, cutoff=0.4)
    near = [by_lower[n] for n in near]
    if not near:  # no label close as a whole: those sharing a word with it
        words = set(job.lower().replace("·", " ").split())
        near = [n for n in names if words & set(n.lower().replace("·", " ").split())][:5]
    listed = "; nearest:\n  " + "\n  ".join(near) if near else ""
    raise LookupError(
        f"'{job}' matches no job{listed}\n(`python -m memrl list <family>` lists all {len(names)})"
    )


def _unseeded(label: str) -> str:
    return label.rsplit(" · seed", 1)[0]


def seed_number(text: str) -> int:
    """``--seed``'s value: a whole number >= 0 (argparse turns the error into one line)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a seed is a whole number, not {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"a seed is 0 or more, not {value}")
    return value


# a job's length, if its arguments say: the argument, and what it counts
BUDGETS = {
    "total_timesteps": "env steps",
    "env_steps": "env steps",
    "steps": "steps",
    "episodes": "episodes",
}


def budget(spec: Any) -> tuple[str, int] | None:
    """The job's length as its arguments state it (``("env steps", 18000)``), if any:
    the first of :data:`BUDGETS` at its top level, else in a section of it."""
    for where in (spec.kwargs, *(v for v in spec.kwargs.values() if isinstance(v, dict))):
        for name in BUDGETS:
            value = where.get(name)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return BUDGETS[name], value
    return None


def _progress(desc: str, price: float | None, steps: Any, stop: threading.Event) -> None:
    """A live bar while the job runs in this process: the CPU time it has used against its
    price (the estimate's core-seconds for it), so a percentage and an ETA, and the share of
    its budget that is (the job reports no steps itself: "~" marks the estimate)."""
    import time

    from tqdm.std import tqdm

    from memrl.runtime import progress_enabled

    if price is None:  # nothing to measure against: elapsed time only
        fmt, total = "{desc}: {elapsed} elapsed", None
    else:
        fmt = (
            "{desc}: {percentage:3.0f}%|{bar:20}| {n:,.0f}/{total:,.0f} core-s "
            "[{elapsed}<{remaining}]{postfix}"
        )
        total = max(price, 1.0)
    start = time.process_time()
    with tqdm(
        desc=desc, total=total, bar_format=fmt, file=sys.stderr, disable=not progress_enabled()
    ) as bar:
        while not stop.wait(1.0):
            used = time.process_time() - start
            if total is not None and steps is not None:
                name, n = steps
                done = min(used / total, 1.0) * n
                bar.set_postfix_str(f"~{done:,.0f} of {n:,} {name}", refresh=False)
            if total is not None and used > bar.total:  # past its price: the bar stays full
                bar.total = used  # (tqdm fails to format a count past its total)
            bar.update((used if total is not None else bar.n + 1) - bar.n)


def price_of(family: str, profile: str, spec: Any) -> tuple[float | None, str]:
    """The estimate's core-seconds for ``spec`` (:mod:`memrl.estimate`: the stored and
    published timings of its group) and where the figure comes from."""
    from memrl.estimate import estimate_family

    try:
        est = estimate_family(family, profile, [spec], workers=1, fresh=True)
    except Exception as err:  # noqa: BLE001 - a price is advice, it never stops a job
        return None, f"no price ({type(err).__name__}: {err})"
    pred = est.predictions[0]
    if pred.seconds is None:
        return None, "no price: no measured run of its family"
    if pred.basis == "measured":
        return pred.seconds, "as its run in the pipeline's store took"
    return pred.seconds, "priced " + est.summary().split("(priced ", 1)[-1].rstrip(")")


def run_one(fam: Any, profile: str, specs: list[Any], job: str, seed: int, where: Any) -> int:
    """``run``: one job of ``specs`` (:func:`select`), in this process, into the CLI's cache
    store (or ``where``), announced with its length and price, a bar of its CPU time against
    that price while it runs."""
    from memrl.executors import run_spec
    from memrl.runs import CPU_FIELD, RunStore
    from memrl.runtime import cache_dir

    try:
        spec = select(specs, job, seed)
    except LookupError as err:
        print(f"memrl: {err.args[0].replace('<family>', fam.name)}", file=sys.stderr)
        return 2
    store = RunStore(where or cache_dir() / "runs" / "cli" / fam.name)
    if store.has(spec):
        print(f"already stored: {store.path(spec)}")
        return 0
    price, source = price_of(fam.name, profile, spec)
    steps = budget(spec)
    length = f"{steps[1]:,} {steps[0]}; " if steps else ""
    cost = f"~{price:,.0f} core-s ({source})" if price is not None else source
    print(f"{spec.name}: {length}{cost}", flush=True)
    stop = threading.Event()
    bar = threading.Thread(target=_progress, args=(spec.name, price, steps, stop), daemon=True)
    bar.start()
    try:
        result, seconds = run_spec(spec.to_json())
    finally:
        stop.set()
        bar.join()
    used = result.get(CPU_FIELD)
    path = store.save(spec, result, seconds)
    scalars = {k: v for k, v in result.items() if isinstance(v, int | float | str) and k != "seed"}
    took = f" ({used:,.1f} core-s" + (f"; priced ~{price:,.0f})" if price else ")") if used else ""
    print(f"{spec.name}: {seconds:,.1f} s{took}")
    for k, v in list(scalars.items())[:8]:
        print(f"  {k}: {v:.4g}" if isinstance(v, float) else f"  {k}: {v}")
    print(f"result: {path}")
    return 0


def list_jobs(fam: Any, profile: str, specs: list[Any]) -> int:
    """``list``: the family's jobs, one line a job group, with its jobs' price (the
    estimate's core-seconds a job; a stored job's are its measured ones) and the total."""
    from collections import defaultdict

    from memrl.estimate import estimate_family
    from memrl.runs import job_group

    family = fam.name
    seeds = sorted({s.kwargs["seed"] for s in specs if "seed" in s.kwargs})
    reps = sorted({s.kwargs["run"] for s in specs if "run" in s.kwargs})  # LLM runs
    print(f"{family}: {len(specs)} jobs ({f'seeds {seeds}' if seeds else f'runs {reps}'})")
    try:
        preds = estimate_family(family, profile, specs, workers=1, fresh=True).predictions
    except Exception:  # noqa: BLE001 - the list is the point; its prices are advice
        preds = []
    cost: dict[str, list[float | None]] = defaultdict(list)
    for p in preds:
        cost[job_group(p.spec.name)].append(p.seconds)
    names = list(dict.fromkeys(job_group(s.name) for s in specs))
    width = max(map(len, names), default=0)
    for name in names:
        priced = [c for c in cost.get(name, []) if c is not None]
        each = f"~{_secs(sum(priced) / len(priced))} core-s a job" if priced else "not priced"
        print(f"  {name:{width}}  {len(cost.get(name, [])):3d} x {each}")
    if preds:
        total = sum(c for v in cost.values() for c in v if c is not None)
        print(
            f"total ~{total:,.0f} core-s (`python -m memrl estimate {family} --fresh` itemises it)"
        )
    return 0


def _secs(x: float) -> str:
    return "<0.1" if x < 0.1 else f"{x:.1f}" if x < 10 else f"{x:,.0f}"
