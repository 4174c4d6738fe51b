"""The price of a profile from scratch, as the README states it: what a fresh clone's
``make repro`` would spend on its jobs, from the timings git keeps (each runs stage's
``timings.json``: its jobs' measured CPU seconds and the CPUs they ran on), with no run store
read. It was a typed sentence, and drifted twice (a family's timings were republished and the
sentence was not); now it is a generated block.

    python -m memrl.price --readme   # rewrite README.md's price block

The block names the CPUs each family's seconds were measured on (prices from different
machines do not compare: the same engine job took 2-3x longer on one AMD EPYC than on
another), says how every job was priced, and compares the whole with :data:`CEILING`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from memrl.estimate import PUBLISHED, FamilyEstimate, packed_wall

CEILING = 90_000  # core-s: the default profile's whole price stays under it (the guide's rule)
WORKERS = 2  # the reference machine: 2 cores, one job per core
PROFILE = "default"
START = (
    "<!-- price: generated from results/*/timings.json by `python -m memrl.price --readme`; "
    "a test keeps it equal, do not edit -->"
)
END = "<!-- price: end -->"


def clone_price(profile: str = PROFILE) -> list[FamilyEstimate]:
    """Every family's jobs of ``profile`` priced as on a fresh clone (no run store)."""
    from memrl import families
    from memrl.estimate import estimate_families

    configs = {f: families.load_family(f, profile) for f in families.NAMES}
    return estimate_families(profile, configs, fresh=True, clone=True)


def _basis(basis: str, profile: str) -> str:
    """How a prediction's basis reads in the table."""
    if basis == f"group, {PUBLISHED}":
        return "its group's timings"
    if basis.startswith("group, ") and basis.endswith(PUBLISHED):
        other = basis.removeprefix("group, ").removesuffix(f", {PUBLISHED}")
        return f"the {other} profile's timings of its group (shorter runs: start-up weighs more)"
    if basis == "family":
        return "the family's median rate (rough: its group has no timing yet)"
    return "no timing at all"


def _cpus(cpus: dict[str, int]) -> str:
    if not cpus:
        return "no CPU recorded"
    return "; ".join(f"{m} ({n} jobs)" for m, n in sorted(cpus.items(), key=lambda x: -x[1]))


def _round(core_s: float) -> str:
    return f"~{round(core_s, -2):,.0f}"


def readme_block(priced: Sequence[FamilyEstimate], profile: str = PROFILE) -> str:
    """The README's price: one sentence with the whole (hours on :data:`WORKERS` cores,
    core-seconds, against :data:`CEILING`), then a table by family: its jobs, core-seconds,
    wall time, how its jobs were priced and the CPUs its timings were measured on."""
    from memrl import families

    total = sum(e.core_seconds for e in priced)
    walls = [packed_wall([p.seconds or 0.0 for p in e.todo], WORKERS) for e in priced]
    side = "under" if total < CEILING else "**over**"
    lines = [
        f"From scratch the {profile} profile's jobs take **~{sum(walls) / 3600:.1f} h on "
        f"{WORKERS} cores** ({_round(total)} core-s, one job per core; {side} the "
        f"{CEILING:,} core-s the project allows it), priced from the timings git keeps, "
        "as a fresh clone's `python -m memrl estimate --fresh` prices them.",
        "",
        "| family | jobs | core-s | hours on 2 cores | priced from | timings measured on |",
        "|---|---:|---:|---:|---|---|",
    ]
    for e, wall in zip(priced, walls, strict=True):
        how = Counter(_basis(p.basis, profile) for p in e.todo)
        parts = [f"{n}: {what}" for what, n in sorted(how.items(), key=lambda x: -x[1])]
        cells = [
            families.get(e.family).title,
            str(len(e.todo)),
            _round(e.core_seconds),
            f"{wall / 3600:.1f}",
            "; ".join(parts),
            _cpus(e.cpus[1]),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_readme(root: Path) -> Path:
    """Rewrite README.md's price block from the timings under ``root``."""
    from memrl.readme import replace_block
    from memrl.runtime import atomic_write_text

    readme = Path(root) / "README.md"
    text = replace_block(readme.read_text(), "price", START, END, readme_block(clone_price()))
    atomic_write_text(readme, text)
    return readme


if __name__ == "__main__":
    import sys

    from memrl.runtime import repo_root

    if sys.argv[1:] != ["--readme"]:
        sys.exit("usage: python -m memrl.price --readme  (README.md's price block)")
    print(f"wrote {write_readme(repo_root())}")
