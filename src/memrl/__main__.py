"""One job from the command line, as rl-zoo's ``train.py`` runs one configuration.

    python -m memrl list <family> [--profile P] [--set key=value ...]
    python -m memrl run  <family> <job> [--seed N] [--profile P] [--set key=value ...] [--store DIR]
    python -m memrl estimate [family ...] [--profile P] [--set key=value ...] [--fresh]

``<job>`` selects one job of the family's grid by the words of its label (``list``
prints them), e.g. ``"RSAC-LSTM Pendulum-V"``; ``--seed`` picks the seed. ``--set``
overrides one of the family's parameters for this run (a dotted path in its section of
``params.yaml``, the value read as YAML: ``--set rsac.learning_rate=3e-4``,
``--set envs.0.total_timesteps=18000``); the result is validated like ``params.yaml``,
so an unknown key or a wrong type fails before anything runs. The result is stored
(atomically, under its job key) in ``--store``, by default ``<cache>/runs/cli/<family>``,
never in the pipeline's stores, and a second run of the same job reuses it.

``estimate`` prices what ``make repro`` would run (every family, or those named; ``--set``
needs one family): core-seconds and wall time of the jobs not yet stored, predicted from
the stored runs' measured seconds (:mod:`memrl.estimate`), before anything is trained;
``--fresh`` prices every job, as a fresh clone would run them.
"""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path
from typing import Any

import yaml


def overrides(pairs: list[str]) -> dict[str, Any]:
    """``["a.b=1", "c=[1, 2]"]`` -> ``{"a.b": 1, "c": [1, 2]}``: dotted keys, values read
    as YAML (merged into the parameters by :func:`memrl.config.apply_overrides`)."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"--set takes key=value, not {pair!r}")
        out[key] = _value(value)
    return out


def _value(text: str) -> Any:
    """YAML, plus the floats YAML 1.1 reads as strings (``3e-4``)."""
    value = yaml.safe_load(text)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    return value


def family_params(family: str, profile: str, sets: list[str]) -> Any:
    """The family's validated parameters for ``profile`` with ``--set`` overrides."""
    from memrl.config import load_family

    return load_family(family, profile, overrides=overrides(sets))


def select(specs: list[Any], job: str, seed: int) -> Any:
    """The one spec whose label holds every word of ``job`` (any case) and ``seed``."""
    words = job.lower().split()
    hits = [s for s in specs if all(w in s.name.lower() for w in words)]
    seeded = [s for s in hits if s.kwargs.get("seed", seed) == seed]
    if len(seeded) == 1:
        return seeded[0]
    names = sorted({_unseeded(s.name) for s in (hits or specs)})
    if not hits:
        what = "matches no job"
    elif not seeded:
        what = f"has no seed {seed}"
    else:
        what = "matches several jobs"
    raise SystemExit(f"'{job}' {what}; jobs:\n  " + "\n  ".join(names))


def _unseeded(label: str) -> str:
    return label.rsplit(" · seed", 1)[0]


def _elapsed(desc: str, stop: threading.Event) -> None:
    """A live elapsed-time bar while the job runs in this process."""
    from tqdm.auto import tqdm

    from memrl.runtime import progress_enabled

    with tqdm(desc=desc, unit="s", bar_format="{desc}: {elapsed} elapsed",
              disable=not progress_enabled()) as bar:  # fmt: skip
        while not stop.wait(1.0):
            bar.update(1)


def _estimate(names: list[str], profile: str, sets: list[str], fresh: bool = False) -> int:
    from memrl import families
    from memrl.config import ConfigError
    from memrl.estimate import estimate_families, render

    try:
        fams = [families.get(n).name for n in names or families.NAMES]
        if sets and len(fams) != 1:
            raise ValueError("--set changes one family's parameters: name that family")
        configs = {f: family_params(f, profile, sets) for f in fams}
        out = estimate_families(profile, configs, fresh=fresh)
    except (ValueError, ConfigError) as err:
        print(err, file=sys.stderr)
        return 2
    print(render(out, profile, fresh=fresh))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m memrl", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("list", "run"):
        p = sub.add_parser(name)
        p.add_argument("family")
        if name == "run":
            p.add_argument("job", help="words of the job's label, e.g. 'RSAC-LSTM Pendulum-V'")
            p.add_argument("--seed", type=int, default=0)
            p.add_argument("--store", type=Path, help="result folder (default: the cache's)")
        p.add_argument("--profile", default="default", help="smoke | default | paper")
        p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    p = sub.add_parser("estimate", help="price the jobs not yet stored, from stored runs")
    p.add_argument("families", nargs="*", help="default: every family")
    p.add_argument("--profile", default="default", help="smoke | default | paper")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--fresh", action="store_true", help="every job, as on a fresh clone")
    a = ap.parse_args(argv)
    if a.cmd == "estimate":
        return _estimate(a.families, a.profile, a.set, a.fresh)

    from memrl import families
    from memrl.config import ConfigError
    from memrl.jobs import RunStore, run_spec
    from memrl.runtime import cache_dir

    try:
        fam = families.get(a.family)
        cfg = family_params(a.family, a.profile, a.set)
    except (ValueError, ConfigError) as err:
        print(err, file=sys.stderr)
        return 2
    specs = fam.grid(cfg)
    if a.cmd == "list":
        seeds = sorted({s.kwargs["seed"] for s in specs if "seed" in s.kwargs})
        print(f"{a.family}: {len(specs)} jobs (seeds {seeds})")
        for name in dict.fromkeys(_unseeded(s.name) for s in specs):
            print(f"  {name}")
        return 0

    spec = select(specs, a.job, a.seed)
    store = RunStore(a.store or cache_dir() / "runs" / "cli" / a.family)
    if store.has(spec):
        print(f"already stored: {store.path(spec)}")
        return 0
    stop = threading.Event()
    bar = threading.Thread(target=_elapsed, args=(spec.name, stop), daemon=True)
    bar.start()
    try:
        result, seconds = run_spec(spec.to_json())
    finally:
        stop.set()
        bar.join()
    path = store.save(spec, result, seconds)
    scalars = {k: v for k, v in result.items() if isinstance(v, int | float | str) and k != "seed"}
    print(f"{spec.name}: {seconds:,.1f} s")
    for k, v in list(scalars.items())[:8]:
        print(f"  {k}: {v:.4g}" if isinstance(v, float) else f"  {k}: {v}")
    print(f"result: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
