"""Env-steps/s of memrl's recurrent agents against SB3's MLP SAC and PPO, and what putting
5 seeds in one process could buy each update (issue 15's levers), measured in this run.

Part 1, agents (1 thread, 1 seed per process, the default profile's hyperparameters):
each agent runs through the family's own job functions (``jobs.JOB``). Off-policy agents
are compared with SB3's MLP SAC, on-policy ones with SB3's MLP PPO. For agents that keep
one seed per process, 5 seeds in a process run one after another, so the rate at 5 seeds
is the rate at 1; part 2 measures what batching them would change.

Part 2, levers (ms per update, one thread): a seed-batched process makes one update
for 5 seeds, so a lever pays when its 5-seed update costs well under 5x the 1-seed one.
- recurrent SAC (LSTM-64, 16 windows of 32 steps, three encoders): 5 seeds' windows
  through one set of modules (batch 80). This is an upper bound: real seeds keep their
  own weights, which the fused LSTM kernel cannot group. Also shown: per-seed weights
  grouped with ``bmm`` (a Python-level LSTM loop), and ``torch.compile`` at 1 seed.
- the MLP case the issue expects to gain more: an SB3-sized SAC critic step (two Q
  nets 64x64, batch 256, Adam) at 1 seed and at 5 seeds stacked with ``bmm``.

    python benchmarks/seeds_per_process.py [--steps 2000] [--ppo-steps 8192] [--skip-agents]
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable

SEEDS = 5


def timed(fn: Callable[[], object], n: int, warmup: int = 5) -> float:
    """Mean ms of ``fn()`` over ``n`` calls after ``warmup``."""
    for _ in range(warmup):
        fn()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t) / n * 1e3


# =========================================================================== part 1: agents
def agents(steps: int, ppo_steps: int) -> None:
    import gymnasium as gym
    from stable_baselines3 import PPO, SAC
    from stable_baselines3.common.env_util import make_vec_env

    from memrl.agents.sb3 import silent
    from memrl.families import load_family
    from memrl.families.recurrent_off_policy import jobs

    cfg = load_family("recurrent_off_policy", "default")

    def rate(fn: Callable[[], object], n: int) -> float:
        t = time.perf_counter()
        fn()
        return n / (time.perf_counter() - t)

    def job(env_id: str, method: str, n: int) -> Callable[[], object]:
        algo = jobs.parse_method(method)[0]
        hp = cfg.rppo if algo in ("RPPO", "PPO") else cfg.agent_params(method)
        run = getattr(jobs, jobs.JOB[algo])
        kw = {"env_id": env_id, "method": method, "seed": 0, "total_timesteps": n}
        return lambda: run(**kw, hp=hp.model_dump(mode="json"), eval_episodes=1, curve_points=4)

    s, r = cfg.sac, cfg.rppo
    sac = rate(
        lambda: silent(
            SAC(
                "MlpPolicy",
                gym.make("Pendulum-v1"),
                learning_rate=s.learning_rate,
                batch_size=s.batch_size,
                learning_starts=s.learning_starts,
                gamma=s.gamma,
                policy_kwargs={"net_arch": s.net_arch},
                seed=0,
                device="cpu",
            )
        ).learn(steps),
        steps,
    )
    ppo = rate(
        lambda: silent(
            PPO(
                "MlpPolicy",
                make_vec_env("CartPole-v1", r.n_envs, seed=0),
                n_steps=r.n_steps,
                batch_size=r.batch_size,
                n_epochs=r.n_epochs,
                learning_rate=r.learning_rate,
                gamma=r.gamma,
                gae_lambda=r.gae_lambda,
                seed=0,
                device="cpu",
            )
        ).learn(ppo_steps),
        ppo_steps,
    )
    rows = [("SB3 SAC (MLP 64x64, full-state Pendulum)", sac, sac)]
    for env_id, method in (
        ("memrl/Pendulum-V-v1", "RSAC-LSTM"),
        ("memrl/Pendulum-V-v1", "RTD3-LSTM"),
        ("popgym/PositionOnlyCartPoleEasy-v0", "SACD-GRU"),
        ("popgym/PositionOnlyCartPoleEasy-v0", "SACD-FFM"),
    ):
        rows.append(
            (f"{method} ({env_id.split('/')[1]})", rate(job(env_id, method, steps), steps), sac)
        )
    rows.append(("SB3 PPO (MLP, full-state CartPole, zoo settings)", ppo, ppo))
    for method in ("PPO-LSTM", "RPPO"):
        rows.append(
            (
                f"{method} (CartPole-P)",
                rate(job("memrl/CartPole-P-v1", method, ppo_steps), ppo_steps),
                ppo,
            )
        )
    print(
        f"Part 1: env-steps/s, 1 thread, off-policy {steps:,} steps (updates after "
        f"{s.learning_starts}), on-policy {ppo_steps:,} steps"
    )
    print(
        f"  {'agent (one seed per process; 5 seeds in one run in turn)':<58} {'steps/s':>8}  vs SB3 MLP"
    )
    for label, v, base in rows:
        print(f"  {label:<58} {v:8.1f}  {v / base:5.2f}x")


# =========================================================================== part 2: levers
def levers(n: int) -> None:
    from types import SimpleNamespace

    import numpy as np
    import torch as th

    from memrl.agents.recurrent_sac import RecurrentSAC
    from memrl.memory.sequence import SequenceReplayBuffer

    def rsac(batch: int, compile_encoders: bool = False) -> Callable[[], object]:
        th.manual_seed(0)
        p = SimpleNamespace(
            core="lstm",
            hidden_size=64,
            shared_encoder=False,
            head=[64, 64],
            learning_rate=1e-3,
            gamma=0.9,
            tau=0.005,
            seq_len=32,
            ffm_memory=8,
            ffm_context=4,
        )
        agent = RecurrentSAC(2, 1, p)
        if compile_encoders:
            for m in (agent.critic_encoder, agent.actor_encoder, agent.critic_target[0]):
                m.forward = th.compile(m.forward, dynamic=False)
        buf = SequenceReplayBuffer(10_000, 32, seed=0)
        rng = np.random.default_rng(0)
        for _ in range(10):
            buf.add_episode(
                rng.normal(size=(201, 2)).astype(np.float32),
                rng.uniform(-1, 1, (200, 1)).astype(np.float32),
                rng.normal(size=200),
                False,
            )
        return lambda: agent.update(buf.sample(batch))

    def grouped_lstm(seeds: int, batch: int = 16, steps: int = 33, h: int = 64):
        """Per-seed LSTM weights, one bmm per step for all seeds (forward + backward)."""
        w_ih = th.randn(seeds, h, 4 * h, requires_grad=True)
        w_hh = (0.1 * th.randn(seeds, h, 4 * h)).requires_grad_()
        b = th.zeros(seeds, 1, 4 * h, requires_grad=True)
        x = th.randn(seeds, batch * steps, h)

        def step() -> None:
            xw = th.baddbmm(b, x, w_ih).view(seeds, batch, steps, 4 * h)
            hid, cell, out = x.new_zeros(seeds, batch, h), x.new_zeros(seeds, batch, h), []
            for t in range(steps):
                i, f, g, o = th.baddbmm(xw[:, :, t], hid, w_hh).chunk(4, -1)
                cell = th.sigmoid(f) * cell + th.sigmoid(i) * th.tanh(g)
                hid = th.sigmoid(o) * th.tanh(cell)
                out.append(hid)
            th.stack(out, 2).sum().backward()

        return step

    def fused_lstm(batch: int, steps: int = 33, h: int = 64):
        lstm = th.nn.LSTM(h, h, batch_first=True)
        x = th.randn(batch, steps, h)
        return lambda: lstm(x)[0].sum().backward()

    def mlp_critic(seeds: int, batch: int = 256, width: int = 64, inp: int = 4):
        """Two Q nets (inp -> 64 -> 64 -> 1) per seed, stacked: one Adam step on an MSE."""
        shapes = [(inp, width), (width, width), (width, 1)]
        ws = [th.nn.Parameter(0.1 * th.randn(2 * seeds, i, o)) for i, o in shapes]
        bs = [th.nn.Parameter(th.zeros(2 * seeds, 1, o)) for _, o in shapes]
        opt = th.optim.Adam([*ws, *bs], lr=1e-3)
        x, y = th.randn(2 * seeds, batch, inp), th.randn(2 * seeds, batch, 1)

        def step() -> None:
            z = x
            for k, (w, b) in enumerate(zip(ws, bs, strict=True)):
                z = th.baddbmm(b, z, w)
                z = th.relu(z) if k < len(ws) - 1 else z
            loss = ((z - y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()

        return step

    one = timed(rsac(16), n)
    print(
        f"\nPart 2: ms per update, 1 thread ({SEEDS} seeds per process pays when its "
        f"update costs well under {SEEDS}x one seed's)"
    )
    print(f"  {'':<62} {'ms':>7} {'per seed':>9}  vs 1 seed")

    def show(label: str, ms: float, seeds: int, base: float) -> None:
        print(f"  {label:<62} {ms:7.2f} {ms / seeds:9.2f}  {base / (ms / seeds):5.2f}x")

    show("recurrent SAC update, 1 seed (16x32 windows, LSTM-64)", one, 1, one)
    show(
        f"  {SEEDS} seeds through one set of modules (upper bound)",
        timed(rsac(16 * SEEDS), n // 2),
        SEEDS,
        one,
    )
    show(
        "  torch.compile of the three encoders, 1 seed", timed(rsac(16, True), n, warmup=10), 1, one
    )
    lstm1 = timed(fused_lstm(16), n)
    show("LSTM-64 forward+backward, 1 seed (fused nn.LSTM, oneDNN)", lstm1, 1, lstm1)
    show(
        f"  {SEEDS} seeds, one set of weights (fused, batch 80)",
        timed(fused_lstm(16 * SEEDS), n),
        SEEDS,
        lstm1,
    )
    show(
        f"  {SEEDS} seeds, own weights grouped with bmm",
        timed(grouped_lstm(SEEDS), n // 2),
        SEEDS,
        lstm1,
    )
    with warnings.catch_warnings():  # oneDNN's flags warn about TF32 on Intel GPUs
        warnings.simplefilter("ignore")
        with th.backends.mkldnn.flags(enabled=False):
            show("  1 seed, fused nn.LSTM without oneDNN", timed(fused_lstm(16), n), 1, lstm1)
    mlp1 = timed(mlp_critic(1), n)
    show("SB3-sized SAC critic step, 1 seed (2 Q nets 64x64, batch 256)", mlp1, 1, mlp1)
    show(f"  {SEEDS} seeds stacked with bmm", timed(mlp_critic(SEEDS), n), SEEDS, mlp1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=2000, help="off-policy env steps per agent")
    ap.add_argument("--ppo-steps", type=int, default=8192, help="on-policy env steps per agent")
    ap.add_argument("--updates", type=int, default=200, help="timed updates per lever")
    ap.add_argument("--skip-agents", action="store_true", help="part 2 only")
    a = ap.parse_args()

    from memrl.runtime import set_torch_threads

    set_torch_threads(1)
    if not a.skip_agents:
        agents(a.steps, a.ppo_steps)
    levers(a.updates)


if __name__ == "__main__":
    main()
