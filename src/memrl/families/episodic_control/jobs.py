"""The episodic-control family's jobs: one (env, method, seed) each, plus MFEC at each
aggregation radius. Nothing here knows about claims or plots."""

from __future__ import annotations

from typing import Any

import numpy as np

from memrl.families.episodic_control.params import EpisodicControlParams, method_label, short_env
from memrl.jobs import JobSpec

HERE = "memrl.families.episodic_control.jobs"

# rough core-seconds per env step on one core of the reference CPU, to start the
# longest jobs first (so two workers finish together); only the order matters
_COST = {"NEC": 0.002, "DQN": 0.0008, "MFEC": 0.0003}


def run_job(
    env_id: str,
    method: str,
    seed: int,
    total_timesteps: int,
    hp: dict[str, Any],
    curve_points: int,
    early_fraction: float,
) -> dict[str, Any]:
    """Train one method (its hyperparameters ``hp``) on one env with one seed; a tidy row
    with its training curve, early/late returns, its raw episode log and (MFEC) the keys
    stored at each of :data:`~memrl.stats.curves.CHECKPOINTS`."""
    from memrl.agents import mfec, nec
    from memrl.agents.sb3_baselines import dqn_train
    from memrl.config import DQNParams
    from memrl.families.episodic_control.params import MFECParams, NECParams
    from memrl.runtime import seed_everything
    from memrl.stats.curves import CHECKPOINTS, episode_curve, window_mean

    seed_everything(seed)
    if method == "DQN":
        out = dqn_train(env_id, DQNParams(**hp), total_timesteps, seed)
    elif method == "MFEC":
        at = [int(f * total_timesteps) for f in CHECKPOINTS[:-1]]
        out = mfec.train(env_id, MFECParams(**hp), total_timesteps, seed, memory_at=at)
        out["memory_sizes"] = [*out["memory_sizes"], out["memory_size"]]
    elif method == "NEC":
        out = nec.train(env_id, NECParams(**hp), total_timesteps, seed)
    else:  # config validation makes this unreachable from params.yaml
        raise ValueError(f"unknown method {method!r}")
    out.pop("seconds", None)  # the store records every job's wall time
    rets, lens = out.pop("episode_returns"), out.pop("episode_lengths")
    t = total_timesteps
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
                    kw = {"env_id": e.env_id, "method": m, "seed": s,
                          "total_timesteps": e.total_timesteps, "hp": hp.model_dump(mode="json"),
                          "curve_points": cfg.curve_points, "early_fraction": cfg.early_fraction}  # fmt: skip
                    label = f"{method_label(m, r)} · {short_env(e.env_id)} · seed {s}"
                    out.append(JobSpec(f"{HERE}:run_job", kw, _COST[m] * e.total_timesteps, label=label))  # fmt: skip
    return out
