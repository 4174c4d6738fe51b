"""The recurrent off-policy family: memory-based agents on POMDPs.

:func:`run` trains every (env, method, seed) of the profile and every T-Maze
(length, method, seed) in parallel processes, longest jobs first, and returns
one tidy row per run; :func:`benchmark` times FFM against a GRU (the FFM
paper's training-time claim); :func:`claims` turns both into claim rows and
:func:`memrl.stats.curves.iqm_curves` into learning curves (IQM over seeds with 95% CIs). Job functions
are top-level so worker processes can import them.

Methods are named ``SAC`` (SB3, an MLP with no memory), ``RPPO`` (sb3-contrib
RecurrentPPO) or ``<RSAC|RTD3|SACD>-<core>[-shared]`` (:mod:`memrl.agents`).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd

from memrl.config import RuntimeParams
from memrl.params.recurrent_off_policy import RecurrentOffPolicyParams, parse_method
from memrl.runtime import run_jobs, seed_everything
from memrl.stats.aggregate import Estimate, iqm_ci
from memrl.stats.claims import MATCHES, Claim, ClaimResult, Comparison
from memrl.stats.curves import episode_curve, window_mean

FAMILY = "recurrent_off_policy"
TMAZE_ID = "memrl/PassiveTMaze-v0"

# rough core-seconds per 1k env steps, to start the longest jobs first; only the order matters
_COST = {"RSAC": 20.0, "RTD3": 14.0, "SACD": 6.0, "SAC": 8.0, "RPPO": 4.0}


def short_env(env_id: str) -> str:
    """``memrl/Pendulum-V-v1`` -> ``Pendulum-V``; ``popgym/PositionOnlyCartPoleEasy-v0`` ->
    ``PositionOnlyCartPoleEasy``."""
    return env_id.split("/")[-1].rsplit("-v", 1)[0]


def reference(value: float) -> Estimate:
    """A constant from a paper to compare against (``n = 0``: not a run of ours)."""
    return Estimate(float(value), float(value), float(value), 0)


# =========================================================================== one run
def _evaluate(model: Any, env: Any, episodes: int) -> list[float]:
    """Returns of ``episodes`` deterministic episodes of an SB3 model (recurrent or not)."""
    from stable_baselines3.common.evaluation import evaluate_policy

    returns, _ = evaluate_policy(
        model, env, n_eval_episodes=episodes, deterministic=True, return_episode_rewards=True
    )
    return [float(r) for r in returns]


def sac_train(env_id: str, hp: Any, total_steps: int, seed: int, eval_episodes: int) -> dict:
    """SB3 SAC with an MLP: the memoryless baseline."""
    from stable_baselines3 import SAC
    from stable_baselines3.common.monitor import Monitor

    from memrl.agents.sb3 import sb3_kwargs
    from memrl.envs.registry import make

    env = Monitor(make(env_id, seed))
    start = time.perf_counter()
    model = SAC("MlpPolicy", env, **sb3_kwargs(hp, seed)).learn(total_steps)
    seconds = time.perf_counter() - start
    return {
        "episode_returns": list(env.get_episode_rewards()),
        "episode_lengths": list(env.get_episode_lengths()),
        "eval_returns": _evaluate(model, Monitor(make(env_id, seed + 10_000)), eval_episodes),
        "seconds": seconds,
    }


def rppo_train(env_id: str, hp: Any, total_steps: int, seed: int, eval_episodes: int) -> dict:
    """sb3-contrib RecurrentPPO (rl-zoo ``ppo_lstm`` settings) on ``hp.n_envs`` envs.

    Episode "lengths" are the global env steps between successive episode ends, so
    curves share the x-axis of the off-policy runs (env steps summed over envs).
    """
    from sb3_contrib import RecurrentPPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env
    from torch import nn

    from memrl.envs.registry import make
    from memrl.runtime import get_device

    ends: list[int] = []
    returns: list[float] = []

    class Episodes(BaseCallback):
        def _on_step(self) -> bool:
            for info in self.locals["infos"]:
                if "episode" in info:
                    ends.append(self.num_timesteps)
                    returns.append(float(info["episode"]["r"]))
            return True

    venv = make_vec_env(lambda: make(env_id), n_envs=hp.n_envs, seed=seed)
    model = RecurrentPPO(
        "MlpLstmPolicy",
        venv,
        n_steps=hp.n_steps,
        batch_size=hp.batch_size,
        n_epochs=hp.n_epochs,
        learning_rate=hp.learning_rate,
        gamma=hp.gamma,
        gae_lambda=hp.gae_lambda,
        clip_range=hp.clip_range,
        ent_coef=hp.ent_coef,
        policy_kwargs={
            "ortho_init": False,
            "activation_fn": nn.ReLU,
            "lstm_hidden_size": hp.lstm_hidden_size,
            "enable_critic_lstm": True,
            "net_arch": {"pi": list(hp.net_arch), "vf": list(hp.net_arch)},
        },
        seed=seed,
        device=get_device(),
        verbose=0,
    )
    start = time.perf_counter()
    model.learn(total_steps, callback=Episodes())
    seconds = time.perf_counter() - start
    eval_env = make_vec_env(lambda: make(env_id), n_envs=1, seed=seed + 10_000)
    return {
        "episode_returns": returns,
        "episode_lengths": np.diff([0, *ends]).tolist(),
        "eval_returns": _evaluate(model, eval_env, eval_episodes),
        "seconds": seconds,
    }


def recurrent_train(
    env: Any, method: str, p: Any, total_steps: int, seed: int, eval_episodes: int
) -> dict[str, Any]:
    from memrl.agents import recurrent_sac, recurrent_sac_discrete, recurrent_td3

    algo = parse_method(method)[0]
    train = {
        "RSAC": recurrent_sac.train,
        "RTD3": recurrent_td3.train,
        "SACD": recurrent_sac_discrete.train,
    }[algo]
    return train(env, p, total_steps, seed, eval_episodes)


def run_job(
    env_id: str,
    method: str,
    seed: int,
    total_timesteps: int,
    cfg: RecurrentOffPolicyParams,
    length: int = 0,
) -> dict[str, Any]:
    """Train one method on one env (or T-Maze of ``length``) with one seed; a tidy row."""
    from memrl.envs.registry import make

    seed_everything(seed)
    algo = parse_method(method)[0]
    n_eval = cfg.tmaze.eval_episodes if length else cfg.eval_episodes
    if algo == "SAC":
        out = sac_train(env_id, cfg.sac, total_timesteps, seed, n_eval)
    elif algo == "RPPO":
        out = rppo_train(env_id, cfg.rppo, total_timesteps, seed, n_eval)
    else:
        kwargs = {"length": length} if length else {}
        env = make(env_id, seed, **kwargs)
        p = cfg.agent_params(method)
        out = recurrent_train(env, method, p, total_timesteps, seed, n_eval)
    rets, lens = out.pop("episode_returns"), out.pop("episode_lengths")
    evals = out.pop("eval_returns")
    t = total_timesteps
    grid = np.linspace(t / cfg.curve_points, t, cfg.curve_points).astype(int)
    row = {
        "env": f"T-Maze L={length}" if length else short_env(env_id),
        "env_id": env_id,
        "method": method,
        "length": length,
        "seed": seed,
        "total_timesteps": t,
        "episodes": len(rets),
        "eval_return": float(np.mean(evals)),
        "late_train_return": window_mean(rets, lens, int(0.8 * t), t),  # last 20% of training
        **out,
        "grid": grid.tolist(),
        "curve": episode_curve(rets, lens, grid),
    }
    if length:  # success = reward 1 for the turn at the junction
        row["success"] = float(np.mean(np.asarray(evals) >= 1.0))
    return row


def jobs(cfg: RecurrentOffPolicyParams) -> list[dict[str, Any]]:
    """Every run of the profile, the most expensive first."""
    out = []
    for s in range(cfg.seeds):
        for e in cfg.envs:
            for m in e.methods:
                out.append(
                    {"env_id": e.env_id, "method": m, "seed": s,
                     "total_timesteps": e.total_timesteps, "cfg": cfg}
                )  # fmt: skip
        for length in cfg.tmaze.lengths:
            for m in cfg.tmaze.methods:
                out.append(
                    {"env_id": TMAZE_ID, "method": m, "seed": s, "cfg": cfg, "length": length,
                     "total_timesteps": cfg.tmaze.episodes * length}
                )  # fmt: skip

    def cost(j: dict[str, Any]) -> float:
        return _COST[parse_method(j["method"])[0]] * j["total_timesteps"]

    return sorted(out, key=lambda j: -cost(j))


def run(cfg: RecurrentOffPolicyParams, rt: RuntimeParams) -> pd.DataFrame:
    rows = run_jobs(run_job, jobs(cfg), rt.workers, rt.torch_threads, desc="recurrent off-policy")
    df = pd.DataFrame(rows)
    order = {short_env(e.env_id): i for i, e in enumerate(cfg.envs)}
    df = df.assign(_o=df.env.map(order).fillna(len(order) + df.length))
    df = df.sort_values(["_o", "method", "seed"], kind="stable")
    return df.drop(columns="_o").reset_index(drop=True)


# =========================================================================== FFM timing
def benchmark(cfg: RecurrentOffPolicyParams, threads: int = 1) -> pd.DataFrame:
    """Forward + backward time of one training step over a batch of sequences for FFM,
    a per-step ``GRUCell`` loop (the FFM paper's baseline) and fused ``nn.GRU``, at the
    FFM paper's sizes (``cfg.benchmark``); one row per (core, repeat).

    Wall-clock, so machine-dependent: the claim built on it is the one claim of this
    family whose numbers change from machine to machine.
    """
    import torch as th
    from torch import nn

    from memrl.memory.cores import FFMCore
    from memrl.runtime import set_torch_threads

    set_torch_threads(threads)
    b = cfg.benchmark
    th.manual_seed(0)
    x = th.randn(b["batch"], b["steps"], b["inputs"])
    ffm = FFMCore(b["inputs"], b["hidden"], memory_size=32, context_size=4)
    cell = nn.GRUCell(b["inputs"], b["hidden"])
    gru = nn.GRU(b["inputs"], b["hidden"], batch_first=True)

    def run_ffm() -> th.Tensor:
        return ffm(x, ffm.initial_state(b["batch"]))[0]

    def run_cell() -> th.Tensor:
        h, ys = th.zeros(b["batch"], b["hidden"]), []
        for t in range(b["steps"]):
            h = cell(x[:, t], h)
            ys.append(h)
        return th.stack(ys, 1)

    def run_gru() -> th.Tensor:
        return gru(x)[0]

    rows = []
    for name, fn, params in [
        ("FFM", run_ffm, ffm.parameters()),
        ("GRUCell loop", run_cell, cell.parameters()),
        ("nn.GRU (fused)", run_gru, gru.parameters()),
    ]:
        params = list(params)
        fn().sum().backward()  # warm-up
        for r in range(b["repeats"] + 2):  # at least 3 timings each for a CI
            for p in params:
                p.grad = None
            start = time.perf_counter()
            fn().sum().backward()
            rows.append({"core": name, "repeat": r, "ms": 1e3 * (time.perf_counter() - start)})
    return pd.DataFrame(rows)


# =========================================================================== claims
def _est(values, cfg: RecurrentOffPolicyParams, salt: int) -> Estimate:
    return iqm_ci(np.asarray(values, dtype=np.float64), reps=cfg.bootstrap_reps, seed=salt)


def _name(method: str, env: str) -> str:
    return f"{method} · {env}"


def claims(
    cfg: RecurrentOffPolicyParams, df: pd.DataFrame, timing: pd.DataFrame | None = None
) -> list[ClaimResult]:
    """The family's claim rows (verdicts computed by :func:`memrl.stats.claims.verdict`).

    A claim whose methods the profile does not run is left out; ``timing`` (from
    :func:`benchmark`) adds the FFM training-time claim.
    """
    main = df[df.length == 0]
    budgets = {short_env(e.env_id): e.total_timesteps for e in cfg.envs}
    final_q = f"mean return of {cfg.eval_episodes} deterministic-policy episodes after training"
    est = {
        _name(m, e): _est(g.eval_return, cfg, 100 + i)
        for i, ((e, m), g) in enumerate(main.groupby(["env", "method"], sort=False))
    }

    def has(method: str, env: str) -> bool:
        return _name(method, env) in est

    def budget_of(envs: list[str]) -> str:
        return ", ".join(f"{e}: {budgets[e]:,} steps" for e in envs) + f"; {cfg.seeds} seeds"

    rs, rt = cfg.rsac, cfg.rtd3
    scale = (
        f"LSTM {rs.hidden_size} with a {rs.head} head (pomdp-baselines: LSTM 128, [256, 256]); "
        f"windows of {rs.seq_len} steps, batch {rs.batch_size} (papers: whole 200-step "
        f"episodes, 32 per batch); lr {rs.learning_rate:g} (papers 3e-4), gamma {rs.gamma:g}"
    )
    out: list[ClaimResult] = []

    # RO-1: recurrent SAC near-optimal on Pendulum-P/-V where memoryless SAC fails ------------
    pend = [e for e in ("Pendulum-V", "Pendulum-P") if has("RSAC-LSTM", e) and has("SAC", e)]
    if pend:
        names, comps = [], []
        for e in pend:
            thr = cfg.near_optimal.get(f"memrl/{e}-v1")
            names += [_name("RSAC-LSTM", e), _name("SAC", e)]
            comps.append(Comparison(_name("RSAC-LSTM", e), _name("SAC", e)))
            if thr is not None:
                ref = f"near-optimal · {e}"
                est[ref] = reference(thr)
                names.append(ref)
                comps.append(Comparison(_name("RSAC-LSTM", e), ref, MATCHES))
        out.append(
            ClaimResult(
                Claim(
                    FAMILY,
                    "RO-1",
                    "Yang & Nguyen 2021, Recurrent Off-policy Baselines for Memory-based "
                    "Continuous Control",
                    "Sec. 5, Fig. 2 (Pendulum-P / -V learning curves)",
                    "Recurrent SAC reaches near-optimal return on Pendulum with only positions "
                    "(-P) or only velocities (-V) observed, where SAC with an MLP (no memory) fails.",
                    "qualitative: RSAC near-optimal (~-150 to -200) within 50k steps; MLP SAC fails",
                    final_q,
                    True,
                ),
                {k: est[k] for k in names},
                names[0],
                comps,
                budget=budget_of(pend),
                deviations=[
                    scale,
                    f"near-optimal = final return >= {sorted(set(cfg.near_optimal.values()))} "
                    "(our threshold; the paper shows curves, not a number)",
                    "MLP SAC: SB3 with [64, 64], gamma and learning starts as the recurrent agents",
                ],
            )
        )

    # RO-2: RSAC more reliable than RTD3 -------------------------------------------------------
    envs2 = [e for e in budgets if has("RSAC-LSTM", e) and has("RTD3-LSTM", e)]
    if envs2:
        names = [k for e in envs2 for k in (_name("RSAC-LSTM", e), _name("RTD3-LSTM", e))]
        out.append(
            ClaimResult(
                Claim(
                    FAMILY,
                    "RO-2",
                    "Yang & Nguyen 2021, Recurrent Off-policy Baselines for Memory-based "
                    "Continuous Control",
                    "Sec. 5 (discussion of Fig. 2)",
                    "Recurrent SAC is more reliable than recurrent TD3 on the POMDP tasks.",
                    "qualitative",
                    final_q,
                    True,
                ),
                {k: est[k] for k in names},
                names[0],
                [Comparison(_name("RSAC-LSTM", e), _name("RTD3-LSTM", e)) for e in envs2],
                budget=budget_of(envs2),
                deviations=[
                    scale,
                    f"RTD3: exploration noise {rt.expl_noise:g}, target noise {rt.target_noise:g} "
                    f"clipped at {rt.noise_clip:g}, policy delay {rt.policy_delay} (TD3 paper)",
                ],
                coverage_complete=False,
                coverage_note="one task (the paper: several POMDPs)",
            )
        )

    # RO-3: separate encoders beat a shared one --------------------------------------------------
    envs3 = [e for e in budgets if has("RSAC-LSTM", e) and has("RSAC-LSTM-shared", e)]
    if envs3:
        names = [k for e in envs3 for k in (_name("RSAC-LSTM", e), _name("RSAC-LSTM-shared", e))]
        out.append(
            ClaimResult(
                Claim(
                    FAMILY,
                    "RO-3",
                    "Ni et al. 2022, Recurrent Model-Free RL Can Be a Strong Baseline for Many POMDPs",
                    "Sec. 5.1, Fig. 3 (shared vs separate encoders); pomdp-baselines notebook",
                    "Separate actor and critic memory encoders beat one shared encoder.",
                    "qualitative; their TD3-LSTM notebook reaches -183 on Pendulum-V after 31k steps",
                    final_q,
                    True,
                ),
                {k: est[k] for k in names},
                names[0],
                [Comparison(_name("RSAC-LSTM", e), _name("RSAC-LSTM-shared", e)) for e in envs3],
                budget=budget_of(envs3),
                deviations=[
                    scale,
                    "shared: the critic's loss alone trains the encoder (the actor reads it "
                    "detached), as pomdp-baselines' shared variant",
                ],
            )
        )

    # RO-4: RecurrentPPO on CartPole-P (the zoo's CartPoleNoVel) ------------------------------------
    envs4 = [e for e in budgets if has("RPPO", e) and e.startswith("CartPole")]
    if envs4:
        e = envs4[0]
        est["rl-zoo: 500"] = reference(500.0)
        p = cfg.rppo
        out.append(
            ClaimResult(
                Claim(
                    FAMILY,
                    "RO-4",
                    "sb3-contrib RecurrentPPO, rl-baselines3-zoo benchmark",
                    "rl-zoo benchmark.md (CartPoleNoVel-v1, PendulumNoVel-v1)",
                    "RecurrentPPO (LSTM) solves CartPole with velocities hidden (return 500).",
                    "CartPoleNoVel-v1: 500 +- 0 at 100k steps; PendulumNoVel-v1: -218 +- 140 at 100k",
                    final_q,
                    True,
                ),
                {_name("RPPO", e): est[_name("RPPO", e)], "rl-zoo: 500": est["rl-zoo: 500"]},
                _name("RPPO", e),
                [Comparison(_name("RPPO", e), "rl-zoo: 500", MATCHES)],
                budget=budget_of([e]),
                deviations=[
                    f"zoo ppo_lstm hyperparameters ({p.n_envs} envs x {p.n_steps} steps, "
                    f"{p.n_epochs} epochs, LSTM {p.lstm_hidden_size}) with constant lr and clip "
                    "(zoo: linear decay)",
                    "PendulumNoVel left out: RecurrentPPO runs ~100 steps/s here",
                ],
                coverage_complete=budgets[e] >= 100_000,
                coverage_note=f"{budgets[e]:,} of the zoo's 100k steps",
            )
        )

    # RO-5: FFM >= GRU on POPGym ------------------------------------------------------------------------
    envs5 = [e for e in budgets if has("SACD-FFM", e) and has("SACD-GRU", e)]
    if envs5:
        names = [k for e in envs5 for k in (_name("SACD-FFM", e), _name("SACD-GRU", e))]
        sd = cfg.sacd
        out.append(
            ClaimResult(
                Claim(
                    FAMILY,
                    "RO-5",
                    "Morad et al. 2023, Reinforcement Learning with Fast and Forgetful Memory",
                    "Sec. 5, Fig. 3 (POPGym mean return, FFM vs GRU)",
                    "FFM's return matches or beats a GRU's on POPGym tasks.",
                    "FFM best of the memory models on POPGym aggregate; >= GRU on most tasks",
                    final_q + " (POPGym rewards are normalised to [-1, 1] per episode)",
                    True,
                ),
                {k: est[k] for k in names},
                names[0],
                [Comparison(_name("SACD-FFM", e), _name("SACD-GRU", e), MATCHES) for e in envs5],
                budget=budget_of(envs5),
                deviations=[
                    "recurrent SAC-discrete instead of the paper's PPO (both off the shelf in "
                    "our suite; POPGym's own baselines use PPO)",
                    f"hidden {sd.hidden_size}, FFM m={sd.ffm_memory} c={sd.ffm_context} "
                    "(paper: hidden 256, m 32, c 4); "
                    f"{1 / sd.train_freq:g} updates per env step",
                ],
                coverage_complete=False,
                coverage_note=f"{len(envs5)} POPGym task(s) at Easy (paper: all 15, 3 levels)",
            )
        )

    # RO-6: FFM training time --------------------------------------------------------------------------
    if timing is not None and len(timing):
        t_est = {
            c: _est(g.ms, cfg, 600 + i)
            for i, (c, g) in enumerate(timing.groupby("core", sort=False))
        }
        ffm = t_est["FFM"].iqm
        ratios = {c: round(v.iqm / ffm, 2) for c, v in t_est.items() if c != "FFM"}
        b = cfg.benchmark
        out.append(
            ClaimResult(
                Claim(
                    FAMILY,
                    "RO-6",
                    "Morad et al. 2023, Reinforcement Learning with Fast and Forgetful Memory",
                    "Sec. 5 (wall-clock efficiency)",
                    "FFM trains about two orders of magnitude faster than a GRU.",
                    "~100x faster training than their GRU (a per-step GRUCell loop)",
                    "ms per training step (forward + backward over the batch of sequences)",
                    False,
                ),
                t_est,
                "FFM",
                [Comparison("FFM", "GRUCell loop"), Comparison("FFM", "nn.GRU (fused)")],
                budget=(
                    f"batch {b['batch']} x {b['steps']} steps x {b['inputs']} inputs, hidden "
                    f"{b['hidden']}; {b['repeats'] + 2} timings each, 1 CPU thread"
                ),
                deviations=["wall-clock on this machine: the one machine-dependent claim"],
                coverage_complete=min(ratios.values()) >= 50,
                coverage_note="speed-up (IQM time / FFM's): "
                + ", ".join(f"{k} {v}x" for k, v in ratios.items())
                + " (the paper's ~100x is counted only at >= 50x)",
                extra={"speed-up vs FFM": ratios},
            )
        )

    # RO-7: T-Maze, context K vs correlation horizon ----------------------------------------------------
    tm = df[df.length > 0]
    if len(tm):
        window = [m for m in cfg.tmaze.methods if parse_method(m)[1] == "window"]
        recurrent = [m for m in cfg.tmaze.methods if parse_method(m)[1] != "window"]
        K = cfg.sacd.context
        s_est = {
            f"{m} · L={L}": _est(g.success, cfg, 700 + i)
            for i, ((L, m), g) in enumerate(tm.groupby(["length", "method"]))
        }
        s_est["chance"] = reference(0.5)
        comps = []
        for L in cfg.tmaze.lengths:
            for w in window:
                if L <= K:
                    comps.append(Comparison(f"{w} · L={L}", "chance"))
                else:
                    comps += [Comparison(f"{r} · L={L}", f"{w} · L={L}") for r in recurrent]
            comps += [Comparison(f"{r} · L={L}", "chance") for r in recurrent]
        out.append(
            ClaimResult(
                Claim(
                    FAMILY,
                    "RO-7",
                    "Cherepanov et al. 2024, Unraveling the Complexity of Memory in RL Agents",
                    "Sec. 5 (Passive T-Maze, context length K vs correlation horizon xi)",
                    "With correlation horizon xi, an agent whose context K < xi fails while "
                    "one with K >= xi (or a recurrent memory) succeeds: short- vs long-term memory.",
                    "qualitative (success ~1 for K >= xi, ~0.5 (chance) for K < xi)",
                    f"success rate of {cfg.tmaze.eval_episodes} deterministic-policy episodes "
                    "after training",
                    True,
                ),
                s_est,
                f"{recurrent[0]} · L={max(cfg.tmaze.lengths)}" if recurrent else next(iter(s_est)),
                comps,
                budget=f"T-Maze lengths {cfg.tmaze.lengths}, {cfg.tmaze.episodes} episodes each; "
                f"{cfg.seeds} seeds",
                deviations=[
                    f"window = the last K = {K} frames through an MLP (a frame stack) stands in "
                    "for the paper's transformer with context K",
                    "recurrent SAC-discrete for both agents (paper: DTQN / DQN-GPT-2 / DQN-LSTM)",
                ],
            )
        )
    return out


def tmaze_success(cfg: RecurrentOffPolicyParams, df: pd.DataFrame) -> pd.DataFrame:
    """Success rate against T-Maze length per method: IQM over seeds with a 95% CI."""
    rows = []
    tm = df[df.length > 0]
    for i, ((m, L), g) in enumerate(tm.groupby(["method", "length"])):
        e = _est(g.success, cfg, 800 + i)
        rows.append(
            {"method": m, "length": L, "iqm": e.iqm, "ci_low": e.ci_low, "ci_high": e.ci_high}
        )
    return pd.DataFrame(rows)


def plot_data(curve_df: pd.DataFrame, success_df: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Wide tables for ``dvc plots``: per env (step, one IQM column per method) and T-Maze
    success (length, one column per method)."""
    out = {}
    for env, g in curve_df.groupby("env", sort=False):
        if env.startswith("T-Maze"):
            continue
        out[env] = g.pivot(index="step", columns="method", values="iqm").reset_index()
    if len(success_df):
        out["tmaze"] = success_df.pivot(
            index="length", columns="method", values="iqm"
        ).reset_index()
    return out
