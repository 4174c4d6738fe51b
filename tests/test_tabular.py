import numpy as np
import pytest

from memrl.agents.tabular_replay import cliffwalk_updates_to_learn, q_learning_with_replay
from memrl.envs.tabular import BlindCliffwalk, TabularMDP, q_star, rare_reward_chain


def test_cliffwalk_memory_is_expected_random_experience():
    env = BlindCliffwalk(5)
    mem = env.memory()
    assert len(mem) == 2 * (2**5 - 1)
    counts = np.bincount(mem, minlength=10)
    # both transitions of state s appear 2^(n-s-1) times; the rewarding one exactly once
    np.testing.assert_array_equal(counts, np.repeat([16, 8, 4, 2, 1], 2))
    tr = env.unique_transitions()
    assert tr["r"].sum() == 1 and tr["r"][-1] == 1


def test_cliffwalk_q_star_matches_value_iteration():
    n = 6
    env = BlindCliffwalk(n)
    S = n + 1  # plus an absorbing state for value iteration
    P = np.zeros((S, 2, S))
    R = np.zeros((S, 2))
    done = np.zeros((S, 2), bool)
    for s in range(n):
        P[s, 0, n] = 1
        done[s, 0] = True
        P[s, 1, s + 1 if s < n - 1 else n] = 1
        done[s, 1] = s == n - 1
        R[s, 1] = float(s == n - 1)
    P[n, :, n] = 1
    done[n] = True
    np.testing.assert_allclose(
        q_star(TabularMDP(P, R, done, env.gamma))[:n], env.q_star(), atol=1e-9
    )


def test_cliffwalk_methods_order_and_determinism():
    kw = dict(lr=0.25, alpha=1.0, epsilon=1e-6, mse_threshold=1e-3, max_updates=10**6)
    u = {
        m: np.median([cliffwalk_updates_to_learn(8, m, seed=s, **kw) for s in range(3)])
        for m in ("oracle", "prioritized", "uniform")
    }
    assert u["oracle"] < u["prioritized"] < u["uniform"]
    assert cliffwalk_updates_to_learn(6, "prioritized", seed=3, **kw) == cliffwalk_updates_to_learn(
        6, "prioritized", seed=3, **kw
    )
    with pytest.raises(ValueError):
        cliffwalk_updates_to_learn(4, "greedy", seed=0, **kw)


def test_censored_run_returns_cap():
    kw = dict(lr=0.25, alpha=1.0, epsilon=1e-6, mse_threshold=1e-3)
    assert cliffwalk_updates_to_learn(10, "uniform", max_updates=50, seed=0, **kw) == 50


def test_chain_and_replay_helps():
    mdp = rare_reward_chain(5, 0.8, 0.9)
    qs = q_star(mdp)
    assert qs[4, 0] == pytest.approx(1 + 0.9 * qs[0].max())
    base = q_learning_with_replay(mdp, 5000, 0, 1, 0.8, 1000, seed=0)["error"]
    replay = q_learning_with_replay(mdp, 5000, 8, 1, 0.8, 1000, seed=0)["error"]
    assert base[-1] < base[0]  # plain Q-learning is converging
    assert replay[-1] < base[-1]
    with pytest.raises(ValueError):
        TabularMDP(np.ones((2, 1, 2)), np.zeros((2, 1)), np.zeros((2, 1), bool), 0.9)
