"""Recurrent SAC env-steps/s against SB3's MLP SAC on Pendulum, measured in this run.

Both make one gradient update per environment step after ``--learning-starts``
random steps (the papers' ratio). Recurrent SAC sees Pendulum-V (velocity only)
through a memory core and trains on windows of ``--seq-len`` steps; SB3 SAC sees
the full state with its default 256x256 networks and batch 256.

    python benchmarks/recurrent_sac.py [--steps 2000] [--core gru] [--hidden 64] [--seq-len 32] [--batch 16]
"""

from __future__ import annotations

import argparse
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--learning-starts", type=int, default=500)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--seq-len", type=int, default=32)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--cores", default="gru,lstm,ffm")
    ap.add_argument("--ffm-memory", type=int, default=8, help="FFM traces m (paper 32)")
    ap.add_argument("--ffm-context", type=int, default=4, help="FFM frequencies c (paper 8)")
    a = ap.parse_args()

    import gymnasium as gym
    from stable_baselines3 import SAC

    from memrl.agents.recurrent_loop import RecurrentParams, train
    from memrl.agents.recurrent_sac import RecurrentSAC
    from memrl.agents.sb3 import silent
    from memrl.envs.pomdp import make_masked
    from memrl.runtime import set_torch_threads, warm_up_blas

    set_torch_threads(1)
    warm_up_blas()  # as the executors do before a job
    t = time.perf_counter()
    silent(
        SAC(
            "MlpPolicy",
            gym.make("Pendulum-v1"),
            learning_starts=a.learning_starts,
            seed=0,
            device="cpu",
        )
    ).learn(a.steps)
    base = a.steps / (time.perf_counter() - t)
    print(f"{a.steps:,} env steps, 1 update/step after {a.learning_starts}, 1 thread")
    print(f"  SB3 SAC (MLP 256x256, batch 256, Pendulum)   {base:7.1f} steps/s   1.00x")
    for core in a.cores.split(","):
        p = RecurrentParams(
            core=core,
            hidden_size=a.hidden,
            shared_encoder=False,
            head=[a.hidden, a.hidden],
            learning_rate=1e-3,
            gamma=0.9,
            tau=0.005,
            buffer_size=100_000,
            seq_len=a.seq_len,
            batch_size=a.batch,
            learning_starts=a.learning_starts,
            train_freq=1,
            gradient_steps=1,
            ffm_memory=a.ffm_memory,
            ffm_context=a.ffm_context,
        )
        t = time.perf_counter()
        train(RecurrentSAC.for_env, lambda _: make_masked("Pendulum-v1", "V"), p, a.steps, seed=0)
        rate = a.steps / (time.perf_counter() - t)
        size = f"m{a.ffm_memory} c{a.ffm_context} h{a.hidden}" if core == "ffm" else f"{a.hidden}"
        label = f"recurrent SAC ({core} {size}, {a.batch}x{a.seq_len}, Pendulum-V)"
        print(f"  {label:<45} {rate:7.1f} steps/s   {rate / base:4.2f}x")


if __name__ == "__main__":
    main()
