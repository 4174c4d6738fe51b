"""The streaming claims' random floor on the engine (memrl.engines.random_policy): the same
record as the package's floor job, deterministic, and the same distribution of episodes as
a uniformly random policy on the ``minatar`` package's game."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("jax")

STEPS = 100_000


@pytest.mark.parametrize("env_id", ["MinAtar/Breakout-v1", "MinAtar/SpaceInvaders-v1"])
def test_the_ported_floor_is_the_packages_floor(env_id):
    from memrl.agents.random_policy import random_policy as package_floor
    from memrl.engines.random_policy import random_policy

    port = random_policy(env_id, env_id, 3, STEPS)
    assert port == random_policy(env_id, env_id, 3, STEPS)  # the same seed, the same record
    assert random_policy(env_id, env_id, 4, STEPS)["episode_returns"] != port["episode_returns"]
    package = package_floor(env_id, env_id, 3, steps=STEPS)
    assert port.keys() == package.keys() and port["total_timesteps"] == STEPS
    assert sum(port["episode_lengths"]) <= STEPS
    for key in ("episode_returns", "episode_lengths"):
        a, b = np.asarray(port[key], float), np.asarray(package[key], float)
        se = np.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b))
        assert abs(a.mean() - b.mean()) < 5 * se, (key, a.mean(), b.mean(), se)
    assert port["score"] == pytest.approx(np.mean(port["episode_returns"]))


def test_the_engine_floor_names_the_games_it_runs():
    from memrl.engines.random_policy import random_policy

    with pytest.raises(ValueError, match="the engine runs"):
        random_policy("MinAtar/Asterix-v1", "x", 0, 10)
