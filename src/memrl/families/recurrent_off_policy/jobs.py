"""The recurrent off-policy family's jobs: one (env or T-Maze length, method, seed) each,
plus the memory cores' timing. Nothing here knows about claims or plots.

Methods are named ``SAC`` (SB3, an MLP with no memory), ``SAC-prev`` (the same MLP reading
``[o_t, a_{t-1}, r_{t-1}]``), ``RPPO`` (sb3-contrib
RecurrentPPO), ``PPO-<core>`` (:mod:`memrl.agents.ppo`: popjaxrl's POPGym PPO on POPGym's
envs; off POPGym ``PPO-LSTM`` is the zoo's LSTM-PPO, :mod:`memrl.agents.lstm_ppo`) or
``<RSAC|RTD3|SACD>-<core>[-shared]`` (:mod:`memrl.agents`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from memrl.agents.contract import TrainLog
from memrl.envs.registry import short_env
from memrl.families.recurrent_off_policy.params import (
    POPGYM,
    RecurrentOffPolicyParams,
    RecurrentParams,
    RecurrentPPOParams,
    parse_method,
)
from memrl.jobs import JobSpec
from memrl.schema import StrictModel

TMAZE_ID = "memrl/PassiveTMaze-v0"
HERE = "memrl.families.recurrent_off_policy.jobs"

# rough core-seconds per env step, to start the longest jobs first; only the order matters
_COST = {
    "RSAC": 0.020,
    "RTD3": 0.014,
    "SACD": 0.006,
    "SAC": 0.008,
    "SAC-prev": 0.008,
    "RPPO": 0.004,
    "PPO": 0.0015,
}
# PPO-<core> on POPGym at the default's sizes: 1 / (env steps per core-second), medians of
# benchmarks/popgym_ppo.py (Intel Xeon, 2026-12-01, a loaded machine: GRU 1,719, LSTM 1,525,
# FFM 1,387, S5 1,685); the window core as the GRU
POPGYM_COST = {
    "gru": 1 / 1719,
    "lstm": 1 / 1525,
    "ffm": 1 / 1387,
    "s5": 1 / 1685,
    "window": 1 / 1719,
}


def _row(
    env_id: str,
    method: str,
    seed: int,
    t: int,
    out: TrainLog,
    curve_points: int,
    length: int = 0,
) -> dict[str, Any]:
    """One run's tidy row from a trainer's log (:func:`~memrl.agents.contract.log_row`), its
    final evaluation and the greedy policy's evaluations at each of
    :data:`~memrl.stats.curves.CHECKPOINTS`."""
    from memrl.agents.contract import log_row
    from memrl.envs.pomdp import PassiveTMaze
    from memrl.stats.curves import CHECKPOINTS, window_mean

    rets, lens, evals = out["episode_returns"], out["episode_lengths"], out["eval_returns"]

    def score(returns: list[float]) -> float:  # T-Maze: the success rate
        return PassiveTMaze.success_rate(returns) if length else float(np.mean(returns))

    row = {
        "env": f"T-Maze L={length}" if length else short_env(env_id),
        "env_id": env_id,
        "method": method,
        "length": length,
        "seed": seed,
        **log_row(out, t, curve_points),
        "eval_return": float(np.mean(evals)),
        "late_train_return": window_mean(rets, lens, int(0.8 * t), t),  # last 20% of training
        "checkpoints": list(CHECKPOINTS),
        "checkpoint_eval": [score(r) for r in out["checkpoint_returns"]] + [score(evals)],
    }
    if length:
        row["success"] = score(evals)
    return row


def _run(
    train: Callable[..., TrainLog],
    params: type[StrictModel],
    env_id: str,
    method: str,
    seed: int,
    total_timesteps: int,
    hp: dict[str, Any],
    eval_episodes: int,
    curve_points: int,
    length: int = 0,
    wrap: Callable[[Any], Any] | None = None,
) -> dict[str, Any]:
    """What every job of the family does: seed everything, then the agent contract's
    ``train(env_fn, params(**hp), total_timesteps, seed, evals)`` on ``env_id`` (a T-Maze of
    ``length``; ``wrap``: a wrapper around each env), checkpoint evaluations at each of
    :data:`~memrl.stats.curves.CHECKPOINTS` but the last (whose value is the final
    evaluation), then its tidy row (see :func:`_row`)."""
    from memrl.agents.contract import train_seeded
    from memrl.envs.registry import make

    def env_fn(env_seed: int | None) -> Any:
        env = make(env_id, env_seed, **({"length": length} if length else {}))
        return wrap(env) if wrap is not None else env

    t = total_timesteps
    out = train_seeded(train, params(**hp), env_fn, t, seed, eval_episodes)
    return _row(env_id, method, seed, t, out, curve_points, length)


def sac_job(**kw: Any) -> dict[str, Any]:
    """SB3 SAC (an MLP, no memory) on one env with one seed; arguments as :func:`_run`'s."""
    from memrl.agents.sb3_sac import SACParams, sac_train

    return _run(sac_train, SACParams, **kw)


def sac_prev_job(**kw: Any) -> dict[str, Any]:
    """SB3 SAC reading the recurrent agents' per-step inputs ``[o_t, a_{t-1}, r_{t-1}]``
    (an MLP, no memory: separates "memory helps" from "these inputs help")."""
    from memrl.agents.sb3_sac import SACParams, sac_train
    from memrl.envs.pomdp import PreviousActionReward

    return _run(sac_train, SACParams, wrap=PreviousActionReward, **kw)


def rppo_job(**kw: Any) -> dict[str, Any]:
    """sb3-contrib RecurrentPPO on one env with one seed; arguments as :func:`_run`'s."""
    from memrl.agents.sb3_rppo import rppo_train

    return _run(rppo_train, RecurrentPPOParams, **kw)


def ppo_job(**kw: Any) -> dict[str, Any]:
    """:mod:`memrl.agents.lstm_ppo` (RecurrentPPO's algorithm, faster) on one env with one
    seed; arguments as :func:`_run`'s."""
    from memrl.agents import lstm_ppo

    return _run(lstm_ppo.train, RecurrentPPOParams, **kw)


def _recurrent(agent_for: Any) -> Callable[..., TrainLog]:
    """The one recurrent ``train`` (:func:`memrl.agents.recurrent_loop.train`) for the agent
    ``agent_for`` builds."""
    from memrl.agents import recurrent_loop

    return partial(recurrent_loop.train, agent_for)


def rsac_job(**kw: Any) -> dict[str, Any]:
    """Recurrent SAC (:mod:`memrl.agents.recurrent_sac`); arguments as :func:`_run`'s."""
    from memrl.agents.recurrent_sac import RecurrentSAC

    return _run(_recurrent(RecurrentSAC.for_env), RecurrentParams, **kw)


def rtd3_job(**kw: Any) -> dict[str, Any]:
    """Recurrent TD3 (:mod:`memrl.agents.recurrent_td3`); arguments as :func:`_run`'s."""
    from memrl.agents.recurrent_td3 import RecurrentTD3

    return _run(_recurrent(RecurrentTD3.for_env), RecurrentParams, **kw)


def sacd_job(**kw: Any) -> dict[str, Any]:
    """Recurrent SAC-discrete (:mod:`memrl.agents.recurrent_sac_discrete`); arguments as
    :func:`_run`'s."""
    from memrl.agents.recurrent_sac_discrete import RecurrentSACDiscrete

    return _run(_recurrent(RecurrentSACDiscrete.for_env), RecurrentParams, **kw)


def popgym_ppo_job(**kw: Any) -> dict[str, Any]:
    """:mod:`memrl.agents.ppo` (popjaxrl's POPGym PPO, any core) on one of POPGym's envs with
    one seed; arguments as :func:`_run`'s. The row adds the rollout size (env steps per
    update), by which the analysis groups the training episodes into updates (MMER)."""
    from memrl.agents import ppo

    row = _run(ppo.train, ppo.PPOParams, **kw)
    hp = kw["hp"]
    return row | {"rollout": hp["n_envs"] * hp["n_steps"], "core": hp["core"]}


def ppo_timing(env_id: str, hp: dict[str, Any], cores: list[str], steps: int, repeats: int):
    """Whole PPO training (rollouts and updates, :func:`memrl.agents.ppo.train`) per env
    step for each of ``cores`` on ``env_id`` with the runs' hyperparameters ``hp``: ``repeats
    + 2`` runs of ``steps`` env steps each after one warm-up run, the cores interleaved, one
    thread (ms per env step), and each core's parameter count. Wall-clock: machine-dependent."""
    from functools import partial

    import torch as th

    from memrl.agents import ppo
    from memrl.envs.registry import make
    from memrl.memory.cores import CORES

    env_fn = partial(make, env_id)
    label = {c: f"PPO-{CORES[c].label}" for c in cores}
    rollout = hp["n_envs"] * hp["n_steps"]
    done = -(-steps // rollout) * rollout  # train runs whole rollouts
    ms: dict[str, list[float]] = {label[c]: [] for c in cores}
    threads = th.get_num_threads()
    th.set_num_threads(1)
    try:
        for r in range(repeats + 3):  # the first round warms up (not kept)
            for c in cores:
                p = ppo.PPOParams(**hp | {"core": c})
                start = time.perf_counter()
                ppo.train(env_fn, p, steps, r)
                if r:
                    ms[label[c]].append(1e3 * (time.perf_counter() - start) / done)
    finally:
        th.set_num_threads(threads)
    env = env_fn(0)
    n_act = int(env.action_space.n)
    inp = int(np.prod(env.observation_space.shape)) + (n_act + 1 if hp.get("prev_action") else 0)
    params = {}
    for c in cores:
        net = ppo.ActorCritic(inp, n_act, ppo.PPOParams(**hp | {"core": c}))
        params[f"{label[c]} · per env step"] = sum(q.numel() for q in net.parameters())
    return {"ms": {f"{k} · per env step": v for k, v in ms.items()}, "params": params}


def timing_args(cfg: RecurrentOffPolicyParams) -> dict[str, Any] | None:
    """:func:`ppo_timing`'s arguments (RO-9): the GRU and S5 PPO of the first POPGym env that
    runs both, at its hyperparameters, when the profile times PPO."""
    if cfg.ppo_timing is None or cfg.ppo_popgym is None:
        return None
    both = [e for e in cfg.envs if {"PPO-GRU", "PPO-S5"} <= set(e.methods)]
    if not both:
        return None
    return {
        "env_id": both[0].env_id,
        "hp": cfg.ppo_popgym.model_dump(mode="json"),
        "cores": ["gru", "s5"],
        **cfg.ppo_timing,
    }


JOB = {
    "SAC": "sac_job",
    "SAC-prev": "sac_prev_job",
    "RPPO": "rppo_job",
    "PPO": "ppo_job",
    "RSAC": "rsac_job",
    "RTD3": "rtd3_job",
    "SACD": "sacd_job",
}


def card_job(
    model: str,
    seed: int,
    hp: dict[str, Any],
    train_lengths: list[int],
    episodes: int,
    horizons: list[int],
    eval_episodes: int,
    study: str = "card",
    arm: str = "",
) -> dict[str, Any]:
    """One memory-card run: ``model`` trained by behaviour cloning on the oracle T-Maze runs
    of ``train_lengths`` in ``data/tmaze`` (the first ``episodes`` of each; the same data
    for every seed), then its greedy successes at every corridor length in ``horizons``
    (per episode, and their rate). ``study``: ``card``, or ``truncation`` with ``arm`` its
    arm's name (RO-11's fair test)."""
    from memrl.agents import cloning
    from memrl.agents.offline_policies import OfflineParams, k_kind
    from memrl.envs.tmaze_oracle import ORACLE_DIR, load_oracle
    from memrl.runtime import repo_root, seed_everything

    seed_everything(seed)
    p = OfflineParams(**hp)
    data = load_oracle(repo_root() / ORACLE_DIR, train_lengths, episodes)
    policy, losses = cloning.train(data, p, seed)
    won = {
        str(xi): cloning.successes(policy, xi, eval_episodes, 10**6 * (seed + 1)).tolist()
        for xi in horizons
    }
    return {
        "card": True,
        "study": study,
        "arm": arm,
        "core": model,
        "K": p.context,
        "K_kind": k_kind(model),
        "trained_up_to": max(train_lengths),
        "seed": seed,
        "success": {xi: float(np.mean(w)) for xi, w in won.items()},
        "episodes": won,
        "losses": losses,
        "params": sum(q.numel() for q in policy.parameters()),
    }


def core_timing(
    batch: int,
    steps: int,
    inputs: int,
    hidden: int,
    repeats: int,
    ppo: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Forward + backward time of one training step over a batch of sequences for every memory
    core at the same sizes (the FFM paper's and popjaxrl's: 8 sequences of 1,024 steps, width
    256), and S5's speed claim on fair pairs: S5 against a per-step ``GRUCell`` loop (FFM's
    GRU; popjaxrl scans a GRU cell the same way) at equal depth (1 layer, and 4 as popjaxrl's
    POPGym agent stacks S5), both resetting their state at the same episode starts, on 1 and
    on 2 threads. ``repeats + 2`` timings each (ms) and each core's parameter count; with
    ``ppo`` (:func:`ppo_timing`'s arguments), also whole PPO training per env
    step of each of its cores (RO-9 as the S5 paper times it). Wall-clock: machine-dependent."""
    import torch as th
    from torch import nn

    from memrl.memory.cores import CORES, make_core

    th.manual_seed(0)
    x = th.randn(batch, steps, inputs)
    resets = th.rand(batch, steps) < 1 / 200  # episode starts (popjaxrl's: done flags)
    resets[:, 0] = True
    keep = (~resets).float()[..., None]

    def cell_loop(layers: int) -> tuple[Callable[[], th.Tensor], nn.Module]:
        cells = nn.ModuleList(
            nn.GRUCell(inputs if i == 0 else hidden, hidden) for i in range(layers)
        )

        def run() -> th.Tensor:
            hs, ys = [th.zeros(batch, hidden) for _ in cells], []
            for t in range(steps):
                y = x[:, t]
                for i, cell in enumerate(cells):
                    hs[i] = cell(y, hs[i] * keep[:, t])
                    y = hs[i]
                ys.append(y)
            return th.stack(ys, 1)

        return run, cells

    def core(
        kind: str, reset: bool = False, **kw: Any
    ) -> tuple[Callable[[], th.Tensor], nn.Module]:
        m = make_core(kind, inputs, hidden, **kw)
        extra = (resets,) if reset else ()
        return lambda: m(x, m.initial_state(batch), *extra)[0], m

    gru = nn.GRU(inputs, hidden, batch_first=True)  # torch's own layer: FFM's baseline

    sizes = {"ffm": {"memory_size": 32, "context_size": 4}}  # FFM: its reference's m, c
    # every core as the agents and the card run it, then the baselines
    cores: list[tuple[str, Callable[[], th.Tensor], nn.Module]] = [
        (entry.timed, *core(kind, **sizes.get(kind, {}))) for kind, entry in CORES.items()
    ]
    cores += [
        ("GRUCell loop", *cell_loop(1)),
        ("nn.GRU", lambda: gru(x, th.zeros(1, batch, hidden))[0], gru),
        ("S5 (4 layers)", *core("s5", layers=4)),
    ]
    pairs = [
        (f"{name} · {depth} layer{'s' * (depth > 1)}, resets", fn, m)
        for depth in (1, 4)
        for name, (fn, m) in (
            ("S5", core("s5", reset=True, layers=depth)),
            ("GRUCell loop", cell_loop(depth)),
        )
    ]
    ms: dict[str, list[float]] = {}

    def time_all(todo, suffix: str = "") -> None:
        for name, fn, module in todo:
            fn().sum().backward()  # warm-up
            ms[name + suffix] = []
            for _ in range(repeats + 2):  # at least 3 timings each for a CI
                module.zero_grad(set_to_none=True)
                start = time.perf_counter()
                fn().sum().backward()
                ms[name + suffix].append(1e3 * (time.perf_counter() - start))

    time_all(cores)
    time_all(pairs, " · 1 thread")
    threads = th.get_num_threads()
    th.set_num_threads(2)
    try:
        time_all(pairs, " · 2 threads")
    finally:
        th.set_num_threads(threads)
    params = {name: sum(p.numel() for p in m.parameters()) for name, _, m in [*cores, *pairs]}
    if ppo is not None:
        timed = ppo_timing(**ppo)
        ms |= timed["ms"]
        params |= timed["params"]
    return {"ms": ms, "params": params}


def preflight(cfg: RecurrentOffPolicyParams) -> None:
    """Fail before any job if the memory card's oracle data is missing or lacks a corridor
    or a run it asks for."""
    if cfg.card is not None:
        from memrl.envs.tmaze_oracle import ORACLE_DIR, load_oracle
        from memrl.runtime import repo_root

        c = cfg.card
        got = load_oracle(repo_root() / ORACLE_DIR, c.train_lengths, c.episodes)
        short = [
            L for L, d in zip(c.train_lengths, got, strict=True) if len(d.actions) < c.episodes
        ]
        if short:
            raise ValueError(
                f"card.episodes = {c.episodes}: {ORACLE_DIR} holds fewer runs of corridors {short}"
            )


def grid(cfg: RecurrentOffPolicyParams) -> list[JobSpec]:
    """Every run of the profile (each with only the parameters it reads) and the timing."""

    def spec(env_id: str, method: str, seed: int, steps: int, length: int = 0) -> JobSpec:
        algo, core, _ = parse_method(method)
        job, cost = JOB[algo], _COST[algo]
        if algo == "PPO":
            hp = cfg.ppo_params(method, env_id)
            if env_id.startswith(POPGYM):  # PPO with any core on POPGym's own envs
                job, cost = "popgym_ppo_job", POPGYM_COST[core]
        else:
            hp = {"SAC": cfg.sac, "SAC-prev": cfg.sac, "RPPO": cfg.rppo}.get(
                algo
            ) or cfg.agent_params(method, tmaze=bool(length))
        n_eval = cfg.tmaze.eval_episodes if length else cfg.eval_episodes
        kw = {
            "env_id": env_id,
            "method": method,
            "seed": seed,
            "total_timesteps": steps,
            "hp": hp.model_dump(mode="json"),
            "eval_episodes": n_eval,
            "curve_points": cfg.curve_points,
        }
        if length:
            kw["length"] = length
        where = f"T-Maze L={length}" if length else short_env(env_id)
        return JobSpec(
            f"{HERE}:{job}",
            kw,
            cost * steps,
            label=f"{method} · {where} · seed {seed}",
        )

    # priced like the rest (~40 core-s at the papers' sizes), so an estimate without its
    # published timing stays sane; a huge cost made it first in line and priced it at years
    bench: dict[str, Any] = dict(cfg.benchmark)
    if (ppo := timing_args(cfg)) is not None:
        bench["ppo"] = ppo
    cost = 40.0 + (60.0 if "ppo" in bench else 0.0)  # PPO's: ~50 s at the default's sizes
    timing = JobSpec(f"{HERE}:core_timing", bench, cost, label="memory cores timing", alone=True)
    out = [timing]
    for s in range(max([cfg.seeds] + [e.seeds or 0 for e in cfg.envs])):
        for e in cfg.envs:
            if s < (e.seeds or cfg.seeds):
                out += [spec(e.env_id, m, s, e.total_timesteps) for m in e.methods]
        if s >= cfg.seeds:
            continue
        for length in cfg.tmaze.lengths:
            out += [
                spec(TMAZE_ID, m, s, cfg.tmaze.episodes * length, length) for m in cfg.tmaze.methods
            ]
    if cfg.card is not None:
        c = cfg.card
        for s in range(cfg.seeds):
            for m in c.models:
                out.append(_card_spec(c, m, s, c.offline(m), 20.0, f"card {m} · seed {s}"))
    if cfg.truncation is not None:
        c = cfg.truncation
        for s in range(c.seeds):
            for name, m, hp in c.arms():
                cost = 0.3 * hp.epochs  # pilot: 0.4-1.0 s an epoch on the four corridors
                extra = {"study": "truncation", "arm": name}
                out.append(_card_spec(c, m, s, hp, cost, f"{name} · seed {s}", extra))
    return out


def _card_spec(
    c: Any, model: str, seed: int, hp: Any, cost: float, label: str, extra=None
) -> JobSpec:
    """A :func:`card_job` of a cloned-policy study ``c`` (the card, RO-11's test)."""
    kw = {
        "model": model,
        "seed": seed,
        "hp": hp.model_dump(mode="json"),
        "train_lengths": c.train_lengths,
        "episodes": c.episodes,
        "horizons": c.horizons,
        "eval_episodes": c.eval_episodes,
    }
    return JobSpec(f"{HERE}:card_job", kw | (extra or {}), cost, label=label)
