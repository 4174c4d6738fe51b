"""memrl's LSTM-PPO against sb3-contrib's RecurrentPPO on CartPole-P (= rl-zoo's
CartPoleNoVel), measured in this run: env-steps/s of each (ratio against sb3-contrib) and
whether their scores agree (the mean return of greedy evaluation episodes after training,
IQM over seeds with 95% CIs: each IQM inside the other's CI).

Both take the zoo's ``ppo_lstm`` hyperparameters from the ``default`` profile; each
(implementation, seed) is one job of the recurrent family, run two at a time (one thread
each).

    python benchmarks/lstm_ppo.py [--steps 8192] [--seeds 5] [--workers 2]
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context


def run(method: str, seed: int, steps: int) -> tuple[str, int, float, float]:
    from memrl.families import load_family
    from memrl.families.recurrent_off_policy import jobs
    from memrl.runtime import set_torch_threads, warm_up_blas

    set_torch_threads(1)
    warm_up_blas()  # as the executors do before a job
    cfg = load_family("recurrent_off_policy", "default")
    t = time.perf_counter()
    job = getattr(jobs, jobs.JOB[jobs.parse_method(method)[0]])
    row = job(
        env_id="memrl/CartPole-P-v1",
        method=method,
        seed=seed,
        total_timesteps=steps,
        hp=cfg.rppo.model_dump(mode="json"),
        eval_episodes=cfg.eval_episodes,
        curve_points=4,
    )
    return method, seed, row["eval_return"], time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=8192)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()

    from memrl.stats.aggregate import iqm_ci

    todo = [(m, s) for s in range(a.seeds) for m in ("RPPO", "PPO-LSTM")]
    with ProcessPoolExecutor(a.workers, mp_context=get_context("spawn")) as pool:
        done = list(pool.map(run, *zip(*todo, strict=True), [a.steps] * len(todo)))
    rows = {m: [(r, sec) for mm, _, r, sec in done if mm == m] for m in ("RPPO", "PPO-LSTM")}
    est = {m: iqm_ci([r for r, _ in v], reps=2000, seed=0) for m, v in rows.items()}
    speed = {m: a.steps * len(v) / sum(sec for _, sec in v) for m, v in rows.items()}
    print(f"CartPole-P, {a.steps:,} env steps x {a.seeds} seeds, 1 thread per job")
    for m, label in (("RPPO", "sb3-contrib RecurrentPPO"), ("PPO-LSTM", "memrl LSTM-PPO")):
        print(
            f"  {label:<26} {speed[m]:7.0f} env-steps/s ({speed[m] / speed['RPPO']:.2f}x)"
            f"   return IQM {est[m]}"
        )
    r, o = est["RPPO"], est["PPO-LSTM"]
    agree = r.ci_low <= o.iqm <= r.ci_high and o.ci_low <= r.iqm <= o.ci_high
    print(f"  scores agree (each IQM inside the other's 95% CI): {'yes' if agree else 'NO'}")


if __name__ == "__main__":
    main()
