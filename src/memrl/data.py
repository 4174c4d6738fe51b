"""Build, fetch and check ``data/`` (tracked by ``data.dvc``) offline.

``data/`` holds what earlier experiments left behind for Replay across
Experiments (the full replay of one SAC run), for the LLM memory family, the
generated WebShop-like catalogue with its task splits and the LoCoMo-like
dialogues, and the oracle Passive T-Maze runs the memory card clones. A fresh
clone gets it with ``make data``, which first pulls it from
the DVC remote inside the repo (``.dvc-store/``) and otherwise rebuilds it
deterministically (:func:`build`); either way its hash must equal the one in
``data.dvc``.

    python -m memrl data ensure   # pull, else rebuild; then verify
    python -m memrl data build    # rebuild from scratch (about half a minute)
    python -m memrl data verify   # data/ matches data.dvc?
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from memrl.families import load_family
from memrl.runtime import (
    atomic_dir,
    atomic_write_text,
    repo_root,
    seed_everything,
    set_torch_threads,
)


def build_prior_experiment(
    out_dir: str | Path, env_id: str, seed: int, total_timesteps: int, sac
) -> Path:
    """Run one SAC experiment and save every transition it collected (in order).

    Written to a temporary folder and renamed into place, so an interrupted
    build leaves nothing half-written.
    """
    import gymnasium as gym
    from stable_baselines3 import SAC
    from stable_baselines3.common.monitor import Monitor

    from memrl.agents.sb3 import sb3_kwargs, silent
    from memrl.memory.mixed import Transitions

    set_torch_threads(1)
    seed_everything(seed)
    env = Monitor(gym.make(env_id))
    model = silent(SAC("MlpPolicy", env, **sb3_kwargs(sac, seed, buffer_size=total_timesteps)))
    model.learn(total_timesteps)
    rb = model.replay_buffer
    n = rb.buffer_size if rb.full else rb.pos
    data = Transitions(
        observations=rb.observations[:n, 0].astype(np.float32),
        actions=rb.actions[:n, 0].astype(np.float32),
        rewards=rb.rewards[:n, 0].astype(np.float32),
        next_observations=rb.next_observations[:n, 0].astype(np.float32),
        dones=(rb.dones[:n, 0] * (1 - rb.timeouts[:n, 0])).astype(np.float32),
    )
    out_dir = Path(out_dir)
    with atomic_dir(out_dir) as tmp:
        data.save(tmp)
        meta = {
            "env_id": env_id,
            "algorithm": "SAC (stable-baselines3)",
            "seed": seed,
            "total_timesteps": total_timesteps,
            "transitions": n,
            "episode_returns": [round(float(x), 4) for x in env.get_episode_rewards()],
        }
        atomic_write_text(tmp / "meta.json", json.dumps(meta, indent=1) + "\n")
    return out_dir


def _dvc(*args: str) -> subprocess.CompletedProcess:
    dvc = Path(sys.executable).with_name("dvc")
    return subprocess.run([str(dvc), *args], cwd=repo_root(), capture_output=True, text=True)


def verify() -> bool:
    """True when ``data/`` exists and matches the hash recorded in ``data.dvc``."""
    if not (repo_root() / "data").is_dir():
        return False
    res = _dvc("status", "--json", "data.dvc")
    if res.returncode != 0:
        raise RuntimeError(f"dvc status failed: {res.stderr.strip()}")
    return json.loads(res.stdout or "{}") == {}


def build_shop(profile: str = "default") -> Path:
    """Generate the shop catalogue and task splits (deterministic, a fraction of a second)."""
    from memrl.envs.shop import generate_shop, save_shop

    d = load_family("llm_memory_rl", profile).shop_data
    products, splits = generate_shop(d.seed, d.per_category, d.n_test, d.n_train, d.n_init)
    save_shop(repo_root() / d.path, products, splits)
    return repo_root() / d.path


def build_dialogues(profile: str = "default") -> Path:
    """Generate the LoCoMo-like dialogues and their split (deterministic, under a second)."""
    from memrl.envs.dialogue import generate_dialogues, save_dialogues

    d = load_family("llm_memory_rl", profile).dialogue_data
    splits = generate_dialogues(
        d.seed, d.conversations, d.sessions, d.train_questions, d.val_questions
    )
    save_dialogues(repo_root() / d.path, splits)
    return repo_root() / d.path


def build_tmaze() -> Path:
    """The oracle Passive T-Maze runs the memory card clones (deterministic, a second)."""
    from memrl.envs.tmaze_oracle import ORACLE_DIR, save_oracle

    return save_oracle(repo_root() / ORACLE_DIR)


def build(profile: str = "default") -> list[Path]:
    cfg = load_family("experience_replay", profile)
    pd_ = cfg.prior_data
    prior = build_prior_experiment(
        repo_root() / pd_.path, cfg.rae.env_id, pd_.seed, pd_.total_timesteps, cfg.rae.sac
    )
    return [prior, build_shop(profile), build_dialogues(profile), build_tmaze()]


def ensure() -> None:
    if verify():
        print("data/: up to date with data.dvc")
        return
    changed = (repo_root() / "data").exists()  # then a plain pull refuses to overwrite it
    res = _dvc("pull", "-q", "--force", "data.dvc")
    if res.returncode == 0 and verify():
        print(
            "data/: changed files restored from the in-repo DVC remote"
            if changed
            else "data/: pulled from the in-repo DVC remote"
        )
        return
    why = (res.stderr or res.stdout).strip().splitlines()
    print(
        f"data/: the in-repo DVC remote could not restore it ({why[-1] if why else 'no data'}); "
        "rebuilding it (deterministic, ~2-3 min)...",
        flush=True,
    )
    build()
    if not verify():
        raise SystemExit(
            "data/ was rebuilt but its hash differs from data.dvc: "
            "the builder is not deterministic on this machine"
        )
    print("data/: rebuilt; hash matches data.dvc")
