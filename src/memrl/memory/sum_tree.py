"""A vectorised sum-tree for proportional prioritized sampling (Schaul et al. 2016, App. B.2.1).

Leaves hold priorities ``p_i``; every inner node holds the sum of its children,
so sampling ``i`` with probability ``p_i / sum(p)`` and updating a priority both
cost ``O(log N)``.  All operations take arrays: a batch of 256 is a handful of
numpy calls per tree level rather than 256 Python loops.
"""

from __future__ import annotations

import numpy as np


class SumTree:
    """Binary sum-tree over ``capacity`` leaves, stored in one float64 array.

    Node 1 is the root, node ``k`` has children ``2k`` and ``2k + 1``; leaves are
    nodes ``size .. 2 * size - 1`` where ``size`` is ``capacity`` rounded up to a
    power of two (the padding leaves stay at zero and are never sampled).
    """

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be positive, got {capacity}")
        self.capacity = int(capacity)
        self.depth = max(1, int(np.ceil(np.log2(self.capacity))))
        self.size = 1 << self.depth
        self.tree = np.zeros(2 * self.size, dtype=np.float64)

    @property
    def total(self) -> float:
        return float(self.tree[1])

    def __getitem__(self, idx: np.ndarray | int) -> np.ndarray:
        return self.tree[np.asarray(idx) + self.size]

    def update(self, idx: np.ndarray | int, priority: np.ndarray | float) -> None:
        """Set leaves ``idx`` to ``priority`` and refresh their ancestors.

        With repeated indices the last value wins, as with numpy fancy assignment.
        """
        idx = np.atleast_1d(np.asarray(idx, dtype=np.int64))
        priority = np.broadcast_to(np.asarray(priority, dtype=np.float64), idx.shape)
        if idx.size == 0:
            return
        if idx.min() < 0 or idx.max() >= self.capacity:
            raise IndexError(f"leaf index out of range [0, {self.capacity})")
        if not np.all(np.isfinite(priority)) or np.any(priority < 0):
            raise ValueError("priorities must be finite and non-negative")
        if idx.size == 1:  # scalar fast path: the tabular learners update one leaf at a time
            node = int(idx[0]) + self.size
            tree = self.tree
            tree[node] = float(priority[0])
            node >>= 1
            while node:
                tree[node] = tree[2 * node] + tree[2 * node + 1]
                node >>= 1
            return
        nodes = idx + self.size
        self.tree[nodes] = priority
        # parents of a sorted, duplicate-free node list stay sorted: dedupe by neighbours
        nodes = np.unique(nodes >> 1)
        tree = self.tree
        while True:
            tree[nodes] = tree[2 * nodes] + tree[2 * nodes + 1]
            if nodes[0] == 1:
                break
            nodes >>= 1
            keep = np.empty(nodes.shape, dtype=bool)
            keep[0] = True
            np.not_equal(nodes[1:], nodes[:-1], out=keep[1:])
            nodes = nodes[keep]

    def find(self, mass: np.ndarray) -> np.ndarray:
        """Leaf indices whose prefix-sum interval contains each value of ``mass``.

        ``mass`` should lie in ``[0, total)``.  A subtree of zero mass is never
        entered, so float round-off cannot return an empty (padding) leaf.
        """
        mass = np.array(mass, dtype=np.float64, copy=True)
        nodes = np.ones(mass.shape, dtype=np.int64)
        for _ in range(self.depth):
            left = 2 * nodes
            left_mass = self.tree[left]
            go_right = (mass >= left_mass) & (self.tree[left + 1] > 0)
            go_right |= left_mass <= 0
            mass -= np.where(go_right, left_mass, 0.0)
            nodes = left + go_right
        return nodes - self.size

    def sample(self, batch_size: int, rng: np.random.Generator | None = None) -> np.ndarray:
        """Stratified proportional sampling: one draw from each of ``batch_size`` equal segments."""
        total = self.total
        if total <= 0:
            raise ValueError("cannot sample from a sum-tree whose total priority is zero")
        uniform = rng.random(batch_size) if rng is not None else np.random.random(batch_size)
        bounds = (np.arange(batch_size) + uniform) * (total / batch_size)
        return self.find(np.minimum(bounds, np.nextafter(total, 0)))
