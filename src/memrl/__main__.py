"""One job from the command line, as rl-zoo's ``train.py`` runs one configuration.

    python -m memrl list <family> [--profile P] [--set key=value ...]
    python -m memrl run  <family> <job> [--seed N] [--profile P] [--set key=value ...] [--store DIR]

``<job>`` selects one job of the family's grid by the words of its label (``list``
prints them), e.g. ``"RSAC-LSTM Pendulum-V"``; ``--seed`` picks the seed. ``--set``
overrides one of the family's parameters for this run (a dotted path in its section of
``params.yaml``, the value read as YAML: ``--set rsac.learning_rate=3e-4``,
``--set envs.0.total_timesteps=18000``); the result is validated like ``params.yaml``,
so an unknown key or a wrong type fails before anything runs. The result is stored
(atomically, under its job key) in ``--store``, by default ``<cache>/runs/cli/<family>``,
never in the pipeline's stores, and a second run of the same job reuses it.
"""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path
from typing import Any

import yaml


def overrides(pairs: list[str]) -> dict[str, Any]:
    """``["a.b=1", "c=[1, 2]"]`` -> ``{"a": {"b": 1}, "c": [1, 2]}`` (list items by index:
    ``envs.0.total_timesteps``)."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"--set takes key=value, not {pair!r}")
        node = out
        *parents, last = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = _value(value)
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


def _apply(base: Any, change: Any, where: str) -> Any:
    """``change`` merged into ``base``; dict keys that are digits index into lists."""
    if not isinstance(change, dict):
        return change
    if isinstance(base, list):
        out = list(base)
        for k, v in change.items():
            if not (k.isdigit() and int(k) < len(out)):
                raise SystemExit(f"--set {where}{k}: {where[:-1]} has {len(out)} items")
            out[int(k)] = _apply(out[int(k)], v, f"{where}{k}.")
        return out
    if not isinstance(base, dict):
        raise SystemExit(f"--set {where[:-1]} is a value, not a section")
    return {**base, **{k: _apply(base.get(k, {}), v, f"{where}{k}.") for k, v in change.items()}}


def family_params(family: str, profile: str | None, sets: list[str]) -> Any:
    """The family's validated parameters for ``profile`` with ``--set`` overrides."""
    from pydantic import ValidationError

    from memrl.config import ConfigError, _format_errors, family_schema, load_family

    cfg = load_family(family, profile)  # unknown family/profile and params.yaml errors first
    if not sets:
        return cfg
    merged = _apply(cfg.model_dump(mode="json"), overrides(sets), "")
    try:
        return family_schema(family).model_validate(merged)
    except ValidationError as err:  # worded as params.yaml's errors, naming each key
        raise ConfigError(
            _format_errors(family, f"{profile or 'params.yaml'} + --set", err)
        ) from None


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
        p.add_argument("--profile", help="default: params.yaml's profile")
        p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    a = ap.parse_args(argv)

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
