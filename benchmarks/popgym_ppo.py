"""PPO-<core> on POPGym at the default profile's sizes (``ppo_popgym``): env steps per
core-second of each core's whole training (rollouts and updates), measured in this run, each
(core, round) a fresh process pinned to one core with one torch thread, the cores
interleaved round by round; then the default POPGym grid's price at those rates.

Rates are CPU seconds of the child process (``resource.getrusage``): a core-second, what
the estimate prices. The grid's price is its env steps per core divided by the core's median
rate, summed (cores x tasks x seeds, as params.yaml's default lists them).

    python benchmarks/popgym_ppo.py [--steps 16384] [--rounds 3] [--cpu 1] [--task RepeatPreviousEasy]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys


def child(core: str, task: str, steps: int) -> None:
    """One timed run in this process: prints {"core", "steps", "cpu_s"}."""
    from functools import partial

    from memrl.agents import ppo
    from memrl.envs.registry import make
    from memrl.families import load_family
    from memrl.runtime import set_torch_threads, warm_up_blas

    set_torch_threads(1)
    warm_up_blas()  # as the executors do before a job
    hp = load_family("recurrent_off_policy", "default").ppo_popgym.model_copy(update={"core": core})
    before = resource.getrusage(resource.RUSAGE_SELF)
    ppo.train(partial(make, f"popgym/{task}-v0"), hp, steps, 0)
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(json.dumps({"core": core, "steps": steps, "cpu_s": cpu}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=16384)  # two updates at the default's sizes
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cpu", type=int, default=1, help="the core every child is pinned to")
    ap.add_argument("--task", default="RepeatPreviousEasy")
    ap.add_argument("--cores", default="gru,lstm,ffm,s5")
    ap.add_argument("--child", nargs=2, metavar=("CORE", "TASK"))
    a = ap.parse_args()
    if a.child:
        child(a.child[0], a.child[1], a.steps)
        return
    rates: dict[str, list[float]] = {c: [] for c in a.cores.split(",")}
    for r in range(a.rounds):
        for core in rates:
            cmd = [sys.executable, __file__, "--child", core, a.task, "--steps", str(a.steps)]
            out = subprocess.run(
                ["taskset", "-c", str(a.cpu), *cmd],
                capture_output=True,
                text=True,
                check=True,
                env=os.environ | {"OMP_NUM_THREADS": "1"},
            )
            got = json.loads(out.stdout.strip().splitlines()[-1])
            rates[core].append(got["steps"] / got["cpu_s"])
            print(f"round {r} {core}: {rates[core][-1]:,.0f} env steps per core-second", flush=True)
    from memrl.families import load_family

    cfg = load_family("recurrent_off_policy", "default")
    cpu = next(
        (line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if "model name" in line),
        "unknown CPU",
    )
    print(f"\n{cpu}; {a.task}, {a.steps:,} env steps a run, median of {a.rounds} rounds:")
    med = {c: statistics.median(v) for c, v in rates.items()}
    for c, v in med.items():
        print(
            f"  PPO-{c.upper()}: {v:,.0f} env steps per core-second ({med['gru'] / v:.2f}x GRU's time)"
        )
    total, by_core = 0.0, {}
    for e in cfg.envs:
        if not e.env_id.startswith("popgym/"):
            continue
        for m in e.methods:
            core = m.split("-", 1)[1].lower()
            if core in med:
                s = (e.seeds or cfg.seeds) * e.total_timesteps / med[core]
                by_core[core] = by_core.get(core, 0.0) + s
                total += s
    print("default POPGym grid: " + ", ".join(f"{c} {s:,.0f}" for c, s in by_core.items()))
    print(f"  total ~{total:,.0f} core-s (~{total / 3600:.1f} core-hours)")


if __name__ == "__main__":
    main()
