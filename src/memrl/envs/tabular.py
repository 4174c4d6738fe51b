"""Small tabular MDPs with known optimal Q-values, for replay experiments.

A :class:`TabularMDP` is given by its transition tensor ``P[s, a, s']`` and
expected rewards ``R[s, a]``; :func:`q_star` solves it exactly.  Terminal
transitions are encoded by a ``done[s, a]`` mask (no bootstrap after them).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class TabularMDP:
    P: np.ndarray  # (S, A, S) transition probabilities
    R: np.ndarray  # (S, A) expected reward
    done: np.ndarray  # (S, A) bool: the transition ends the episode
    gamma: float
    name: str = "mdp"

    def __post_init__(self) -> None:
        S, A, S2 = self.P.shape
        if S != S2 or self.R.shape != (S, A) or self.done.shape != (S, A):
            raise ValueError("inconsistent MDP shapes")
        if not np.allclose(self.P.sum(-1), 1.0):
            raise ValueError("transition rows must sum to 1")
        if not 0 < self.gamma < 1:
            raise ValueError(f"gamma must be in (0, 1), got {self.gamma}")

    @property
    def n_states(self) -> int:
        return self.P.shape[0]

    @property
    def n_actions(self) -> int:
        return self.P.shape[1]


def q_star(mdp: TabularMDP, tol: float = 1e-12, max_iter: int = 100_000) -> np.ndarray:
    """Optimal action values by value iteration (exact to ``tol``)."""
    q = np.zeros_like(mdp.R, dtype=np.float64)
    cont = (~mdp.done).astype(np.float64)
    for _ in range(max_iter):
        v = q.max(axis=1)
        new = mdp.R + mdp.gamma * cont * (mdp.P @ v)
        if np.max(np.abs(new - q)) < tol:
            return new
        q = new
    raise RuntimeError("value iteration did not converge")


def rare_reward_chain(n_states: int, p_forward: float, gamma: float) -> TabularMDP:
    """A chain whose only reward lies behind a run of uncertain steps.

    States ``0 .. n-1``; action 1 ("forward") moves one state on with
    probability ``p_forward`` (else stays), action 0 ("reset") returns to 0.
    Any action in the last state pays 1 and returns to 0 (a continuing task).
    Under a uniform behaviour policy the rewarding transition is rare, which is
    the situation in which replaying stored transitions can only help
    Q-learning propagate the reward backwards.
    """
    if n_states < 2:
        raise ValueError("need at least 2 states")
    S, A = n_states, 2
    P = np.zeros((S, A, S))
    R = np.zeros((S, A))
    for s in range(S - 1):
        P[s, 0, 0] = 1.0
        P[s, 1, s + 1] += p_forward
        P[s, 1, s] += 1.0 - p_forward
    P[S - 1, :, 0] = 1.0
    R[S - 1, :] = 1.0
    return TabularMDP(P, R, np.zeros((S, A), bool), gamma, name=f"chain{n_states}")


def sample_next(mdp: TabularMDP, s: int, a: int, u: float) -> int:
    """Next state for uniform draw ``u`` in [0, 1) (inverse-CDF sampling)."""
    return int(np.searchsorted(np.cumsum(mdp.P[s, a]), u, side="right"))


# --------------------------------------------------------------------------- Blind Cliffwalk
@dataclass(frozen=True)
class BlindCliffwalk:
    """The Blind Cliffwalk of Schaul et al. (2016), Sec. 3.1 and Fig. 1.

    ``n`` states in a row; in each, one action ("right") moves on and the other
    ("wrong") ends the episode with reward 0.  The right action in the last
    state ends the episode with reward 1.  ``gamma = 1 - 1/n``.  Action 1 is
    the right one here: a tabular learner cannot tell, so the paper's random
    per-state assignment changes nothing and is left out.

    The replay memory holds exactly what ``2**n`` episodes of a uniformly random
    policy produce in expectation: ``2**(n-k)`` episodes that fail at step ``k``
    and one success, i.e. ``2**(n-s-1)`` copies of both transitions of state
    ``s`` and ``2 (2**n - 1)`` transitions in all.
    """

    n: int

    @property
    def gamma(self) -> float:
        return 1.0 - 1.0 / self.n

    def unique_transitions(self) -> dict[str, np.ndarray]:
        """The ``2n`` distinct transitions: arrays ``s, a, r, s_next, done``."""
        s = np.repeat(np.arange(self.n), 2)
        a = np.tile([0, 1], self.n)
        right = a == 1
        last = s == self.n - 1
        r = (right & last).astype(np.float64)
        done = ~right | last
        s_next = np.where(done, 0, s + 1)
        return {"s": s, "a": a, "r": r, "s_next": s_next, "done": done}

    def memory(self) -> np.ndarray:
        """Index into :meth:`unique_transitions` for every slot of the replay memory."""
        counts = np.repeat(2 ** (self.n - np.arange(self.n) - 1), 2)
        return np.repeat(np.arange(2 * self.n), counts)

    def q_star(self) -> np.ndarray:
        q = np.zeros((self.n, 2))
        q[:, 1] = self.gamma ** (self.n - 1 - np.arange(self.n))
        return q
