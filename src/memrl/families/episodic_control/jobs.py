"""The episodic-control family's jobs: one (env, method, seed) each, plus MFEC at each
aggregation radius. Nothing here knows about claims or plots."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memrl.agents.contract import TrainLog
from memrl.envs.registry import MINATAR_PREFIX, short_env
from memrl.families.episodic_control.params import (
    EpisodicControlParams,
    MFECParams,
    NECParams,
    method_label,
)
from memrl.jobs import JobSpec
from memrl.schema import StrictModel

HERE = "memrl.families.episodic_control.jobs"

# rough core-seconds per env step on one core of the reference CPU, to start the
# longest jobs first (so two workers finish together); only the order matters
_COST = {"NEC": 0.002, "DQN": 0.0008, "MinAtar DQN": 0.001, "MFEC": 0.0003}  # MinAtar's DQN:
# an update every step on the engine, its loop compiled (benchmarks/engine.py, "engine DQN")


def _row(
    env_id: str,
    method: str,
    seed: int,
    t: int,
    hp: dict[str, Any],
    out: TrainLog,
    curve_points: int,
    early_fraction: float,
) -> dict[str, Any]:
    """One run's tidy row: the shared part (:func:`~memrl.agents.contract.log_row`: curve,
    raw episode log), early/late returns and what the agent reported besides."""
    from memrl.agents.contract import log_row
    from memrl.stats.curves import CHECKPOINTS, window_mean

    shared = log_row(out, t, curve_points)
    rets, lens = shared["episode_returns"], shared["episode_lengths"]
    reported = {k: v for k, v in out.items() if k not in ("episode_returns", "episode_lengths")}
    radius = float(hp.get("merge_radius", 0.0))
    return {
        "env": short_env(env_id),
        "env_id": env_id,
        "method": method_label(method, radius),
        "merge_radius": radius,
        "seed": seed,
        "early_return": window_mean(rets, lens, 0, int(early_fraction * t)),
        "late_return": window_mean(rets, lens, int((1 - early_fraction) * t), t),
        **reported,
        **shared,
        "checkpoints": list(CHECKPOINTS),
    }


def _run(
    train: Callable[..., TrainLog],
    params: type[StrictModel],
    env_id: str,
    method: str,
    seed: int,
    total_timesteps: int,
    hp: dict[str, Any],
    curve_points: int,
    early_fraction: float,
) -> dict[str, Any]:
    """Seed everything, then the agent contract's ``train(env_fn, params(**hp),
    total_timesteps, seed, evals)`` on ``env_id`` (``evals.at``: each of
    :data:`~memrl.stats.curves.CHECKPOINTS` but the last, where MFEC records its memory
    size), then its tidy row."""
    from functools import partial

    from memrl.agents.contract import train_seeded
    from memrl.envs.registry import make

    t = total_timesteps
    out = train_seeded(train, params(**hp), partial(make, env_id), t, seed, 0)
    return _row(env_id, method, seed, t, hp, out, curve_points, early_fraction)


def dqn_job(**kw: Any) -> dict[str, Any]:
    """SB3 DQN on one env with one seed; arguments as :func:`_run`'s."""
    from memrl.agents.sb3_dqn import DQNParams, dqn_train

    return _run(dqn_train, DQNParams, **kw)


def minatar_dqn_job(**kw: Any) -> dict[str, Any]:
    """MinAtar's own DQN (Young & Tian 2019) on the engine (:mod:`memrl.engines.minatar_dqn`)
    on one MinAtar game with one seed; arguments as :func:`_run`'s."""
    from memrl.agents.sb3_dqn import MinAtarDQNParams
    from memrl.engines import minatar_dqn  # pins XLA and this process's core first

    return _run(minatar_dqn.train, MinAtarDQNParams, **kw)


def mfec_job(**kw: Any) -> dict[str, Any]:
    """MFEC on one env with one seed; its row adds the keys stored at each of
    :data:`~memrl.stats.curves.CHECKPOINTS` (``memory_sizes``)."""
    from memrl.agents import mfec

    return _run(mfec.train, MFECParams, **kw)


def nec_job(**kw: Any) -> dict[str, Any]:
    """NEC on one env with one seed; arguments as :func:`_run`'s."""
    from memrl.agents import nec

    return _run(nec.train, NECParams, **kw)


def grid(cfg: EpisodicControlParams) -> list[JobSpec]:
    """Every run of the profile, each with only the parameters it reads."""
    out = []
    for e in cfg.envs:
        for m in e.methods:
            radii = [0.0]
            if m == "MFEC" and e.env_id == cfg.aggregation.env_id:
                radii += list(cfg.aggregation.merge_radii)
            for r in radii:
                hp = {"DQN": cfg.dqn_for(e.env_id), "MFEC": cfg.mfec, "NEC": cfg.nec}[m]
                if m == "MFEC":
                    hp = hp.model_copy(update={"merge_radius": r})
                for s in range(cfg.seeds):
                    kw = {
                        "env_id": e.env_id,
                        "method": m,
                        "seed": s,
                        "total_timesteps": e.total_timesteps,
                        "hp": hp.model_dump(mode="json"),
                        "curve_points": cfg.curve_points,
                        "early_fraction": cfg.early_fraction,
                    }
                    label = f"{method_label(m, r)} · {short_env(e.env_id)} · seed {s}"
                    fn, cost, engine = f"{m.lower()}_job", _COST[m], ""
                    if m == "DQN" and e.env_id.startswith(MINATAR_PREFIX):
                        fn, cost, engine = "minatar_dqn_job", _COST["MinAtar DQN"], "xla"
                    cost *= e.total_timesteps
                    out.append(JobSpec(f"{HERE}:{fn}", kw, cost, label=label, engine=engine))
    return out
