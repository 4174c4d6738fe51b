"""An episodic memory table for episodic control (MFEC, Blundell et al. 2016; Pinto 2020).

One table per action maps state embeddings (keys) to the best Monte-Carlo
return seen from them (values):

- **write** ``Q(s, a) <- max(Q(s, a), R)`` when ``s`` is already stored (exact
  match, or — with state aggregation — any key within ``merge_radius``), else
  append, evicting the least recently used key at capacity;
- **estimate**: the stored value on an exact match, else the mean value of the
  ``k`` nearest keys.

Keys live in one preallocated array with their squared norms cached, so a batch
of lookups is one matrix product plus ``argpartition``: nothing is rebuilt on
insert (the common public MFEC rebuilds a KD-tree on every write; see
``benchmarks/episodic_knn.py``).
"""

from __future__ import annotations

import numpy as np


class EpisodicMemory:
    """A fixed-capacity kNN table ``key -> value`` with LRU eviction.

    :param capacity: most keys kept; the least recently used goes first.
    :param dim: key dimension.
    :param k: neighbours averaged for a state not in the table.
    :param merge_radius: 0 keeps exact matches only; > 0 merges a new key into a
        stored key within this Euclidean distance (state aggregation, Pinto 2020).
    """

    def __init__(self, capacity: int, dim: int, k: int = 11, merge_radius: float = 0.0) -> None:
        if capacity < 1 or dim < 1 or k < 1:
            raise ValueError(f"capacity, dim and k must be positive; got {capacity}, {dim}, {k}")
        if merge_radius < 0:
            raise ValueError(f"merge_radius must be >= 0, got {merge_radius}")
        self.capacity, self.dim, self.k = int(capacity), int(dim), int(k)
        self.merge_radius = float(merge_radius)
        self.keys = np.zeros((capacity, dim), dtype=np.float32)
        self.sq_norms = np.zeros(capacity, dtype=np.float32)
        self.values = np.zeros(capacity, dtype=np.float64)
        self.last_used = np.zeros(capacity, dtype=np.int64)
        self.size = 0
        self._clock = 0

    def __len__(self) -> int:
        return self.size

    def _sq_distances(self, queries: np.ndarray) -> np.ndarray:
        """Squared distances, shape (n_queries, size), clipped at 0 against round-off."""
        keys = self.keys[: self.size]
        q = np.asarray(queries, dtype=np.float32).reshape(-1, self.dim)
        d = (q * q).sum(1)[:, None] + self.sq_norms[None, : self.size] - 2.0 * (q @ keys.T)
        return np.maximum(d, 0.0)

    def _match(self, q: np.ndarray, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per query: index of the nearest key and whether it counts as the same state.

        The nearest key's distance is recomputed directly: the expanded form used
        for ranking loses precision to cancellation, which would miss exact matches.
        """
        nearest = d.argmin(1)
        diff = q - self.keys[nearest]
        exact = (diff * diff).sum(1)
        return nearest, exact <= self.merge_radius**2

    def estimate(self, queries: np.ndarray) -> np.ndarray:
        """Value estimates for a batch of states (``-inf``-free: 0 for an empty table)."""
        q = np.asarray(queries, dtype=np.float32).reshape(-1, self.dim)
        if self.size == 0:
            return np.zeros(len(q))
        d = self._sq_distances(q)
        nearest, hit = self._match(q, d)
        k = min(self.k, self.size)
        if k < self.size:
            nbrs = np.argpartition(d, k - 1, axis=1)[:, :k]
        else:
            nbrs = np.broadcast_to(np.arange(self.size), (len(q), self.size))
        out = self.values[nbrs].mean(1)
        out[hit] = self.values[nearest[hit]]
        self._clock += 1
        self.last_used[np.unique(nbrs)] = self._clock
        return out

    def write(self, key: np.ndarray, value: float) -> int:
        """Store ``value`` for ``key`` (max with an existing match); returns its slot."""
        key = np.asarray(key, dtype=np.float32).reshape(self.dim)
        self._clock += 1
        if self.size:
            nearest, hit = self._match(key[None], self._sq_distances(key[None]))
            if hit[0]:
                i = int(nearest[0])
                self.values[i] = max(self.values[i], float(value))
                self.last_used[i] = self._clock
                return i
        if self.size < self.capacity:
            i = self.size
            self.size += 1
        else:
            i = int(self.last_used[: self.size].argmin())  # least recently used
        self.keys[i] = key
        self.sq_norms[i] = float(key @ key)
        self.values[i] = float(value)
        self.last_used[i] = self._clock
        return i
