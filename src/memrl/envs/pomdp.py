"""Partially observable variants of classic-control tasks, and the Passive T-Maze.

**Masked observations** (pomdp-baselines' convention): ``-P`` keeps positions
only, ``-V`` velocities only — Pendulum-P keeps obs dims [0, 1] (cos, sin),
Pendulum-V keeps [2]; CartPole-P keeps [0, 2], CartPole-V keeps [1, 3]. The
rl-zoo's ``*NoVel`` envs equal ``-P``. Registered as ``memrl/Pendulum-P-v1`` etc.

**Passive T-Maze** (the memory test of Ni et al. 2023 and Cherepanov et al.):
a cue (up or down) is shown at the first step only; the agent then walks a
corridor to the junction — of its four moves only *right* advances, and the episode
lasts exactly the walk plus the turn, as in Ni et al.'s reference maze — and must turn
the way the cue said (reward 1, else 0). The correlation horizon is ``xi = L``: an
agent that walks but cannot recall ``L`` steps back succeeds half the time.

**POPGym** (Morad et al. 2023, the ``popgym`` package): memory puzzles registered
as ``popgym/<Task>-v0`` (e.g. ``popgym/RepeatPreviousEasy-v0``), with discrete
observations flattened to one-hot float vectors. Returns are scaled by POPGym to
[-1, 1] per episode.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

POMDP_MASKS: dict[str, dict[str, list[int]]] = {
    "Pendulum-v1": {"P": [0, 1], "V": [2]},
    "CartPole-v1": {"P": [0, 2], "V": [1, 3]},
}


class MaskObservation(gym.ObservationWrapper):
    """Keep only the observation dimensions ``keep``."""

    def __init__(self, env: gym.Env, keep: list[int]) -> None:
        super().__init__(env)
        box = env.observation_space
        n = box.shape[0]
        if not keep or any(not 0 <= i < n for i in keep) or len(set(keep)) != len(keep):
            raise ValueError(f"keep must list distinct dims in [0, {n}), got {keep}")
        self.keep = np.asarray(keep)
        self.observation_space = gym.spaces.Box(
            box.low[self.keep], box.high[self.keep], dtype=box.dtype
        )

    def observation(self, obs: np.ndarray) -> np.ndarray:
        return obs[self.keep]


class PreviousActionReward(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Observations ``[o_t, a_{t-1}, r_{t-1}]`` (zeros before an episode's first step): what
    the recurrent agents' encoders read each step, for a memoryless agent. A continuous
    action as it is, a discrete one one-hot."""

    def __init__(self, env: gym.Env) -> None:
        gym.utils.RecordConstructorArgs.__init__(self)
        super().__init__(env)
        box, act = env.observation_space, env.action_space
        self.discrete = isinstance(act, gym.spaces.Discrete)
        n_act = int(act.n) if self.discrete else int(np.prod(act.shape))
        a_low = np.zeros(n_act) if self.discrete else np.asarray(act.low, float).ravel()
        a_high = np.ones(n_act) if self.discrete else np.asarray(act.high, float).ravel()
        low = np.concatenate([np.asarray(box.low, float).ravel(), a_low, [-np.inf]])
        high = np.concatenate([np.asarray(box.high, float).ravel(), a_high, [np.inf]])
        # float32 bounds as the observations (gymnasium warns when it has to lower them)
        self.observation_space = gym.spaces.Box(
            low.astype(np.float32), high.astype(np.float32), dtype=np.float32
        )
        self.n_act = n_act

    def _obs(self, obs, action, reward: float) -> np.ndarray:
        a = np.zeros(self.n_act, np.float32)
        if action is not None:
            if self.discrete:
                a[int(action)] = 1.0
            else:
                a[:] = np.asarray(action, np.float32).ravel()
        return np.concatenate([np.asarray(obs, np.float32).ravel(), a, [reward]]).astype(np.float32)

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        return self._obs(obs, None, 0.0), info

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        return self._obs(obs, action, float(reward)), reward, terminated, truncated, info


def make_masked(base_id: str, variant: str, **kwargs) -> gym.Env:
    """``base_id`` with only the ``variant`` ("P" or "V") dimensions observed."""
    if base_id not in POMDP_MASKS or variant not in POMDP_MASKS[base_id]:
        known = [f"{b}:{v}" for b, vs in POMDP_MASKS.items() for v in vs]
        raise ValueError(f"no {variant!r} mask for {base_id!r}; known: {known}")
    return MaskObservation(gym.make(base_id, **kwargs), POMDP_MASKS[base_id][variant])


class PassiveTMaze(gym.Env):
    """Passive T-Maze with correlation horizon ``xi = length``, as Ni et al.'s
    ``TMazeClassicPassive`` (``twni2016/Memory-RL``, ``envs/tmaze.py``) with its corridor
    ``length - 1`` cells long.

    The agent starts at the corridor's first cell and sees the cue there: observation
    ``[cue, at_junction]``, ``cue`` +1 (the goal is up) or -1 (down) at ``t = 0``, 0 after.
    Actions, the reference's four moves: 0 = right, 1 = up, 2 = left, 3 = down; a move off
    the maze leaves the agent where it is. Only *right* advances along the corridor, only
    *up*/*down* leave the junction, and the episode lasts ``length`` steps: the corridor's
    ``length - 1`` right moves, then the turn at ``t = length - 1``. So an agent that reaches
    the junction in time played one and the same action sequence whatever the cue, and
    cannot carry the cue in its own actions (a maze where any action advances lets it:
    issue 56). Cherepanov et al.'s ``xi = t_e - t_r + 1 = length``: a context of ``K``
    frames (the current one and ``K - 1`` before it) sees the cue at the junction exactly
    when ``K >= xi``.

    Reward: 1 for ending the last step on the cued goal, 0 otherwise; and, as the
    reference's passive maze, ``-1 / (length - 1)`` for each step that ends behind the
    walk (``x < t``), which sums to at most -1 over the corridor.
    """

    metadata = {"render_modes": []}
    MOVES = ((1, 0), (0, 1), (-1, 0), (0, -1))  # right, up, left, down: the reference's order
    RIGHT, UP, DOWN = 0, 1, 3

    def __init__(self, length: int = 10) -> None:
        if int(length) < 1:
            raise ValueError(f"length must be >= 1, got {length}")
        self.length = int(length)
        self.junction = self.length - 1  # x of the junction
        self.penalty = -1.0 / self.junction if self.junction else 0.0
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (2,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(len(self.MOVES))
        self._cue, self._t, self._x, self._y = 1, 0, 0, 0

    def _obs(self) -> np.ndarray:
        cue = float(self._cue) if self._t == 0 else 0.0
        return np.array([cue, float(self._x == self.junction)], dtype=np.float32)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self._cue = 1 if self.np_random.random() < 0.5 else -1
        self._t, self._x, self._y = 0, 0, 0
        return self._obs(), {"cue": self._cue}

    def step(self, action: int):
        dx, dy = self.MOVES[int(action)]
        x, y = self._x + dx, self._y + dy
        in_corridor = y == 0 and 0 <= x <= self.junction
        at_goal = x == self.junction and abs(y) == 1 and self._y == 0
        if in_corridor or at_goal:
            self._x, self._y = x, y
        self._t += 1
        if self._t < self.length:
            return self._obs(), self.penalty if self._x < self._t else 0.0, False, False, {}
        success = self._y == self._cue
        return self._obs(), float(success), True, False, {"success": success}

    @staticmethod
    def success_rate(returns) -> float:
        """The share of episodes that ended on the cued goal, from their returns: only
        those reach 1 (a wrong turn ends at 0 or less, a late walk cannot turn)."""
        return float(np.mean(np.asarray(returns) >= 1.0))


POPGYM_TASKS: dict[str, str] = {
    "RepeatPreviousEasy": "popgym.envs.repeat_previous",
    "RepeatFirstEasy": "popgym.envs.repeat_first",
    "CountRecallEasy": "popgym.envs.count_recall",
    "PositionOnlyCartPoleEasy": "popgym.envs.position_only_cartpole",
}


class FloatObservation(gym.ObservationWrapper):
    """Observations as flat float32 vectors (a discrete or composite space one-hot, as
    ``gymnasium.spaces.flatten`` writes it)."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.flat = not isinstance(env.observation_space, gym.spaces.Box)
        shape = (
            (gym.spaces.flatdim(env.observation_space),)
            if self.flat
            else env.observation_space.shape
        )
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, shape, dtype=np.float32)

    def observation(self, obs):
        if self.flat:
            obs = gym.spaces.flatten(self.env.observation_space, obs)
        return np.asarray(obs, dtype=np.float32)


def make_popgym(task: str) -> gym.Env:
    """POPGym's ``task`` with its observations as flat float32 vectors (one-hot if discrete)."""
    import importlib

    return FloatObservation(getattr(importlib.import_module(POPGYM_TASKS[task]), task)())


def register() -> None:
    """Register ``memrl/<Base>-P-v1``, ``memrl/<Base>-V-v1``, ``memrl/PassiveTMaze-v0``
    and ``popgym/<Task>-v0`` (idempotent)."""
    for base, variants in POMDP_MASKS.items():
        name, version = base.rsplit("-", 1)
        for v in variants:
            env_id = f"memrl/{name}-{v}-{version}"
            if env_id not in gym.envs.registry:
                gym.register(
                    env_id, entry_point=make_masked, kwargs={"base_id": base, "variant": v}
                )
    if "memrl/PassiveTMaze-v0" not in gym.envs.registry:
        gym.register("memrl/PassiveTMaze-v0", entry_point=PassiveTMaze)
    for task in POPGYM_TASKS:
        if f"popgym/{task}-v0" not in gym.envs.registry:
            gym.register(f"popgym/{task}-v0", entry_point=make_popgym, kwargs={"task": task})
