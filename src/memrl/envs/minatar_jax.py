"""MinAtar's Breakout and SpaceInvaders in pure JAX, frame-exact against the ``minatar``
package as :func:`memrl.envs.registry.make` gives it (``MinAtar/Breakout-v1``,
``MinAtar/SpaceInvaders-v1``: the minimal action sets, float32 (C, 10, 10) frames), so that a
whole training run can be one compiled ``lax.scan``. ``tests/test_minatar_jax.py`` runs both
side by side, fed the same random outcomes, and checks every frame, reward and flag.

Source: MinAtar 1.0.15 (``pip show minatar``), files of ``site-packages/minatar``:

- ``gym.py``: ``register_envs`` (l. 83-95) registers the ``-v1`` ids with
  ``use_minimal_action_set=True`` and no ``max_episode_steps`` (gymnasium adds no
  ``TimeLimit``), so **truncated is always False**; ``BaseEnv.__init__`` (l. 20-35) passes no
  game keywords, so sticky actions have p = 0.1 and difficulty ramping is on
  (``environment.py`` l. 26-27); ``step`` (l. 37-42) maps the action through the minimal set.
  Actions here are indices into that set: Breakout 0 n, 1 left, 2 right; SpaceInvaders
  0 n, 1 left, 2 right, 3 fire (out-of-range indices are not checked).
- ``environment.py``: sticky actions (l. 45-49): every ``act`` draws ``rand()`` and repeats
  the last action when it is below p, even on a finished episode; ``last_action`` starts at 0
  (l. 34) and ``reset`` (l. 56-57) does **not** clear it: it carries across episodes
  (:func:`step_autoreset` carries it; :func:`reset_u` takes it). ``seed`` (l. 39-42) gives
  the game and the wrapper one shared ``RandomState``.
- ``environments/breakout.py``: a finished game's ``act`` returns (0, True) unchanged
  (l. 34-35); paddle moves and is clipped to 0..9 (l. 40-43) before the ball; the ball moves
  diagonally (dir 0 up-left, 1 up-right, 2 down-right, 3 down-left; l. 46-59); side walls
  clip x and mirror x (l. 62-67); the top clips y and mirrors y (l. 68-70); a brick breaks,
  +1 reward, the ball keeps its row and mirrors y, unless the previous step struck a brick
  (``strike``; then the ball enters the brick's cell and the brick stays, l. 71-78); on row 9
  the three brick rows 1-3 refill when none is left (l. 79-81), the ball bounces back up when
  it was above the paddle (l. 82-84) or reverses both directions when it lands on it
  (l. 85-87), else the episode terminates (l. 88-89); ``strike`` clears on a step without a
  brick (l. 91-92). Frame: paddle, ball, trail (the ball's previous cell), bricks
  (l. 103-109). Reset (l. 112-122): ball at row 3, ``randint(2)`` picks (x 0, dir 2) or
  (x 9, dir 3); paddle at 4; bricks rows 1-3.
- ``environments/space_invaders.py``: a finished game returns (0, True) (l. 49-50); fire when
  the shot timer is 0 (a bullet at (9, pos), timer 5) else left/right (l. 55-61); friendly
  bullets move up, enemy bullets down, off-screen ones vanish (l. 64-69); an enemy bullet or
  an alien on the cannon terminates (l. 70-75); aliens move when their timer hits 0, the timer
  restarting at min(aliens left, move interval) (l. 76-77): down one row and reversing at an
  edge (terminal if an alien was on row 9; the roll wraps rows, l. 78-82), else sideways
  (l. 83-84), then the cannon check again (l. 85-86); every 10 steps the alien nearest the
  cannon's column (ties: the left column; the lowest alien of it) fires (l. 87-90,
  ``_nearest_alien`` l. 110-116); a bullet on an alien kills both, +1 each (l. 92-95); timers
  count down (l. 99-101); a cleared wave respawns at rows 0-3, columns 2-7, and with ramping
  the move interval drops by one per wave down to 6 (l. 102-106). Frame: cannon, aliens, the
  aliens again on the channel of their direction (left if dir < 0), friendly bullets, enemy
  bullets (l. 123-133). Reset (l. 136-148) uses no randomness.

Randomness: all of it comes from explicit float32 uniforms in [0, 1), ``N_UNIFORMS = 2`` a
step (:func:`uniforms` draws them from a key: ``jax.random.uniform(key, (2,))``):

- ``u[0]`` replaces ``Environment.act``'s ``self.random.rand()`` (sticky action): the last
  action is repeated iff ``u[0] < p``. The comparison is against the smallest float32 >= p,
  so for any float32 u it decides as the package's float64 ``float(u) < p`` does: feeding
  the package ``float(u[0])`` gives the same outcome.
- ``u[1]`` replaces Breakout's reset draw ``self.random.randint(2)`` (used by
  :func:`step_autoreset` when the episode ends, and by :func:`reset`): ball start
  ``int(u[1] >= 0.5)``. numpy's legacy ``randint(2)`` is the low bit of one 32-bit MT19937
  output (checked: it agrees with ``rand() >= 0.5`` only half the time), so this is the same
  distribution, not the same function of numpy's stream: a test feeds the package the
  outcome ``int(u >= 0.5)``. SpaceInvaders' reset draws nothing; its ``u[1]`` is unused.

In the package's stream the order is the same: a reset's ``randint`` and then one ``rand()``
per step. Nothing in the package is left unreproduced (``_nearest_alien``'s ``None`` when
no alien is left cannot happen: a wave respawns within the step that clears it).

Throughput (``benchmarks/minatar_jax.py``: one core of an "Intel(R) Xeon(R) Processor",
env steps a core-second of ``time.process_time``, random actions, compile excluded; ranges
over 3-4 runs on a machine shared with another job, load ~2.7 on 2 cores, so noisy): the
package through ``registry.make`` in a Python loop: Breakout 61,000-82,000, SpaceInvaders
18,000-21,000; a jitted ``lax.scan`` of 100,000 ``step_autoreset_u`` steps with the actions
and uniforms drawn in the scan from a key (one split, three uniforms a step): Breakout
250,000-270,000, SpaceInvaders 190,000-300,000; the same scan on pre-drawn actions and
uniforms (``rollout_u``): Breakout 430,000-690,000, SpaceInvaders 280,000-470,000. So the
port is ~3-8x the package on Breakout and ~10-20x on SpaceInvaders per core, and threefry
draws are about half of a keyed step.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import numpy as np

from memrl.engines.pin import pin

pin()  # before jax loads: XLA's flags and one core (memrl.engines.pin)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

N_UNIFORMS = 2  # a step's uniforms: u[0] the sticky action, u[1] the reset (Breakout)
_R = jnp.arange(10)
_I32 = jnp.int32


def _cell(y: jax.Array, x: jax.Array) -> jax.Array:
    """A (10, 10) bool frame with only (y, x) set."""
    return (_R[:, None] == y) & (_R[None, :] == x)


def _tree_where(c: jax.Array, a: Any, b: Any) -> Any:
    return jax.tree.map(lambda u, v: jnp.where(c, u, v), a, b)


# ---------------------------------------------------------------- Breakout (breakout.py)
class BreakoutState(NamedTuple):
    ball_x: jax.Array
    ball_y: jax.Array
    ball_dir: jax.Array  # 0 up-left, 1 up-right, 2 down-right, 3 down-left
    pos: jax.Array  # the paddle's column (row 9)
    bricks: jax.Array  # (10, 10) bool
    strike: jax.Array
    last_x: jax.Array
    last_y: jax.Array
    terminal: jax.Array
    last_action: jax.Array  # the sticky action (an index into the minimal set)


_DX = jnp.array([-1, 1, 1, -1], _I32)
_DY = jnp.array([-1, -1, 1, 1], _I32)
_FLIP_X = jnp.array([1, 0, 3, 2], _I32)
_FLIP_Y = jnp.array([3, 2, 1, 0], _I32)
_FLIP_XY = jnp.array([2, 3, 0, 1], _I32)
_BRICKS = (_R[:, None] >= 1) & (_R[:, None] <= 3) & (_R[None, :] >= 0)  # rows 1-3


def _breakout_reset(u: jax.Array, last_action: jax.Array) -> BreakoutState:
    start = u >= 0.5  # randint(2): 0 -> (x 0, dir 2), 1 -> (x 9, dir 3)
    x = jnp.where(start, 9, 0).astype(_I32)
    y = jnp.asarray(3, _I32)
    return BreakoutState(
        ball_x=x,
        ball_y=y,
        ball_dir=jnp.where(start, 3, 2).astype(_I32),
        pos=jnp.asarray(4, _I32),
        bricks=_BRICKS,
        strike=jnp.asarray(False),
        last_x=x,
        last_y=y,
        terminal=jnp.asarray(False),
        last_action=jnp.asarray(last_action, _I32),
    )


def _breakout_act(s: BreakoutState, a: jax.Array) -> tuple[BreakoutState, jax.Array]:
    pos = jnp.where(a == 1, jnp.maximum(0, s.pos - 1), s.pos)
    pos = jnp.where(a == 2, jnp.minimum(9, s.pos + 1), pos)
    d = s.ball_dir
    new_x, new_y = s.ball_x + _DX[d], s.ball_y + _DY[d]
    d = jnp.where((new_x < 0) | (new_x > 9), _FLIP_X[d], d)
    new_x = jnp.clip(new_x, 0, 9)
    top = new_y < 0
    hit = ~top & s.bricks[jnp.clip(new_y, 0, 9), new_x]  # strike_toggle
    breaks = hit & ~s.strike
    bottom = ~top & ~hit & (new_y == 9)
    bricks = s.bricks & ~(breaks & _cell(new_y, new_x))
    bricks = jnp.where(bottom & ~bricks.any(), bricks | _BRICKS, bricks)
    over = bottom & (s.ball_x == pos)  # above the paddle: back up
    onto = bottom & ~over & (new_x == pos)  # onto the paddle's cell: both reversed
    d = jnp.where(top | breaks | over, _FLIP_Y[d], d)
    d = jnp.where(onto, _FLIP_XY[d], d)
    new_y = jnp.where(top, 0, jnp.where(breaks | over | onto, s.ball_y, new_y))
    state = BreakoutState(
        ball_x=new_x,
        ball_y=new_y,
        ball_dir=d,
        pos=pos,
        bricks=bricks,
        strike=hit,
        last_x=s.ball_x,
        last_y=s.ball_y,
        terminal=bottom & ~over & ~onto,
        last_action=s.last_action,
    )
    return state, breaks.astype(jnp.float32)


def _breakout_obs(s: BreakoutState) -> jax.Array:
    frames = [_cell(9, s.pos), _cell(s.ball_y, s.ball_x), _cell(s.last_y, s.last_x), s.bricks]
    return jnp.stack(frames).astype(jnp.float32)


# ------------------------------------------------------- SpaceInvaders (space_invaders.py)
SHOT_COOL_DOWN, ENEMY_MOVE_INTERVAL, ENEMY_SHOT_INTERVAL = 5, 12, 10  # l. 13-15


class SpaceInvadersState(NamedTuple):
    pos: jax.Array  # the cannon's column (row 9)
    f_bullets: jax.Array  # (10, 10) bool
    e_bullets: jax.Array  # (10, 10) bool
    aliens: jax.Array  # (10, 10) bool
    alien_dir: jax.Array  # -1 or +1
    move_interval: jax.Array  # enemy_move_interval (ramps down to 6)
    move_timer: jax.Array  # alien_move_timer
    alien_shot_timer: jax.Array
    shot_timer: jax.Array
    ramp_index: jax.Array
    terminal: jax.Array
    last_action: jax.Array


_WAVE = (_R[:, None] <= 3) & (_R[None, :] >= 2) & (_R[None, :] <= 7)  # rows 0-3, cols 2-7


def _invaders_reset(u: jax.Array, last_action: jax.Array) -> SpaceInvadersState:
    del u  # no randomness
    empty = jnp.zeros((10, 10), bool)
    return SpaceInvadersState(
        pos=jnp.asarray(5, _I32),
        f_bullets=empty,
        e_bullets=empty,
        aliens=_WAVE,
        alien_dir=jnp.asarray(-1, _I32),
        move_interval=jnp.asarray(ENEMY_MOVE_INTERVAL, _I32),
        move_timer=jnp.asarray(ENEMY_MOVE_INTERVAL, _I32),
        alien_shot_timer=jnp.asarray(ENEMY_SHOT_INTERVAL, _I32),
        shot_timer=jnp.asarray(0, _I32),
        ramp_index=jnp.asarray(0, _I32),
        terminal=jnp.asarray(False),
        last_action=jnp.asarray(last_action, _I32),
    )


def _invaders_act(
    s: SpaceInvadersState, a: jax.Array, ramping: bool
) -> tuple[SpaceInvadersState, jax.Array]:
    fire = (a == 3) & (s.shot_timer == 0)
    f = s.f_bullets | (fire & _cell(9, s.pos))
    shot_timer = jnp.where(fire, SHOT_COOL_DOWN, s.shot_timer)
    pos = jnp.where(a == 1, jnp.maximum(0, s.pos - 1), s.pos)
    pos = jnp.where(a == 2, jnp.minimum(9, s.pos + 1), pos)
    row0 = jnp.zeros((1, 10), bool)
    f = jnp.concatenate([f[1:], row0])  # roll up, row 9 cleared
    e = jnp.concatenate([row0, s.e_bullets[:-1]])  # roll down, row 0 cleared
    term = e[9, pos] | s.aliens[9, pos]
    # the aliens move (l. 76-86)
    al, dr = s.aliens, s.alien_dir
    move = s.move_timer == 0
    move_timer = jnp.where(move, jnp.minimum(al.sum(), s.move_interval), s.move_timer)
    edge = (al[:, 0].any() & (dr < 0)) | (al[:, 9].any() & (dr > 0))
    down, side = move & edge, move & ~edge
    term = term | (down & al[9].any())
    sideways = jnp.where(dr > 0, jnp.roll(al, 1, axis=1), jnp.roll(al, -1, axis=1))
    al = jnp.where(down, jnp.roll(al, 1, axis=0), jnp.where(side, sideways, al))
    dr = jnp.where(down, -dr, dr)
    term = term | (move & al[9, pos])
    # the nearest alien fires (l. 87-90, 110-116): nearest column, ties to the left
    shoot = s.alien_shot_timer == 0
    alien_shot_timer = jnp.where(shoot, ENEMY_SHOT_INTERVAL, s.alien_shot_timer)
    order = jnp.where(al.any(axis=0), jnp.abs(_R - pos) * 10 + _R, 1000)
    col = jnp.argmin(order)
    row = jnp.max(jnp.where(al[:, col], _R, -1))
    e = e | (shoot & _cell(row, col))
    # kills (l. 92-95), timers (l. 99-101), a new wave (l. 102-106)
    kill = al & f
    al, f = al & ~kill, f & ~kill
    cleared = ~al.any()
    ramp = cleared & (s.move_interval > 6) & ramping
    state = SpaceInvadersState(
        pos=pos,
        f_bullets=f,
        e_bullets=e,
        aliens=al | (cleared & _WAVE),
        alien_dir=dr,
        move_interval=s.move_interval - ramp,
        move_timer=move_timer - 1,
        alien_shot_timer=alien_shot_timer - 1,
        shot_timer=shot_timer - (shot_timer > 0),
        ramp_index=s.ramp_index + ramp,
        terminal=term,
        last_action=s.last_action,
    )
    return state, kill.sum().astype(jnp.float32)


def _invaders_obs(s: SpaceInvadersState) -> jax.Array:
    left = s.alien_dir < 0
    frames = [
        _cell(9, s.pos),
        s.aliens,
        s.aliens & left,
        s.aliens & ~left,
        s.f_bullets,
        s.e_bullets,
    ]
    return jnp.stack(frames).astype(jnp.float32)


# ------------------------------------------------------------------------ the API
@dataclasses.dataclass(frozen=True)
class Game:
    """One game as a gymnasium id makes it; hashable, so a static argument of ``jax.jit``.
    ``dataclasses.replace(game, sticky_action_prob=..., ramping=...)`` gives the package's
    ``Environment`` keywords of those names."""

    id: str
    kind: str  # "breakout" or "space_invaders" (the package's module)
    n_channels: int
    n_actions: int  # the minimal action set's size
    sticky_action_prob: float = 0.1
    ramping: bool = True  # difficulty ramping (SpaceInvaders only)

    @property
    def sticky_threshold(self) -> float:
        """The smallest float32 >= p: ``u < it`` iff ``float(u) < p`` for float32 u."""
        t = np.float32(self.sticky_action_prob)
        if float(t) < self.sticky_action_prob:
            t = np.nextafter(t, np.float32(np.inf))
        return float(t)

    @property
    def obs_shape(self) -> tuple[int, int, int]:
        return (self.n_channels, 10, 10)


GAMES = {
    "MinAtar/Breakout-v1": Game("MinAtar/Breakout-v1", "breakout", 4, 3),
    "MinAtar/SpaceInvaders-v1": Game("MinAtar/SpaceInvaders-v1", "space_invaders", 6, 4),
}


def _game(game: Game | str) -> Game:
    return GAMES[game] if isinstance(game, str) else game


def _obs(game: Game, s: Any) -> jax.Array:
    return _breakout_obs(s) if game.kind == "breakout" else _invaders_obs(s)


def uniforms(key: jax.Array) -> jax.Array:
    """A step's ``N_UNIFORMS`` float32 uniforms from ``key`` (the key functions' draws)."""
    return jax.random.uniform(key, (N_UNIFORMS,), jnp.float32)


def reset_u(game: Game | str, u_reset: jax.Array, last_action: Any = 0) -> tuple[Any, jax.Array]:
    """A new episode from the reset uniform (Breakout's ``randint(2)``): ``(state, obs)``.
    ``last_action`` is the sticky action carried over (0 in a new ``Environment``)."""
    game = _game(game)
    reset = _breakout_reset if game.kind == "breakout" else _invaders_reset
    state = reset(jnp.asarray(u_reset, jnp.float32), last_action)
    return state, _obs(game, state)


def step_u(game: Game | str, state: Any, action: Any, u_sticky: jax.Array) -> tuple:
    """One ``env.step(action)`` from the sticky uniform: ``(state, obs, reward, terminated,
    truncated)``; a finished episode stays as it is (reward 0, terminated), as the package's."""
    game = _game(game)
    a = jnp.asarray(action, _I32)
    a = jnp.where(jnp.asarray(u_sticky, jnp.float32) < game.sticky_threshold, state.last_action, a)
    if game.kind == "breakout":
        new, reward = _breakout_act(state, a)
    else:
        new, reward = _invaders_act(state, a, game.ramping)
    new = _tree_where(state.terminal, state, new)._replace(last_action=a)
    reward = jnp.where(state.terminal, 0.0, reward)
    return new, _obs(game, new), reward, new.terminal, jnp.asarray(False)


def step_autoreset_u(game: Game | str, state: Any, action: Any, u: jax.Array) -> tuple:
    """:func:`step_u` on ``u[0]``, and on termination a new episode from ``u[1]`` (the sticky
    action carried, as the package does): ``(state, obs, reward, terminated, truncated,
    final_obs)``, where ``obs`` is the next episode's first frame after a termination and
    ``final_obs`` the frame the step itself ended on (``obs`` when the episode goes on)."""
    game = _game(game)
    new, final_obs, reward, term, trunc = step_u(game, state, action, u[0])
    fresh, fresh_obs = reset_u(game, u[1], new.last_action)
    done = term | trunc
    return (
        _tree_where(done, fresh, new),
        jnp.where(done, fresh_obs, final_obs),
        reward,
        term,
        trunc,
        final_obs,
    )


def reset(game: Game | str, key: jax.Array) -> tuple[Any, jax.Array]:
    """A new episode (a new ``Environment``: last action 0), its reset uniform ``uniforms(key)[1]``."""
    return reset_u(game, uniforms(key)[1])


def step(game: Game | str, state: Any, action: Any, key: jax.Array) -> tuple:
    """:func:`step_u` with ``uniforms(key)[0]``."""
    return step_u(game, state, action, uniforms(key)[0])


def step_autoreset(game: Game | str, state: Any, action: Any, key: jax.Array) -> tuple:
    """:func:`step_autoreset_u` with ``uniforms(key)``."""
    return step_autoreset_u(game, state, action, uniforms(key))


def rollout_u(game: Game | str, state: Any, actions: jax.Array, us: jax.Array) -> tuple:
    """``lax.scan`` of :func:`step_autoreset_u` over ``actions`` (T,) and ``us`` (T, 2):
    ``(state, (obs, reward, terminated, truncated, final_obs))`` stacked over T."""
    game = _game(game)

    def body(s, xs):
        s, *out = step_autoreset_u(game, s, xs[0], xs[1])
        return s, tuple(out)

    return jax.lax.scan(body, state, (jnp.asarray(actions, _I32), jnp.asarray(us, jnp.float32)))
