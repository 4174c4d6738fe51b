"""What each SB3 lever is worth, measured in this run on this machine (one thread): seconds
per environment step of SB3 DQN on MinAtar Breakout and on CartPole and of SB3 SAC on
Pendulum, with the path before (Adam's default kernels, SB3 re-walking every module on each
``set_training_mode``), with each lever alone and with both (what the jobs run):

- ``fused Adam``: ``policy_kwargs={"optimizer_kwargs": {"fused": True}}`` (SB3's own API);
- ``steady mode``: a policy subclass that switches the modules' training mode only when it
  changes (:func:`memrl.agents.sb3.steady`).

The steady mode changes no arithmetic (the returns must be identical); fused Adam rounds in
a different order, so a run may drift apart from float noise on: the script prints whether
the episode returns are identical with each.

    python benchmarks/sb3_levers.py [--steps 3000] [--rounds 2]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from memrl.agents import sb3_dqn, sb3_sac
from memrl.agents.sb3 import sb3_kwargs, steady
from memrl.envs.registry import make
from memrl.families import load_family
from memrl.runtime import set_torch_threads


def plain_kwargs(hp: Any, seed: int, **overrides: Any) -> dict[str, Any]:
    kwargs = sb3_kwargs(hp, seed, **overrides)
    kwargs["policy_kwargs"].pop("optimizer_kwargs", None)
    return kwargs


LEVERS: dict[str, tuple[Callable, Callable]] = {
    "before": (plain_kwargs, lambda policy: policy),
    "fused Adam": (sb3_kwargs, lambda policy: policy),
    "steady mode": (plain_kwargs, steady),
    "both": (sb3_kwargs, steady),
}


def run(lever: str, train: Callable[[], dict]) -> tuple[float, dict]:
    kwargs, policy = LEVERS[lever]
    trainers = (sb3_dqn, sb3_sac)  # the trainers read these names from their own modules
    saved = [(m.sb3_kwargs, m.steady) for m in trainers]
    for m in trainers:
        m.sb3_kwargs, m.steady = kwargs, policy
    try:
        start = time.perf_counter()
        out = train()
        return time.perf_counter() - start, out
    finally:
        for m, (k, p) in zip(trainers, saved, strict=True):
            m.sb3_kwargs, m.steady = k, p


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=3000, help="DQN's steps (SAC runs a third)")
    ap.add_argument("--rounds", type=int, default=2, help="each lever's best of this many")
    a = ap.parse_args()
    set_torch_threads(1)
    ec = load_family("episodic_control", "default")
    ro = load_family("recurrent_off_policy", "default")
    # the jobs train on almost every step past their replay start: so does the benchmark
    minatar = ec.dqn_for("MinAtar/Breakout-v1").model_copy(update={"learning_starts": 500})
    tasks: dict[str, tuple[int, Callable[[], dict]]] = {
        "DQN · MinAtar Breakout": (
            a.steps,
            lambda: sb3_dqn.dqn_train(partial(make, "MinAtar/Breakout-v1"), minatar, a.steps, 0),
        ),
        "DQN · CartPole": (
            a.steps,
            lambda: sb3_dqn.dqn_train(
                partial(make, "CartPole-v1"), ec.dqn_for("CartPole-v1"), a.steps, 0
            ),
        ),
        "SAC · Pendulum": (
            a.steps // 3,
            lambda: sb3_sac.sac_train(
                partial(make, "memrl/Pendulum-V-v1"), ro.sac, a.steps // 3, 0
            ),
        ),
    }
    for task, (steps, train) in tasks.items():
        run("before", train)  # warm-up: imports, allocator, first kernels
        best: dict[str, float] = {}
        out: dict[str, dict] = {}
        for r in range(a.rounds):  # interleaved, the order reversed every other round
            for lever in list(LEVERS)[:: 1 if r % 2 == 0 else -1]:
                seconds, out[lever] = run(lever, train)
                best[lever] = min(best.get(lever, seconds), seconds)
        base = best["before"]
        ratios = ", ".join(f"{k} {base / t:.2f}x" for k, t in best.items() if k != "before")
        returns = out["before"]["episode_returns"]
        print(
            f"{task}: {base / steps * 1e3:.2f} ms per step before (best of {a.rounds}); "
            f"{ratios}; returns identical with steady mode: "
            f"{out['steady mode']['episode_returns'] == returns}, with fused Adam: "
            f"{out['both']['episode_returns'] == returns}",
            flush=True,
        )


if __name__ == "__main__":
    main()
