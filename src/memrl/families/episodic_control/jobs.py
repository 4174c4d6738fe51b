"""The episodic-control family's jobs: one (env, method, seed) each, plus MFEC at each
aggregation radius. Nothing here knows about claims or plots."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from memrl.envs.registry import short_env
from memrl.families.episodic_control.params import (
    EpisodicControlParams,
    MFECParams,
    NECParams,
    method_label,
)
from memrl.jobs import JobSpec

HERE = "memrl.families.episodic_control.jobs"

# rough core-seconds per env step on one core of the reference CPU, to start the
# longest jobs first (so two workers finish together); only the order matters
_COST = {"NEC": 0.002, "DQN": 0.0008, "MFEC": 0.0003}


def _row(
    env_id: str,
    method: str,
    seed: int,
    t: int,
    hp: dict[str, Any],
    out: dict[str, Any],
    curve_points: int,
    early_fraction: float,
) -> dict[str, Any]:
    """One run's tidy row: its training curve, early/late returns, what the agent reported
    and its raw episode log."""
    from memrl.stats.curves import CHECKPOINTS, episode_curve, window_mean

    rets, lens = out.pop("episode_returns"), out.pop("episode_lengths")
    grid = np.linspace(t / curve_points, t, curve_points).astype(int)
    radius = float(hp.get("merge_radius", 0.0))
    return {
        "env": short_env(env_id),
        "env_id": env_id,
        "method": method_label(method, radius),
        "merge_radius": radius,
        "seed": seed,
        "total_timesteps": t,
        "episodes": len(rets),
        "early_return": window_mean(rets, lens, 0, int(early_fraction * t)),
        "late_return": window_mean(rets, lens, int((1 - early_fraction) * t), t),
        "mean_return": float(np.mean(rets)) if rets else float("nan"),
        **out,
        "grid": grid.tolist(),
        "curve": episode_curve(rets, lens, grid),
        "checkpoints": list(CHECKPOINTS),
        "episode_returns": rets,  # raw logs: any later window or trend needs no retraining
        "episode_lengths": lens,
    }


def _run(
    train: Callable[[str, dict[str, Any], int, int], dict[str, Any]],
    env_id: str,
    method: str,
    seed: int,
    total_timesteps: int,
    hp: dict[str, Any],
    curve_points: int,
    early_fraction: float,
) -> dict[str, Any]:
    """Seed everything, ``train(env_id, hp, total_timesteps, seed)``, then its tidy row."""
    from memrl.runtime import seed_everything

    seed_everything(seed)
    out = train(env_id, hp, total_timesteps, seed)
    return _row(env_id, method, seed, total_timesteps, hp, out, curve_points, early_fraction)


def dqn_job(**kw: Any) -> dict[str, Any]:
    """SB3 DQN on one env with one seed; arguments as :func:`_run`'s."""
    from memrl.agents.sb3 import DQNParams
    from memrl.agents.sb3_baselines import dqn_train

    return _run(lambda env_id, hp, t, seed: dqn_train(env_id, DQNParams(**hp), t, seed), **kw)


def mfec_job(**kw: Any) -> dict[str, Any]:
    """MFEC on one env with one seed; its row adds the keys stored at each of
    :data:`~memrl.stats.curves.CHECKPOINTS` (``memory_sizes``)."""
    from memrl.agents import mfec
    from memrl.stats.curves import CHECKPOINTS

    def train(env_id: str, hp: dict[str, Any], t: int, seed: int) -> dict[str, Any]:
        at = [int(f * t) for f in CHECKPOINTS[:-1]]
        out = mfec.train(env_id, MFECParams(**hp), t, seed, memory_at=at)
        return {**out, "memory_sizes": [*out["memory_sizes"], out["memory_size"]]}

    return _run(train, **kw)


def nec_job(**kw: Any) -> dict[str, Any]:
    """NEC on one env with one seed; arguments as :func:`_run`'s."""
    from memrl.agents import nec

    return _run(lambda env_id, hp, t, seed: nec.train(env_id, NECParams(**hp), t, seed), **kw)


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
                    out.append(
                        JobSpec(
                            f"{HERE}:{m.lower()}_job", kw, _COST[m] * e.total_timesteps, label=label
                        )
                    )
    return out
