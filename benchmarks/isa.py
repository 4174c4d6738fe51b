"""What pinning the instruction set costs (memrl.isa), measured in this run.

Each job below runs in a fresh process under each level (``native``: every library picks
for this CPU; ``x86-64-v3``: the pinned default; ``x86-64-v2``: the any-x86-64 level), one
torch thread, the levels interleaved ``--repeats`` times so a busy machine weighs on all
alike, after one untimed run that warms files and caches. Printed: each job's median
seconds per level and its ratio to ``native``, and whether the pinned levels give the same
result under an outer ``ATEN_CPU_CAPABILITY`` (they should: the pin overrides it) while
``native`` does not.

The jobs: one of each kind of arithmetic the suite runs, at the smoke profile's size:
SB3's DQN on CartPole (small MLP) and on MinAtar (a convolution), SB3's SAC (two 256-wide
MLPs, batch 256), NEC on MinAtar Breakout (a convolution and a kNN over
numpy's BLAS), MFEC (random projection and kNN, numpy), recurrent SAC (an LSTM), and the
LLM family's REMEMBERER with SmolLM2-135M (matrix products of a transformer).

    python benchmarks/isa.py [--repeats 3] [--jobs NAME ...]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys

JOBS = {
    "DQN+PER (SB3, CartPole)": ("experience_replay", "DQN+PER", 0),
    "DQN (SB3, MinAtar Breakout)": ("episodic_control", "DQN · Breakout", 0),
    "SAC (SB3, Pendulum-V)": ("recurrent_off_policy", "SAC · Pendulum-V", 0),
    "NEC (MinAtar Breakout)": ("episodic_control", "NEC · Breakout", 0),
    "MFEC (MinAtar Breakout)": ("episodic_control", "MFEC · Breakout", 0),
    "RSAC-LSTM (Pendulum-V)": ("recurrent_off_policy", "RSAC-LSTM · Pendulum-V", 0),
    "REMEMBERER llm (SmolLM2)": ("llm_memory_rl", "REMEMBERER llm · run 0", None),
}
LEVELS = ("native", "x86-64-v3", "x86-64-v2")


def one(family: str, job: str, seed: int | None) -> None:
    """In a child process: run the job, print its seconds and a hash of its result."""
    from memrl import families
    from memrl.cli import family_params, select
    from memrl.executors import run_spec
    from memrl.runs import ISA_FIELD

    specs = families.get(family).grid(family_params(family, "smoke", []))
    result, seconds = run_spec(select(specs, job, seed).to_json())
    result.pop(ISA_FIELD), result.pop("files", None)
    result = {k: v for k, v in result.items() if not k.endswith(("seconds", "_ms"))}  # clocks
    digest = hashlib.sha256(json.dumps(result, sort_keys=True, default=str).encode())
    print(json.dumps({"seconds": seconds, "result": digest.hexdigest()[:12]}))


def run(level: str, spec: tuple, extra: dict[str, str] | None = None) -> dict:
    env = {**os.environ, "MEMRL_ISA": level, "MEMRL_PROGRESS": "0", **(extra or {})}
    for var in ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "NPY_DISABLE_CPU_FEATURES"):
        if extra is None or var not in extra:
            env.pop(var, None)
    out = subprocess.run(
        [sys.executable, __file__, "--child", json.dumps(spec)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--jobs", nargs="*", default=list(JOBS), choices=list(JOBS))
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        one(*json.loads(a.child))
        return
    print(f"{'job':<28}" + "".join(f"{lv:>12}" for lv in LEVELS) + "   ratio v3 / v2 to native")
    for name in a.jobs:
        secs: dict[str, list[float]] = {lv: [] for lv in LEVELS}
        run("native", JOBS[name])  # untimed: model files, data and caches warm for every level
        for _ in range(a.repeats):
            for lv in LEVELS:
                secs[lv].append(run(lv, JOBS[name])["seconds"])
        med = {lv: statistics.median(s) for lv, s in secs.items()}
        print(
            f"{name:<28}"
            + "".join(f"{med[lv]:>11.2f}s" for lv in LEVELS)
            + f"   {med['x86-64-v3'] / med['native']:.2f}x / {med['x86-64-v2'] / med['native']:.2f}x",
            flush=True,
        )
    print("\nsame result under an outer ATEN_CPU_CAPABILITY=default and =avx2?")
    for name in a.jobs:
        same = {}
        for lv in LEVELS:
            r = [
                run(lv, JOBS[name], {"ATEN_CPU_CAPABILITY": c})["result"]
                for c in ("default", "avx2")
            ]
            same[lv] = r[0] == r[1]
        print(f"{name:<28}" + "".join(f"{str(same[lv]):>12}" for lv in LEVELS), flush=True)


if __name__ == "__main__":
    main()
