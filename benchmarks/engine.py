"""The accelerated engine against the agents it replaces, measured in this run on this machine:
env steps per core-second (the process's CPU time, one torch thread, each measurement a fresh
process bound to one core; the arms interleaved within each round), on MinAtar Breakout and
SpaceInvaders, and the price of ER-7/ER-8's engine arms at the paper's budget.

- ``torch stream Q``: :func:`memrl.agents.stream_q.train` (the torch agent);
- ``engine stream Q``: :func:`memrl.engines.stream_q.train` (one compiled step);
- ``SB3 DQN1``: :func:`memrl.agents.sb3_dqn.dqn_train` with the family's ``stream.dqn1``
  block (a buffer of 1, batch 1, an update every step);
- ``engine DQN1``: :func:`memrl.engines.dqn1.train`, the same block;
- ``engine DQN``: :func:`memrl.engines.minatar_dqn.train`, MinAtar's DQN with replay (the
  ``stream.dqn`` block, ER-8's and EC-1/EC-4's baseline: a batch-32 update every step), its
  runs ``learning_starts`` steps longer than the others' so that the timed difference is
  all updating steps; priced at the family's ``stream.dqn_timesteps``.

Each process runs ``--short`` steps, then ``--steps`` steps; the rate is their difference in
steps over their difference in CPU time, so the one-off costs (imports, XLA's compilation:
each ``train`` compiles its step once, ~1-3 CPU-s here) cancel (a 10-step run first,
untimed, takes the process's first-call costs, which the two timed runs do not share). Their
price per run is printed apart (``overhead``).

``--against REV`` also measures each engine arm as the git revision ``REV`` has it (its
``src/memrl`` exported to a temporary directory, first on the child's path), right before the
arm itself in each round and game, and prints the ratio of the two: the speed-up of the
working tree's engine over ``REV``'s, measured under the same load.

    python benchmarks/engine.py [--steps 6000] [--short 1000] [--rounds 1] [--core 1]
        [--price-steps 5000000] [--seeds 5] [--arms ...] [--against REV]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

GAMES = ("MinAtar/Breakout-v1", "MinAtar/SpaceInvaders-v1")
ARMS = ("torch stream Q", "engine stream Q", "SB3 DQN1", "engine DQN1", "engine DQN")


def child(arm: str, env_id: str, short: int, steps: int) -> dict:
    import time
    from functools import partial

    if arm.startswith("engine"):
        from memrl.engines import dqn1, minatar_dqn, stream_q  # first: they pin XLA, the core

    # isort: split
    from memrl.agents import sb3_dqn
    from memrl.agents import stream_q as torch_stream_q
    from memrl.envs.registry import make
    from memrl.families import load_family
    from memrl.runtime import set_torch_threads

    set_torch_threads(1)
    st = load_family("experience_replay", "default").stream
    train, hp = {
        "torch stream Q": (torch_stream_q.train, st.stream_q),
        "SB3 DQN1": (sb3_dqn.dqn_train, st.dqn1),
        **(
            {
                "engine stream Q": (stream_q.train, st.stream_q),
                "engine DQN1": (dqn1.train, st.dqn1),
                "engine DQN": (minatar_dqn.train, st.dqn),
            }
            if arm.startswith("engine")
            else {}
        ),
    }[arm]
    env_fn, times = partial(make, env_id), []
    start = st.dqn.learning_starts if arm == "engine DQN" else 0  # timed: updating steps only
    train(env_fn, hp, 10 + start, 0)  # untimed: the process's one-off costs (jax's first trace)
    for n in (start + short, start + steps):
        t0 = time.process_time()
        train(env_fn, hp, n, 0)
        times.append(time.process_time() - t0)
    rate = (steps - short) / (times[1] - times[0])
    return {"rate": rate, "overhead": times[0] - short / rate, "price_steps": st.dqn_timesteps
            if arm == "engine DQN" else None}  # fmt: skip


def measure(arm: str, env_id: str, a: argparse.Namespace, tree: str | None = None) -> dict:
    """``arm`` in a fresh process; ``tree``: a directory holding another revision's
    ``src/memrl``, imported instead of the working tree's."""
    env = dict(os.environ)
    if tree:
        env["PYTHONPATH"] = os.pathsep.join([f"{tree}/src", *filter(None, [env.get("PYTHONPATH")])])
    code = (
        "import os, sys, json\n"
        f"os.sched_setaffinity(0, {{{a.core}}})\n"
        "import memrl\n"
        "sys.path.insert(0, 'benchmarks')\n"
        "from engine import child\n"
        f"print(json.dumps(child({arm!r}, {env_id!r}, {a.short}, {a.steps})))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=6000)
    ap.add_argument("--short", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--core", type=int, default=1)
    ap.add_argument("--price-steps", type=int, default=5_000_000)  # the paper's budget
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--arms", nargs="*", default=list(ARMS))
    ap.add_argument("--against", help="a git revision whose engine arms to measure as well")
    a = ap.parse_args()
    from memrl.isa import cpu_model

    runs = [(arm, None) for arm in a.arms]
    if a.against:
        tree = tempfile.mkdtemp(prefix="memrl-engine-")
        archive = subprocess.run(["git", "archive", a.against, "src/memrl"], capture_output=True,
                                 check=True).stdout  # fmt: skip
        subprocess.run(["tar", "-x", "-C", tree], input=archive, check=True)
        runs = [r for arm in a.arms for r in ([(arm, tree)] if arm.startswith("engine") else [])
                + [(arm, None)]]  # fmt: skip
    rates: dict[tuple[str, str], list[dict]] = {}
    for r in range(a.rounds):
        for env_id in GAMES:
            for arm, tree in runs:  # interleaved: each arm once a round and game
                m = measure(arm, env_id, a, tree)
                name = f"{arm} @{a.against}" if tree else arm
                rates.setdefault((name, env_id), []).append(m)
                print(f"round {r + 1} {env_id:26s} {name:16s} {m['rate']:8,.0f} steps/core-s "
                      f"(overhead {m['overhead']:.1f} core-s)", flush=True)  # fmt: skip
    print(f"\n{cpu_model()}; load {os.getloadavg()[0]:.1f}; {a.rounds} round(s)")
    total: dict[str, float] = {}
    budget: dict[str, int] = {}
    for (arm, env_id), ms in rates.items():
        rate = sorted(m["rate"] for m in ms)[len(ms) // 2]
        steps = ms[0]["price_steps"] or a.price_steps
        run = steps / rate + sorted(m["overhead"] for m in ms)[len(ms) // 2]
        total[arm] = total.get(arm, 0.0) + run * a.seeds
        budget[arm] = steps
        print(f"{arm:16s} {env_id:26s} {rate:8,.0f} steps/core-s; a {steps:,}-step run "
              f"{run:8,.0f} core-s")  # fmt: skip
    for arm, cost in total.items():
        print(f"{arm:16s} {budget[arm]:,} steps x {a.seeds} seeds x {len(GAMES)} games: "
              f"{cost:10,.0f} core-s")  # fmt: skip
    for torch_arm, engine_arm in (ARMS[:2], ARMS[2:4]):
        for env_id in GAMES:
            if (torch_arm, env_id) in rates and (engine_arm, env_id) in rates:
                ratio = [e["rate"] / t["rate"] for t, e in zip(rates[torch_arm, env_id],
                         rates[engine_arm, env_id], strict=True)]  # fmt: skip
                print(f"{engine_arm} / {torch_arm} on {env_id}: "
                      + ", ".join(f"{x:.1f}x" for x in ratio))  # fmt: skip
    for arm in a.arms if a.against else ():
        for env_id in GAMES:
            if (f"{arm} @{a.against}", env_id) in rates:
                ratio = [n["rate"] / o["rate"] for o, n in zip(rates[f"{arm} @{a.against}", env_id],
                         rates[arm, env_id], strict=True)]  # fmt: skip
                print(f"{arm} / {arm} @{a.against} on {env_id} (each round): "
                      + ", ".join(f"{x:.2f}x" for x in ratio))  # fmt: skip


if __name__ == "__main__":
    main()
