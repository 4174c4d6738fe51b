"""Tabular Q-learning from replay: online + replay (Szlak & Shamir 2021) and the Blind Cliffwalk (PER Fig. 1).

Both are tight scalar loops, so they use plain Python floats and lists rather
than per-step numpy calls; random numbers are drawn up front in blocks.
"""

from __future__ import annotations

import numpy as np

from memrl.envs.tabular import BlindCliffwalk, TabularMDP, q_star, sample_next
from memrl.memory.sum_tree import SumTree


def q_learning_with_replay(
    mdp: TabularMDP,
    env_steps: int,
    replay_count: int,
    replay_every: int,
    lr_exponent: float,
    eval_every: int,
    seed: int,
) -> dict[str, np.ndarray]:
    """Q-learning with experience replay under a uniformly random behaviour policy.

    Every environment step makes one online Q-learning update; every
    ``replay_every`` steps, ``replay_count`` transitions drawn uniformly from all
    stored ones are replayed as if they were new.  Step sizes are polynomial,
    ``1 / (1 + n(s, a)) ** lr_exponent`` with ``n`` counting every update of
    ``(s, a)``, online or replayed (the rate family of Even-Dar & Mansour that
    the convergence analyses use).  ``replay_count = 0`` is plain Q-learning.

    Returns the evaluation steps and the relative error
    ``max |Q - Q*| / max |Q*|`` at each.
    """
    rng = np.random.default_rng(seed)
    qs = q_star(mdp)
    scale = float(np.abs(qs).max())
    S, A = mdp.n_states, mdp.n_actions
    q = [0.0] * (S * A)
    counts = [0] * (S * A)
    R = mdp.R.reshape(-1).tolist()
    cont = (~mdp.done).reshape(-1).astype(float).tolist()
    gamma = mdp.gamma
    store_sa: list[int] = []
    store_next: list[int] = []

    def update(sa: int, s_next: int) -> None:
        counts[sa] += 1
        lr = 1.0 / (1.0 + counts[sa]) ** lr_exponent
        base = s_next * A
        target = R[sa] + gamma * cont[sa] * max(q[base : base + A])
        q[sa] += lr * (target - q[sa])

    actions = rng.integers(0, A, size=env_steps).tolist()
    draws = rng.random(env_steps).tolist()
    n_replay = (env_steps // replay_every) * replay_count
    replay_u = rng.random(n_replay).tolist()
    r_i = 0
    steps, errors = [], []
    s = 0
    for t in range(1, env_steps + 1):
        a = actions[t - 1]
        s_next = sample_next(mdp, s, a, draws[t - 1])
        sa = s * A + a
        update(sa, s_next)
        store_sa.append(sa)
        store_next.append(s_next)
        if replay_count and t % replay_every == 0:
            n = len(store_sa)
            for _ in range(replay_count):
                j = int(replay_u[r_i] * n)
                r_i += 1
                update(store_sa[j], store_next[j])
        s = s_next
        if t % eval_every == 0:
            steps.append(t)
            errors.append(float(np.max(np.abs(np.array(q) - qs.reshape(-1)))) / scale)
    return {"steps": np.array(steps), "error": np.array(errors)}


def cliffwalk_updates_to_learn(
    n: int,
    method: str,
    lr: float,
    alpha: float,
    epsilon: float,
    mse_threshold: float,
    max_updates: int,
    seed: int,
) -> int:
    """Replay updates until the Q-table's MSE to ``Q*`` drops below ``mse_threshold``.

    ``method``: ``uniform`` (each slot of the memory equally likely),
    ``prioritized`` (proportional PER on a sum-tree: ``P(i) ~ (|delta_i| + eps)^alpha``,
    new slots at max priority) or ``oracle`` (greedily the transition whose
    update lowers the global loss most, in hindsight).  Returns ``max_updates``
    if not learned by then (a censored run).
    """
    if method not in ("uniform", "prioritized", "oracle"):
        raise ValueError(f"unknown replay method '{method}'")
    env = BlindCliffwalk(n)
    tr = env.unique_transitions()
    memory = env.memory()
    qs = env.q_star().reshape(-1).tolist()
    sa = (tr["s"] * 2 + tr["a"]).tolist()
    nxt = (tr["s_next"] * 2).tolist()
    r = tr["r"].tolist()
    cont = (~tr["done"]).astype(float).tolist()
    gamma = env.gamma
    q = [0.0] * (2 * n)
    sse = sum(v * v for v in qs)
    limit = mse_threshold * 2 * n
    rng = np.random.default_rng(seed)

    def td(u: int) -> float:
        b = nxt[u]
        target = r[u] + gamma * cont[u] * max(q[b], q[b + 1])
        return target - q[sa[u]]

    def apply(u: int, delta: float) -> float:
        i = sa[u]
        old = q[i] - qs[i]
        q[i] += lr * delta
        new = q[i] - qs[i]
        return new * new - old * old

    if method == "uniform":
        block = 1 << 16
        t = 0
        while t < max_updates:
            for j in rng.integers(0, len(memory), size=block).tolist():
                u = int(memory[j])
                sse += apply(u, td(u))
                t += 1
                if sse < limit or t >= max_updates:
                    return t
        return max_updates

    if method == "oracle":
        uq = np.arange(2 * n)
        qs_arr = np.array(qs)
        for t in range(1, max_updates + 1):
            q_arr = np.array(q)
            deltas = np.array([td(u) for u in uq])
            idx = np.array(sa)
            gain = (q_arr[idx] + lr * deltas - qs_arr[idx]) ** 2 - (q_arr[idx] - qs_arr[idx]) ** 2
            u = int(np.argmin(gain))
            sse += apply(u, deltas[u])
            if sse < limit:
                return t
        return max_updates

    tree = SumTree(len(memory))
    tree.update(np.arange(len(memory)), 1.0)  # new transitions enter at max priority
    for t in range(1, max_updates + 1):
        j = int(tree.find(rng.random(1) * tree.total)[0])
        u = int(memory[j])
        delta = td(u)
        sse += apply(u, delta)
        if sse < limit:
            return t
        tree.update(j, (abs(td(u)) + epsilon) ** alpha)
    return max_updates
