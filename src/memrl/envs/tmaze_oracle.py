"""The oracle's Passive T-Maze runs: what the memory card's policies are cloned from,
built deterministically (``python -m memrl data build``) and kept in ``data.dvc``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np


class Trajectories(NamedTuple):
    """Oracle trajectories of one corridor length: (N, T, .) arrays."""

    observations: np.ndarray  # float32 (N, T, obs_dim)
    actions: np.ndarray  # int64 (N, T)
    returns_to_go: np.ndarray  # float32 (N, T)


ORACLE_DIR = "data/tmaze"  # repo-relative; built by `python -m memrl data build`, in data.dvc
ORACLE_LENGTHS = (1, 2, 4, 8, 12, 16, 24, 32, 48)  # corridors the data set holds
ORACLE_EPISODES = 256  # oracle runs per corridor
_ARRAYS = ("observations", "actions", "returns_to_go")


def oracle_trajectories(length: int, episodes: int, seed: int) -> Trajectories:
    """``episodes`` Passive T-Maze episodes of corridor ``length`` played by the oracle:
    *right* along the corridor (the one move that advances), the cue's turn at the
    junction; every one succeeds, so the return-to-go is 1 throughout. Env ``i`` is reset
    with seed ``seed + i``."""
    from memrl.envs.pomdp import PassiveTMaze

    env = PassiveTMaze(length)
    obs = np.zeros((episodes, length, 2), np.float32)
    act = np.zeros((episodes, length), np.int64)
    for i in range(episodes):
        o, info = env.reset(seed=seed + i)
        for t in range(length):
            obs[i, t] = o
            act[i, t] = turn(info["cue"]) if t == length - 1 else PassiveTMaze.RIGHT
            o, r, done, _, _ = env.step(int(act[i, t]))
        assert done and r == 1.0, "the oracle always succeeds"
    return Trajectories(obs, act, np.ones((episodes, length), np.float32))


def turn(cue: int) -> int:
    """The move into the goal that ``cue`` (+1 up, -1 down) names."""
    from memrl.envs.pomdp import PassiveTMaze

    return PassiveTMaze.UP if cue == 1 else PassiveTMaze.DOWN


def save_oracle(root: str | Path) -> Path:
    """Write the oracle data set into ``root`` (one folder per corridor, one ``.npy`` per
    array: byte-identical on every build), replacing it whole only once complete."""
    from memrl.runtime import atomic_dir

    with atomic_dir(root) as tmp:
        for L in ORACLE_LENGTHS:
            d = oracle_trajectories(L, ORACLE_EPISODES, 1000 * L)
            (tmp / f"L{L}").mkdir()
            for name, a in zip(_ARRAYS, d, strict=True):
                np.save(tmp / f"L{L}" / f"{name}.npy", a)
    return Path(root)


def load_oracle(root: str | Path, lengths: Sequence[int], episodes: int) -> list[Trajectories]:
    """The first ``episodes`` oracle runs of each corridor in ``lengths`` from ``root``."""
    root = Path(root)
    out = []
    for L in lengths:
        files = [root / f"L{L}" / f"{name}.npy" for name in _ARRAYS]
        if not all(f.is_file() for f in files):
            raise FileNotFoundError(
                f"{root} has no oracle runs of corridor {L} (it holds {ORACLE_LENGTHS}): "
                "run `make data`"
            )
        out.append(Trajectories(*(np.load(f)[:episodes] for f in files)))
    return out
