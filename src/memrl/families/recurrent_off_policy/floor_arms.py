"""The recurrent family's floors as arms (analysis side): the uniformly random policy's
runs on every env; on the T-Maze also chance's (the oracle's walk with a coin-flip turn,
the comparator: :func:`memrl.agents.random_policy.chance`), the random policy's there telling
whether an agent learned to walk at all."""

from __future__ import annotations

import pandas as pd

from memrl.agents.random_policy import CHANCE
from memrl.envs.pomdp import PassiveTMaze
from memrl.families.recurrent_off_policy.params import RecurrentOffPolicyParams
from memrl.stats.claims import Claim
from memrl.stats.floors import floor_arm, floor_of


def floor_name(env: str) -> str:
    """The floor an env is judged against: chance on the T-Maze, else the random policy."""
    return CHANCE if env.startswith("T-Maze") else "random"


def comparator(est: dict, env: str) -> str | None:
    """The name of ``env``'s floor estimate (chance on the T-Maze), if ``est`` holds it."""
    return floor_of(est, env, floor_name(env))


def walk_floor(est: dict, env: str) -> str | None:
    """The random policy's estimate on a T-Maze: an agent that does not clear it never
    learned to walk to the junction, so its score there says nothing about memory."""
    return floor_of(est, env, "random")


def tmaze_success(r) -> float:
    return PassiveTMaze.success_rate(r.episode_returns)


def floor_arms(
    cfg: RecurrentOffPolicyParams, floors: pd.DataFrame | None, claim: Claim, envs
) -> dict:
    """The floor arms of each env in ``envs`` that has floor runs (T-Maze: success rates of
    chance and of the random policy)."""
    out = {}
    for e in envs:
        if e.startswith("T-Maze"):
            for f in (CHANCE, "random"):
                out |= floor_arm(
                    floors, claim.claim_id, e, tmaze_success, f, reps=cfg.bootstrap_reps
                )
        else:
            out |= floor_arm(floors, claim.claim_id, e, "score", reps=cfg.bootstrap_reps)
    return out
