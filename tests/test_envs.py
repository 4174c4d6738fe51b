"""Every env of the suite passes the ecosystem's checkers: gymnasium's ``check_env`` and,
for the spaces Stable-Baselines3 supports, SB3's."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

from memrl.envs.registry import make
from memrl.envs.shop import generate_shop


@pytest.fixture(scope="module")
def shop():
    return generate_shop(seed=0, per_category=4, n_test=6, n_train=3, n_init=4)


IDS = [
    "memrl/Pendulum-V-v1",
    "memrl/Pendulum-P-v1",
    "memrl/CartPole-P-v1",
    "memrl/CartPole-V-v1",
    "memrl/PassiveTMaze-v0",
    "popgym/PositionOnlyCartPoleEasy-v0",
    "popgym/RepeatPreviousEasy-v0",
    "popgym/RepeatFirstEasy-v0",
    "popgym/CountRecallEasy-v0",
    "MinAtar/Breakout-v1",
    "MinAtar/SpaceInvaders-v1",
]


@pytest.mark.parametrize("env_id", IDS)
def test_every_env_passes_gymnasium_and_sb3_checkers(env_id):
    env = make(env_id)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # advice (e.g. "normalise your Box"), not failures
        gym_check_env(env, skip_render_check=True)
        sb3_check_env(env, warn=False)
    env.close()


def test_the_shop_env_passes_gymnasiums_checker_and_draws_a_task(shop):
    from memrl.envs.shop import ShopEnv

    products, splits = shop
    env = ShopEnv(products, max_steps=6, tasks=splits["test"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gym_check_env(env, skip_render_check=True)
    _, info = env.reset(seed=3)
    again = ShopEnv(products, max_steps=6, tasks=splits["test"]).reset(seed=3)[1]
    assert info["task"] == again["task"]  # drawn with the env's seeded generator
    # SB3 handles array observations only: its checker stops at the text page, nothing else
    with pytest.raises(AssertionError, match="must be a numpy array"):
        sb3_check_env(env, warn=False)
    with pytest.raises(ValueError, match="tasks"):
        ShopEnv(products).reset()


@pytest.mark.parametrize("env_id", ["memrl/Pendulum-V-v1", "memrl/CartPole-P-v1"])
def test_previous_action_reward_inputs(env_id):
    """SAC-prev's observation [o_t, a_{t-1}, r_{t-1}]: zeros after reset, then what was done
    and earned (a discrete action one-hot); the checkers accept it."""
    from memrl.envs.pomdp import PreviousActionReward

    env = PreviousActionReward(make(env_id))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gym_check_env(env, skip_render_check=True)
        sb3_check_env(env, warn=False)
    obs, _ = env.reset(seed=0)
    n = env.observation_space.shape[0] - env.n_act - 1
    assert not obs[n:].any()
    action = env.action_space.sample()
    obs, reward, *_ = env.step(action)
    want = np.eye(env.n_act)[action] if env.discrete else np.ravel(action)
    np.testing.assert_allclose(obs[n:-1], want, rtol=1e-6)
    assert obs[-1] == pytest.approx(reward)
