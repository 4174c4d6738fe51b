"""Stream Q(lambda) (memrl.agents.stream_q) and its online normalisation: the pieces the paper
says make streaming learning stable, each checked against its definition."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
import torch as th
from torch import nn

from memrl.agents import stream_q
from memrl.envs.stream_normalisation import SampleMeanStd


def test_sparse_init_zeroes_nine_tenths_of_each_units_inputs():
    th.manual_seed(0)
    w = stream_q.sparse_init_(th.empty(32, 50), 0.9)
    assert ((w == 0).sum(1) >= 45).all()  # ceil(0.9 * 50) zeroed per unit (+ exact zeros)
    assert w.abs().max() <= (1 / 50) ** 0.5
    conv = stream_q.sparse_init_(th.empty(16, 4, 3, 3), 0.9)
    assert ((conv.view(16, -1) == 0).sum(1) >= 33).all()  # fan-in 36: ceil(32.4) = 33


def test_running_statistics_are_the_sample_mean_and_variance():
    rng = np.random.default_rng(0)
    xs = rng.normal(3.0, 2.0, size=(200, 4))
    stats = SampleMeanStd((4,))
    stats.update(xs[0])
    assert (stats.var == 1).all()  # one sample: unit variance, as the reference
    for x in xs[1:]:
        stats.update(x)
    assert np.allclose(stats.mean, xs.mean(0)) and np.allclose(stats.var, xs.var(0, ddof=1))


def test_obgd_never_overshoots_the_target_of_the_sample_it_learns():
    """The effective step-size bound: after an update on (s, a), Q(s, a) moves towards its
    target without passing it, however large the step size (lambda = 0, a linear Q)."""
    th.manual_seed(0)
    p = stream_q.StreamQParams(lr=10.0, lamda=0.0)
    for _ in range(20):
        lin = nn.Linear(8, 1)
        opt = stream_q.ObGD(list(lin.parameters()), p)
        x, target = th.randn(1, 8), float(th.randn(()) * 5)
        q = lin(x)[0, 0]
        delta = target - float(q.detach())
        q.backward()
        opt.step(delta, reset=False)
        after = target - float(lin(x)[0, 0].detach())
        assert after * delta >= 0 and abs(after) <= abs(delta)


def test_epsilon_anneals_linearly_then_stays():
    p = stream_q.StreamQParams(exploration_fraction=0.2)
    assert stream_q.epsilon(p, 1, 1000) == pytest.approx(1.0 - 0.99 / 200)
    assert stream_q.epsilon(p, 200, 1000) == pytest.approx(0.01)
    assert stream_q.epsilon(p, 900, 1000) == pytest.approx(0.01)


def test_a_short_run_is_deterministic_and_logs_raw_returns():
    from memrl.envs.registry import make

    env_fn = partial(make, "MinAtar/Breakout-v1")
    a = stream_q.train(env_fn, stream_q.StreamQParams(), 600, seed=3)
    b = stream_q.train(env_fn, stream_q.StreamQParams(), 600, seed=3)
    assert a == b and len(a["episode_returns"]) > 3
    assert all(float(r).is_integer() for r in a["episode_returns"])  # unscaled Breakout points
    assert sum(a["episode_lengths"]) <= 600
