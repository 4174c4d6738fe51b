"""The experience-replay family's jobs: one (claim's configuration, seed) each, for
Q-learning with replay, the Blind Cliffwalk, DQN vs DQN+PER, HER bit flipping and Replay
across Experiments. Each row says which ``kind`` it is. Nothing here knows about claims."""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from memrl.families.experience_replay.params import (
    RAE_CONDITIONS,
    ExperienceReplayParams,
    q_label,
    q_replay_configs,
)
from memrl.jobs import JobSpec
from memrl.stats.curves import CHECKPOINTS

HERE = "memrl.families.experience_replay.jobs"


def q_replay_job(seed: int, replay_count: int, replay_every: int, p: dict[str, Any]) -> dict:
    """Tabular Q-learning with ``replay_count`` replays every ``replay_every`` steps on the
    rare-reward chain: its error to Q* along training."""
    from memrl.agents.tabular_replay import q_learning_with_replay
    from memrl.envs.tabular import rare_reward_chain

    mdp = rare_reward_chain(p["n_states"], p["p_forward"], p["gamma"])
    res = q_learning_with_replay(
        mdp, p["env_steps"], replay_count, replay_every, p["lr_exponent"], p["eval_every"], seed
    )
    return {
        "kind": "q_replay",
        "seed": seed,
        "replay_count": replay_count,
        "replay_every": replay_every,
        "config": q_label(replay_count, replay_every),
        "steps": res["steps"].tolist(),
        "error": res["error"].tolist(),
        "final_error": float(res["error"][-1]),
    }


def cliffwalk_job(seed: int, n: int, method: str, p: dict[str, Any]) -> dict[str, Any]:
    """Replay updates until the Blind Cliffwalk with ``n`` states is learnt."""
    from memrl.agents.tabular_replay import cliffwalk_updates_to_learn

    updates = cliffwalk_updates_to_learn(
        n, method, p["lr"], p["alpha"], p["epsilon"], p["mse_threshold"], p["max_updates"], seed
    )
    return {
        "kind": "cliffwalk",
        "seed": seed,
        "n_states": n,
        "memory_size": 2 * (2**n - 1),
        "method": method,
        "updates": updates,
        "censored": updates >= p["max_updates"],
    }


def per_dqn_job(seed: int, prioritized: bool, p: dict[str, Any]) -> dict[str, Any]:
    """SB3 DQN with uniform or prioritized replay (the paper's step size x ``lr_scale``)."""
    from memrl.agents.contract import Evals, log_row
    from memrl.agents.sb3_dqn import DQNParams, per_dqn_train
    from memrl.envs.registry import make
    from memrl.runtime import seed_everything

    seed_everything(seed)
    d = DQNParams(**p["dqn"])
    if prioritized:
        d = d.model_copy(update={"learning_rate": d.learning_rate * p["lr_scale"]})
    per = {"alpha": p["alpha"], "beta0": p["beta0"]} if prioritized else None
    steps = p["total_timesteps"]
    env_fn = partial(make, p["env_id"])
    out = per_dqn_train(env_fn, d, steps, seed, Evals(p["eval_episodes"]), per=per)
    return {
        "kind": "per_dqn",
        "seed": seed,
        "method": "DQN+PER" if prioritized else "DQN",
        "final_return": float(np.mean(out["eval_returns"])),
        **log_row(out, steps, 20),
    }


def her_job(seed: int, n_bits: int, her: bool, p: dict[str, Any]) -> dict[str, Any]:
    """SB3 DQN with or without HER on ``n_bits`` bit flipping: success after training and
    at each of :data:`~memrl.stats.curves.CHECKPOINTS` of its budget."""
    from memrl.agents.sb3_dqn import DQNParams, her_dqn_success
    from memrl.runtime import seed_everything

    seed_everything(seed)
    her_kw = None
    if her:
        her_kw = {
            "n_sampled_goal": p["n_sampled_goal"],
            "goal_selection_strategy": p["goal_selection_strategy"],
        }
    steps = p["steps_per_bit"] * n_bits
    dqn = DQNParams(**p["dqn"])
    if dqn.train_freq_unit == "episode":  # the paper's cycle: the target moves once per cycle
        dqn = dqn.model_copy(update={"target_update_interval": dqn.train_freq * n_bits})
    success = her_dqn_success(
        n_bits,
        dqn,
        her_kw,
        steps,
        seed,
        p["eval_episodes"],
        [int(f * steps) for f in CHECKPOINTS[:-1]],
    )
    return {
        "kind": "her",
        "seed": seed,
        "n_bits": n_bits,
        "method": "DQN+HER" if her else "DQN",
        "success": success[-1],
        "checkpoints": list(CHECKPOINTS),
        "checkpoint_success": success,
    }


def prior_subset(prior: Any, condition: str, p: dict[str, Any], seed: int) -> Any:
    """The prior transitions a RaE condition may replay."""
    n = len(prior)
    if condition == "RaE (all prior data)":
        return prior
    if condition == "RaE (early, low-quality data)":
        return prior.subset(slice(0, max(1, int(p["early_fraction"] * n))))
    if condition == "RaE (small data)":
        rng = np.random.default_rng(seed)
        idx = np.sort(rng.choice(n, size=max(1, int(p["small_fraction"] * n)), replace=False))
        return prior.subset(idx)
    raise ValueError(f"unknown RaE condition '{condition}'")


def rae_job(seed: int, condition: str, p: dict[str, Any], prior_path: str) -> dict[str, Any]:
    """SB3 SAC from scratch or replaying an earlier experiment's data (``prior_path``, relative
    to the repo root) at a fixed ratio."""
    from memrl.agents.contract import Evals, log_row
    from memrl.agents.sb3_sac import SACParams, sac_with_prior_train
    from memrl.envs.registry import make
    from memrl.memory.mixed import Transitions
    from memrl.runtime import repo_root, seed_everything

    seed_everything(seed)
    prior = None
    if condition != "scratch":
        prior = prior_subset(Transitions.load(str(repo_root() / prior_path)), condition, p, seed)
    steps = p["total_timesteps"]
    out = sac_with_prior_train(
        partial(make, p["env_id"]),
        SACParams(**p["sac"]),
        steps,
        seed,
        Evals(p["eval_episodes"]),
        prior=prior,
        prior_fraction=p["prior_fraction"],
    )
    return {
        "kind": "rae",
        "seed": seed,
        "condition": condition,
        "final_return": float(np.mean(out["eval_returns"])),
        **log_row(out, steps, 10),
    }


STREAM, DQN1, DQN_REPLAY = "stream Q(λ)", "DQN1", "DQN"  # the streaming claims' methods
# core-s per env step on the engine (the mean of the two games'), each run one compiled loop:
# benchmarks/engine.py --against cf2eb7b (the per-step engine), one run each arm on an Intel
# Xeon (family 6 model 207, 2 cores) at load 3.4-4.2 (another job on both cores), Breakout /
# SpaceInvaders: stream Q 4,158 / 3,558 steps per core-s (2.0x / 2.6x: 2,074 / 1,374), DQN1
# 3,836 / 2,828 (3.1x / 2.8x: 1,253 / 1,001); unloaded, stream Q ~5,800 (one process);
# before the loop was compiled (2026-12-02, load ~2-6): stream Q 2,122 / 1,775, DQN1 1,162 /
# 1,217; torch stream Q 326 / 368, SB3 DQN1 211 / 217 (load ~11)
ENGINE_COST = {STREAM: 2.6e-4, DQN1: 3.1e-4}


def stream_job(seed: int, env_id: str, method: str, p: dict[str, Any]) -> dict[str, Any]:
    """One streaming-claim run on a MinAtar game: stream Q(lambda), DQN with a buffer of 1 and
    batch 1 (DQN1), or DQN with replay; its training curve and the mean training return of
    the last ``late_fraction`` of its steps (the paper's curves are training returns). DQN
    with replay is MinAtar's own DQN, on the engine (:mod:`memrl.engines.minatar_dqn`)."""
    from memrl.agents.sb3_dqn import DQNParams, MinAtarDQNParams, dqn_train
    from memrl.agents.stream_q import StreamQParams
    from memrl.agents.stream_q import train as stream_train
    from memrl.envs.registry import make
    from memrl.runtime import seed_everything

    seed_everything(seed)
    steps, env_fn = p["total_timesteps"], partial(make, env_id)
    if method == STREAM:
        out = stream_train(env_fn, StreamQParams(**p["stream_q"]), steps, seed)
    elif method == DQN1:
        out = dqn_train(env_fn, DQNParams(**p["dqn1"]), steps, seed)
    else:
        from memrl.engines import minatar_dqn  # pins XLA and this process's core first

        out = minatar_dqn.train(env_fn, MinAtarDQNParams(**p["dqn"]), steps, seed)
    return stream_row(out, seed, env_id, method, p)


def stream_engine_job(seed: int, env_id: str, method: str, p: dict[str, Any]) -> dict[str, Any]:
    """:func:`stream_job`'s stream Q(lambda) or DQN1 run on the accelerated engine
    (:mod:`memrl.engines`: the same updates, each run one compiled loop on the ported game;
    the job's spec says ``engine="xla"``, so its process is pinned before jax loads)."""
    from memrl.agents.sb3_dqn import DQNParams
    from memrl.agents.stream_q import StreamQParams
    from memrl.envs.registry import make
    from memrl.runtime import seed_everything

    seed_everything(seed)
    steps, env_fn = p["total_timesteps"], partial(make, env_id)
    if method == STREAM:
        from memrl.engines.stream_q import train

        out = train(env_fn, StreamQParams(**p["stream_q"]), steps, seed)
    elif method == DQN1:
        from memrl.engines.dqn1 import train

        out = train(env_fn, DQNParams(**p["dqn1"]), steps, seed)
    else:
        raise ValueError(f"the engine's streaming arms are {STREAM} and {DQN1}, not {method!r}")
    return stream_row(out, seed, env_id, method, p)


def stream_row(out: Any, seed: int, env_id: str, method: str, p: dict[str, Any]) -> dict:
    """A streaming-claim run's row: its training curve and log, and the mean training return
    of the last ``late_fraction`` of its steps."""
    from memrl.agents.contract import log_row
    from memrl.envs.registry import short_env
    from memrl.stats.curves import window_mean

    steps = p["total_timesteps"]
    row = log_row(out, steps, p["curve_points"])
    late = window_mean(
        row["episode_returns"], row["episode_lengths"], int((1 - p["late_fraction"]) * steps), steps
    )
    return {
        "kind": "stream",
        "seed": seed,
        "env": short_env(env_id),
        "env_id": env_id,
        "method": method,
        "late_return": late,
        **row,
    }


def preflight(cfg: ExperienceReplayParams) -> None:
    """Fail before any job if the prior experiment's data is missing."""
    from memrl.memory.mixed import Transitions
    from memrl.runtime import repo_root

    Transitions.load(str(repo_root() / cfg.prior_data.path))


def grid(cfg: ExperienceReplayParams) -> list[JobSpec]:
    """Every job of the profile, each with only the parameters it reads; rough costs (core-s)
    start the longest first."""
    seeds = range(cfg.seeds)
    q = cfg.q_replay.model_dump(mode="json", exclude={"replay_counts", "replay_every"})
    cw = cfg.cliffwalk.model_dump(mode="json", exclude={"n_states"})
    per = cfg.per_dqn.model_dump(mode="json")
    her = cfg.her.model_dump(mode="json", exclude={"n_bits", "success_threshold"})
    rae = cfg.rae.model_dump(mode="json")
    h, r, pd_ = cfg.her, cfg.rae, cfg.per_dqn

    def job(fn: str, cost: float, label: str, engine: str = "", **kw: Any) -> JobSpec:
        return JobSpec(f"{HERE}:{fn}", kw, cost, label=label, engine=engine)

    out = []
    for k, f in q_replay_configs(cfg.q_replay):
        out += [
            job(
                "q_replay_job",
                1,
                f"Q-learning {q_label(k, f)} · seed {s}",
                seed=s,
                replay_count=k,
                replay_every=f,
                p=q,
            )
            for s in seeds
        ]
    for n in cfg.cliffwalk.n_states:
        for m in ("oracle", "prioritized", "uniform"):
            out += [
                job(
                    "cliffwalk_job",
                    2.0**n / 100,
                    f"Cliffwalk n={n} {m} · seed {s}",
                    seed=s,
                    n=n,
                    method=m,
                    p=cw,
                )
                for s in seeds
            ]
    for pr in (False, True):
        out += [
            job(
                "per_dqn_job",
                pd_.total_timesteps / 700,
                f"{'DQN+PER' if pr else 'DQN'} · seed {s}",
                seed=s,
                prioritized=pr,
                p=per,
            )
            for s in seeds
        ]
    for n in sorted(h.n_bits, reverse=True):
        for use in (True, False):
            out += [
                job(
                    "her_job",
                    h.steps_per_bit * n / 1300,
                    f"{'DQN+HER' if use else 'DQN'} n={n} · seed {s}",
                    seed=s,
                    n_bits=n,
                    her=use,
                    p=her,
                )
                for s in seeds
            ]
    st = cfg.stream
    if st is not None:
        common = st.model_dump(
            mode="json", include={"total_timesteps", "curve_points", "late_fraction"}
        )
        blocks = {STREAM: "stream_q", DQN1: "dqn1", DQN_REPLAY: "dqn"}
        # s per step, measured (DQN with replay: MinAtar's on the engine, its loop compiled,
        # benchmarks/engine.py --against 974f73a on an AMD EPYC, family 26, one core: 1,107 /
        # 972 updating steps per core-s on Breakout / SpaceInvaders, 1.74x / 1.79x the engine
        # with one compiled update a step)
        cost = {STREAM: 2.0e-3, DQN1: 3.9e-3, DQN_REPLAY: 1.0e-3}
        for env_id in st.env_ids:
            for m, block in blocks.items():
                p = common | {block: getattr(st, block).model_dump(mode="json")}
                if m == DQN_REPLAY:  # a budget of its own (issue 73: 1M of the paper's 5M)
                    p["total_timesteps"] = st.dqn_timesteps
                fn, engine = "stream_job", "xla" if m == DQN_REPLAY else ""
                if m in ENGINE_COST and st.engine == "xla":  # stream Q(lambda), DQN1
                    fn, engine, cost[m] = "stream_engine_job", "xla", ENGINE_COST[m]
                out += [
                    job(
                        fn,
                        cost[m] * p["total_timesteps"],
                        f"{m} · {env_id} · seed {s}",
                        engine=engine,
                        seed=s,
                        env_id=env_id,
                        method=m,
                        p=p,
                    )
                    for s in range(st.seeds)
                ]
    for c in RAE_CONDITIONS:
        out += [
            job(
                "rae_job",
                r.total_timesteps / 50,
                f"{c} · seed {s}",
                seed=s,
                condition=c,
                p=rae,
                prior_path=cfg.prior_data.path,
            )
            for s in seeds
        ]
    return out
