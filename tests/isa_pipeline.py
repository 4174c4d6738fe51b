"""The smoke pipeline under two CPUs' kernel choices gives the same report (`make test` runs it).

Run as a script: the whole smoke pipeline (every family's jobs, notebooks, the report and
the memory card) runs twice in a scratch clone of this checkout, once with the libraries told
to compute as a CPU without AVX2 would (``ATEN_CPU_CAPABILITY=default``, numpy at its baseline,
OpenBLAS's Nehalem kernels, MKL's own dispatch) and once as this CPU would
(``ATEN_CPU_CAPABILITY=avx2``). memrl pins one kernel set (:mod:`memrl.isa`), so
``report.json`` and ``memory_card.json`` must come out equal, less what is wall-clock: the
claims marked ``machine_dependent`` and the card's ``ms_per_step`` and ``seconds_per_run``
(and those columns of the card's table).

    python tests/isa_pipeline.py [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = {
    "a CPU without AVX2": {
        "ATEN_CPU_CAPABILITY": "default",
        "NPY_DISABLE_CPU_FEATURES": "X86_V3,X86_V4,AVX512_ICL,AVX512_SPR",
        "OPENBLAS_CORETYPE": "Nehalem",
        "MKL_CBWR": "AUTO",
    },
    "this CPU": {"ATEN_CPU_CAPABILITY": "avx2"},
}


def computed(results: Path) -> dict:
    """report.json and memory_card.json less their wall-clock parts."""
    report = json.loads((results / "report.json").read_text())
    card = json.loads((results / "memory_card.json").read_text())
    for row in card.get("classes", []):
        row.pop("ms_per_step", None)
        row.pop("seconds_per_run", None)
    section = card.get("section") or {}  # the card's table as text: its timing columns too
    clocks = ("ms per training step", "s per run")
    timed = [i for i, h in enumerate(section.get("head", [])) if h in clocks]
    for row in section.get("body", []):
        for i in timed:
            row[i] = "wall-clock"
    claims = {r["claim_id"]: ("wall-clock" if r.get("machine_dependent") else r) for r in report}
    return {"claims": claims, "card": card}


def differences(a, b, where: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{where}.{k}: only in one" for k in sorted(set(a) ^ set(b))]
        for k in sorted(set(a) & set(b)):
            out += differences(a[k], b[k], f"{where}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [
            d
            for i, (x, y) in enumerate(zip(a, b, strict=True))
            for d in differences(x, y, f"{where}[{i}]")
        ]
    return [] if a == b else [f"{where}: {a!r} != {b!r}"]


def run(clone: Path, extra: dict[str, str]) -> dict:
    shutil.rmtree(clone / "results" / "smoke", ignore_errors=True)
    subprocess.run(["git", "checkout", "-q", "--", "results/smoke"], cwd=clone, check=True)
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {*SETTINGS["a CPU without AVX2"], "MEMRL_ROOT", "MEMRL_ISA"}
    }
    env.update(extra, MEMRL_PROGRESS="0", MEMRL_CACHE=str(ROOT / ".cache"))  # models, shared
    cmd = [sys.executable, "-m", "memrl", "repro", "--profile", "smoke"]
    subprocess.run(cmd, cwd=clone, env=env, check=True)
    return computed(clone / "results" / "smoke")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--keep", type=Path, help="make the scratch clone here and keep it")
    a = ap.parse_args()
    scratch = a.keep or Path(tempfile.mkdtemp(prefix="memrl-isa-"))
    clone = scratch / "memrl"
    try:
        if not clone.exists():
            subprocess.run(["git", "clone", "-q", "--shared", str(ROOT), str(clone)], check=True)
            (clone / "data").symlink_to(ROOT / "data")  # built by `make data`, read only
        out = {name: run(clone, extra) for name, extra in SETTINGS.items()}
    finally:
        if a.keep is None:
            shutil.rmtree(scratch, ignore_errors=True)
    (x, y) = out.values()
    diff = differences(x, y)
    n = len(x["claims"]) + 1
    for d in diff[:20]:
        print(f"differs: {d}")
    print(f"isa_pipeline: {n - bool(diff)} passed, {int(bool(diff))} failed")
    print(f"{n} results (claims and the memory card) compared across {' / '.join(SETTINGS)}")
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())
