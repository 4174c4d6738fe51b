"""MinAtar's own DQN on SB3 against the settings it replaces, measured in this run on this
machine: env steps per core-second (the process's CPU time, one torch thread, the process
bound to one core; a fresh process per run, the settings interleaved within each round),
during the replay start (uniform random actions, no update) and after it (an update every
``train_freq`` steps), and the price of a run at a given budget from the two.

- ``MinAtar``: the experience-replay family's ``stream.dqn`` block (examples/dqn.py's
  settings: an update every step, centred RMSprop; :class:`memrl.agents.sb3_dqn.MinAtarDQNParams`);
- ``before``: the block it replaces (issue 73: Adam 1e-4, an update every 4 steps, the
  fused Adam of :func:`memrl.agents.sb3.sb3_kwargs`);
- ``engine``: MinAtar's settings on the engine (:mod:`memrl.engines.minatar_dqn`, one
  compiled update), compiled before the clock starts (once a run: ~5-15 CPU-s here).

    python benchmarks/minatar_dqn.py [--steps 20000] [--rounds 1] [--core 1] [--price 1000000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

# the replay DQN before issue 73 (params.yaml, experience_replay.stream.dqn, commit 8cb149e)
BEFORE = {
    "learning_rate": 0.0001,
    "batch_size": 32,
    "buffer_size": 100000,
    "learning_starts": 5000,
    "gamma": 0.99,
    "target_update_interval": 1000,
    "train_freq": 4,
    "gradient_steps": 1,
    "exploration_fraction": 0.02,
    "exploration_final_eps": 0.1,
    "anneal_from": "learning start",
    "net_arch": [128],
}
GAMES = ("MinAtar/Breakout-v1", "MinAtar/SpaceInvaders-v1")


def engine_child(env_id: str, steps: int) -> dict:
    """The engine's run: a run of the replay start alone, then a whole run."""
    import time
    from functools import partial

    from memrl.engines import minatar_dqn  # first: it pins XLA and the core

    # isort: split
    from memrl.envs.registry import make
    from memrl.families import load_family
    from memrl.runtime import set_torch_threads

    set_torch_threads(1)
    hp = load_family("experience_replay", "default").stream.dqn
    env_fn, start = partial(make, env_id), hp.learning_starts
    minatar_dqn.train(env_fn, hp, start + 100, 0)  # compiles the update and the action
    t0 = time.process_time()
    minatar_dqn.train(env_fn, hp, start, 0)
    t1 = time.process_time()
    minatar_dqn.train(env_fn, hp, steps, 0)
    t2 = time.process_time()
    return {"random": start / (t1 - t0), "updating": (steps - start) / (t2 - t1 - (t1 - t0))}


def child(setting: str, env_id: str, steps: int) -> dict:
    """One fresh run (in this process): CPU seconds before and after the replay start."""
    import time

    if setting == "engine":
        return engine_child(env_id, steps)
    import memrl  # noqa: F401  (first: importing it pins the kernels, memrl.isa)

    # isort: split
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.monitor import Monitor

    from memrl.agents import sb3_dqn
    from memrl.envs.registry import make
    from memrl.families import load_family
    from memrl.runtime import seed_everything, set_torch_threads

    set_torch_threads(1)
    seed_everything(0)
    env = Monitor(make(env_id, 0))
    if setting == "MinAtar":
        hp = load_family("experience_replay", "default").stream.dqn
        model = sb3_dqn.minatar_dqn_model(env, hp, steps, 0)
    else:
        from stable_baselines3 import DQN
        from stable_baselines3.dqn.policies import CnnPolicy

        from memrl.agents.sb3 import minatar_cnn_extractor, sb3_kwargs, silent, steady

        hp = sb3_dqn.DQNParams(**BEFORE)
        kwargs = sb3_kwargs(hp, 0)
        kwargs["policy_kwargs"].update(
            features_extractor_class=minatar_cnn_extractor(), normalize_images=False
        )
        model = silent(DQN(steady(CnnPolicy), env, **kwargs))
        model.exploration_schedule = sb3_dqn.exploration_schedule(hp, steps)
    start = hp.learning_starts

    class Mark(BaseCallback):
        at: float | None = None

        def _on_step(self) -> bool:
            if self.num_timesteps == start:
                self.at = time.process_time()
            return True

    mark = Mark()
    t0 = time.process_time()
    model.learn(steps, callback=mark)
    t1 = time.process_time()
    return {"random": start / (mark.at - t0), "updating": (steps - start) / (t1 - mark.at)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=20_000, help="env steps per run")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--core", type=int, default=1, help="the core each run is bound to")
    ap.add_argument("--price", type=int, default=1_000_000, help="the budget to price")
    ap.add_argument("--settings", default="before,MinAtar,engine", help="comma-separated")
    ap.add_argument("--child", nargs=2, metavar=("SETTING", "ENV"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(*a.child, a.steps)))
        return
    from memrl.families import load_family

    starts = {
        "MinAtar": load_family("experience_replay", "default").stream.dqn.learning_starts,
        "before": BEFORE["learning_starts"],
    }
    starts["engine"] = starts["MinAtar"]
    with open("/proc/cpuinfo") as f:
        cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "?")
    print(f"{cpu}; {a.steps} steps a run, bound to core {a.core}, 1 torch thread")
    print(f"{'round':>5} {'game':<26} {'setting':<8} {'random/s':>9} {'updating/s':>10} price")
    for r in range(a.rounds):
        for env_id in GAMES:
            for setting in a.settings.split(","):
                out = subprocess.run(
                    [sys.executable, __file__, "--steps", str(a.steps), "--child", setting, env_id],
                    capture_output=True,
                    text=True,
                    check=True,
                    preexec_fn=lambda: os.sched_setaffinity(0, {a.core}),
                )
                rate = json.loads(out.stdout.strip().splitlines()[-1])
                s = starts[setting]
                price = s / rate["random"] + (a.price - s) / rate["updating"]
                print(
                    f"{r:>5} {env_id:<26} {setting:<8} {rate['random']:>9.0f} "
                    f"{rate['updating']:>10.0f} {price:,.0f} core-s at {a.price:,} steps",
                    flush=True,
                )


if __name__ == "__main__":
    main()
