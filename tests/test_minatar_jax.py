"""The JAX MinAtar (memrl.envs.minatar_jax) is frame-exact against the ``minatar`` package
as ``registry.make`` gives it: the package's ``RandomState`` is replaced by a stub that
returns uniforms the JAX env is given too, and over >= 5,000 steps of many episodes a game
every frame, reward, terminated and truncated flag is equal; jitted, scanned and eager steps
agree; a wrong sticky probability or ramping is caught."""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pytest

pytest.importorskip("jax")
pytest.importorskip("minatar")

from memrl.envs.registry import make  # noqa: E402

# importing the port pins the process to one core: done in the fixture, not at collection
STEPS = 6_000
IDS = ("MinAtar/Breakout-v1", "MinAtar/SpaceInvaders-v1")
# the policy's random share, episode by episode in turn: short random episodes and long ones
EPS = {IDS[0]: (1.0, 0.3, 0.0), IDS[1]: (1.0, 0.3, 1.0, 1.0, 0.05)}


@pytest.fixture(scope="module")
def M():
    from memrl.envs import minatar_jax

    return minatar_jax


class Feed:
    """The package's ``RandomState`` replaced: each call returns the next given uniform
    (``rand()``), or the outcome the JAX env takes from it (``randint(2)``: ``u >= 0.5``);
    any other draw fails the test."""

    def __init__(self) -> None:
        self.queue: list[float] = []
        self.calls: list[str] = []

    def rand(self, *size):
        assert not size, size
        self.calls.append("rand")
        return self.queue.pop(0)

    def randint(self, low, high=None, size=None, dtype=int):
        assert (low, high, size) == (2, None, None), (low, high, size)
        self.calls.append("randint")
        return int(self.queue.pop(0) >= 0.5)

    def __getattr__(self, name):
        raise AssertionError(f"the package drew {name}(), which the port does not model")


def _landing(g) -> int:
    """The column the package's Breakout ball leaves for row 9 from (walls only)."""
    x, y, d = g.ball_x, g.ball_y, g.ball_dir
    for _ in range(40):
        nx, ny = x + (-1, 1, 1, -1)[d], y + (-1, -1, 1, 1)[d]
        if not 0 <= nx <= 9:
            nx, d = min(max(nx, 0), 9), (1, 0, 3, 2)[d]
        if ny < 0:
            ny, d = 0, (3, 2, 1, 0)[d]
        if ny == 9:
            return x  # the ball's column before the move: above the paddle
        x, y = nx, ny
    return x


def _hits(g) -> bool:
    """Whether a shot now would kill an alien (the package's game copied and run on)."""
    feed, g.random = g.random, None  # the stub stays out of the copy
    sim = copy.deepcopy(g)
    g.random = feed
    g = sim
    r, done = g.act(5)
    for _ in range(9):
        if r or done:
            break
        r, done = g.act(0)
    return r > 0 and not done


def _policy(env_id: str, g, eps: float, rng: np.random.Generator) -> int:
    """Random with probability ``eps``, else a player reading the package's game ``g`` that
    keeps episodes long enough to reach the rare rules (Breakout's brick refill: the paddle
    follows the rising ball and waits where the falling one lands; SpaceInvaders' new waves and ramping: dodge enemy bullets,
    fire when the shot would hit, go under the nearest alien)."""
    n = 3 if "Breakout" in env_id else 4
    if rng.random() < eps:
        return int(rng.integers(n))
    me = g.pos
    if "Breakout" in env_id:
        target = _landing(g) if g.ball_dir >= 2 else g.ball_x  # descending: where it lands
        return 0 if target == me else (1 if target < me else 2)
    moves = {0: me, 1: max(0, me - 1), 2: min(9, me + 1)}
    for rows in (slice(5, 9), slice(7, 9), slice(8, 9)):
        safe = [a for a, c in moves.items() if not g.e_bullet_map[rows, c].any()]
        if safe:
            break
    if g.shot_timer == 0 and 0 in safe and _hits(g):
        return 3
    cols = np.flatnonzero(g.alien_map.any(axis=0))
    target = int(cols[np.argmin(np.abs(cols - me))]) if g.alien_map.sum() > 2 else 4
    want = 0 if target == me else (1 if target < me else 2)
    return want if want in safe else (safe[0] if safe else 0)


def _record(env_id: str, steps: int, seed: int):
    """The package's run on the stub: its uniforms, actions and every output."""
    import jax

    us = np.asarray(jax.random.uniform(jax.random.key(seed), (steps + 1, 2)), np.float32)
    env = make(env_id, seed=seed)
    game, feed = env.unwrapped.game, Feed()
    game.random = game.env.random = feed
    rng = np.random.default_rng(seed)
    feed.queue = [float(us[steps, 1])]
    first, _ = env.reset()
    out = {k: [] for k in ("obs", "reward", "terminated", "truncated", "final_obs", "action")}
    eps_cycle, episode, obs = EPS[env_id], 0, first
    events = {"episodes": 0, "sticky": 0, "refill": 0, "ramps": 0}
    for t in range(steps):
        a = _policy(env_id, game.env, eps_cycle[episode % len(eps_cycle)], rng)
        bricks = getattr(game.env, "brick_map", np.ones(1)).sum()
        waves = getattr(game.env, "ramp_index", 0)
        feed.queue, feed.calls = [float(us[t, 0])], []
        final, r, term, trunc, _ = env.step(a)
        assert feed.calls == ["rand"] and not feed.queue
        events["sticky"] += us[t, 0] < 0.1
        events["refill"] += getattr(game.env, "brick_map", np.zeros(1)).sum() > bricks
        events["ramps"] += getattr(game.env, "ramp_index", 0) > waves
        obs = final
        if term or trunc:
            feed.queue, feed.calls = [float(us[t, 1])], []
            obs, _ = env.reset()
            assert feed.calls == (["randint"] if "Breakout" in env_id else [])
            episode += 1
        for k, v in zip(out, (obs, r, term, trunc, final, a), strict=True):
            out[k].append(v)
    events["episodes"] = episode
    rec = {k: np.asarray(v) for k, v in out.items()}
    return rec, first, us, events


@pytest.fixture(scope="module")
def recorded(M):
    return {env_id: _record(env_id, STEPS, seed=i + 1) for i, env_id in enumerate(IDS)}


def _replay(M, game, rec, us):
    import jax

    steps = len(rec["action"])
    state, first = M.reset_u(game, us[steps, 1])
    run = jax.jit(M.rollout_u, static_argnums=0)
    _, outs = run(game, state, rec["action"], us[:steps])
    names = ("obs", "reward", "terminated", "truncated", "final_obs")
    return np.asarray(first), {k: np.asarray(v) for k, v in zip(names, outs, strict=True)}


def _first_mismatch(rec, got) -> str | None:
    for t in range(len(rec["action"])):
        for k, v in got.items():
            want = np.asarray(rec[k][t], dtype=v.dtype)
            if not np.array_equal(v[t], want):
                where = np.argwhere(v[t] != want).tolist() if want.ndim else want
                return f"step {t}: {k} differs (channel, row, column / package value: {where})"
    return None


@pytest.mark.parametrize("env_id", IDS)
def test_frame_exact_against_the_package(M, recorded, env_id):
    rec, first, us, events = recorded[env_id]
    assert rec["obs"].shape == (STEPS, *M.GAMES[env_id].obs_shape)
    assert rec["obs"].dtype == np.float32
    # the run reaches the rules: many episodes, sticky actions, the rare game events
    assert events["episodes"] >= 20 and events["sticky"] >= 400, events
    if "Breakout" in env_id:
        assert events["refill"] >= 1, events
    else:
        assert events["ramps"] >= 2, events
    got_first, got = _replay(M, M.GAMES[env_id], rec, us)
    np.testing.assert_array_equal(got_first, first)
    assert _first_mismatch(rec, got) is None, _first_mismatch(rec, got)
    assert not got["truncated"].any()  # the package never truncates (no TimeLimit)


@pytest.mark.parametrize("env_id", IDS)
def test_a_wrong_port_fails(M, recorded, env_id):
    rec, _, us, _ = recorded[env_id]
    wrong = [dataclasses.replace(M.GAMES[env_id], sticky_action_prob=0.11)]
    if "Space" in env_id:
        wrong.append(dataclasses.replace(M.GAMES[env_id], ramping=False))
    for game in wrong:
        _, got = _replay(M, game, rec, us)
        assert _first_mismatch(rec, got) is not None, game


@pytest.mark.parametrize("env_id", IDS)
def test_jit_and_scan_equal_eager_steps(M, env_id):
    import jax

    game, steps = M.GAMES[env_id], 150
    keys = jax.random.split(jax.random.key(7), steps + 1)
    actions = np.random.default_rng(0).integers(game.n_actions, size=steps)
    state, obs = M.reset(game, keys[steps])
    jstate, jobs = jax.jit(M.reset, static_argnums=0)(game, keys[steps])
    np.testing.assert_array_equal(obs, jobs)
    jstep = jax.jit(M.step, static_argnums=0)
    jauto = jax.jit(M.step_autoreset, static_argnums=0)
    eager = []
    for t in range(steps):
        plain = M.step(game, state, actions[t], keys[t])
        jax.tree.map(np.testing.assert_array_equal, plain, jstep(game, state, actions[t], keys[t]))
        out = M.step_autoreset(game, state, actions[t], keys[t])
        jout = jauto(game, jstate, actions[t], keys[t])
        jax.tree.map(np.testing.assert_array_equal, out, jout)
        jax.tree.map(np.testing.assert_array_equal, plain[1:], (out[5], *out[2:5]))
        state, jstate = out[0], jout[0]
        eager.append(out[1:])

    def body(s, xs):
        s, *o = M.step_autoreset(game, s, xs[0], xs[1])
        return s, tuple(o)

    init, _ = M.reset(game, keys[steps])
    final, scanned = jax.jit(lambda s: jax.lax.scan(body, s, (actions, keys[:steps])))(init)
    stacked = jax.tree.map(lambda *x: np.stack(x), *eager)
    jax.tree.map(np.testing.assert_array_equal, stacked, scanned)
    jax.tree.map(np.testing.assert_array_equal, final, state)
    assert np.asarray(stacked[2]).any()  # episodes ended (and restarted) within the run
