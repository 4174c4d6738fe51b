import gymnasium as gym
import numpy as np
import pytest

from memrl.envs.pomdp import MaskObservation, PassiveTMaze, make_masked, register


@pytest.mark.parametrize(
    "base, variant, keep",
    [
        ("Pendulum-v1", "P", [0, 1]),
        ("Pendulum-v1", "V", [2]),
        ("CartPole-v1", "P", [0, 2]),
        ("CartPole-v1", "V", [1, 3]),
    ],
)
def test_masks_keep_the_conventional_dims(base, variant, keep):
    full, masked = gym.make(base), make_masked(base, variant)
    o_full, _ = full.reset(seed=3)
    o_masked, _ = masked.reset(seed=3)
    np.testing.assert_array_equal(o_masked, o_full[keep])
    assert masked.observation_space.shape == (len(keep),)
    a = full.action_space.sample()
    np.testing.assert_array_equal(masked.step(a)[0], full.step(a)[0][keep])


def test_registered_ids_and_bad_masks():
    register()
    assert gym.make("memrl/CartPole-V-v1").observation_space.shape == (2,)
    with pytest.raises(ValueError, match="no 'X' mask"):
        make_masked("CartPole-v1", "X")
    with pytest.raises(ValueError, match="distinct dims"):
        MaskObservation(gym.make("CartPole-v1"), [0, 7])


def test_tmaze_cue_only_at_start_and_reward_for_the_right_turn():
    env = PassiveTMaze(length=4)  # xi = 4: the cue at t = 0, the turn at t = 3
    for seed in range(6):
        obs, info = env.reset(seed=seed)
        assert obs[0] == info["cue"] and obs[1] == 0.0
        for _ in range(3):
            obs, r, term, _trunc, _info = env.step(PassiveTMaze.RIGHT)
            assert obs[0] == 0.0 and r == 0.0 and not term
        assert obs[1] == 1.0  # at the junction
        turn = PassiveTMaze.UP if info["cue"] == 1 else PassiveTMaze.DOWN
        _, r, term, _, step_info = env.step(turn)
        assert term and r == 1.0 and step_info["success"]
    env.reset(seed=0)
    cue = env._cue
    for _ in range(3):
        env.step(PassiveTMaze.RIGHT)
    assert env.step(PassiveTMaze.DOWN if cue == 1 else PassiveTMaze.UP)[1] == 0.0  # wrong turn


def test_tmaze_of_length_one_shows_cue_and_junction_together():
    obs, info = PassiveTMaze(length=1).reset(seed=3)
    assert obs[0] == info["cue"] and obs[1] == 1.0


def _outcome(env, cue: int, actions) -> float:
    """The episode's final reward when ``actions`` are played with the cue set to ``cue``."""
    env.reset(seed=0)
    env._cue = cue
    for a in actions:
        _, r, done, _, _ = env.step(a)
    assert done
    return r


@pytest.mark.parametrize("length", [2, 3, 4])
def test_tmaze_actions_cannot_carry_the_cue(length):
    """Issue 56: every action sequence that succeeds walks the same corridor moves whatever
    the cue; so an agent cannot write the cue into its own actions (its previous action, an
    input of the recurrent agents) and read it back at the junction. On the old maze, where
    any action advanced, a corridor move equal to the cue's turn followed by "repeat the
    previous action" succeeded on both cues."""
    import itertools

    env = PassiveTMaze(length)
    n = env.action_space.n
    assert n == 4  # the reference's four moves
    corridors = {
        cue: {
            seq[:-1]
            for seq in itertools.product(range(n), repeat=length)
            if _outcome(env, cue, seq) == 1.0
        }
        for cue in (1, -1)
    }
    right = (PassiveTMaze.RIGHT,) * (length - 1)
    assert corridors[1] == corridors[-1] == {right}
    # the channel the old maze left open: the first corridor move names the turn, the
    # policy repeats it; here it leaves the agent short of the junction
    for cue in (1, -1):
        turn = PassiveTMaze.UP if cue == 1 else PassiveTMaze.DOWN
        assert _outcome(env, cue, (turn,) * length) == 0.0


def test_tmaze_penalises_falling_behind_the_walk():
    """The reference's shaping: -1/(length - 1) for each step that ends behind ``x = t``."""
    env = PassiveTMaze(length=5)
    env.reset(seed=0)
    moves = (PassiveTMaze.RIGHT, 2, PassiveTMaze.RIGHT, PassiveTMaze.UP, PassiveTMaze.RIGHT)
    rewards = [env.step(a)[1] for a in moves]  # right, left, right, up (a wall), right
    assert rewards == [0.0, -0.25, -0.25, -0.25, 0.0]  # the last step: short of the goal


@pytest.mark.parametrize(
    "task", ["RepeatPreviousEasy", "RepeatFirstEasy", "CountRecallEasy", "PositionOnlyCartPoleEasy"]
)
def test_popgym_tasks_give_flat_float_observations(task):
    register()
    env = gym.make(f"popgym/{task}-v0")
    obs, _ = env.reset(seed=0)
    assert obs.dtype == np.float32 and obs.shape == env.observation_space.shape
    assert isinstance(env.action_space, gym.spaces.Discrete)
    total, done, steps = 0.0, False, 0
    while not done:
        obs, r, term, trunc, _ = env.step(env.action_space.sample())
        assert obs.shape == env.observation_space.shape
        total, done, steps = total + r, term or trunc, steps + 1
    assert -1.0 - 1e-6 <= total <= 1.0 + 1e-6 and steps > 1  # POPGym scales returns to [-1, 1]


def test_import_memrl_registers_its_gymnasium_ids():
    """In a fresh interpreter (other tests registered them already): `import memrl` suffices."""
    import subprocess
    import sys

    code = (
        "import gymnasium as gym, memrl\n"
        "for i in ('memrl/Pendulum-V-v1', 'memrl/PassiveTMaze-v0', "
        "'popgym/PositionOnlyCartPoleEasy-v0'):\n"
        "    gym.make(i).reset(seed=0)\n"
        "print('ok')"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/")
    assert res.stdout.strip() == "ok", res.stderr
