"""An episodic memory table for episodic control (MFEC, Blundell et al. 2016; Pinto 2020).

One table per action maps state embeddings (keys) to the best Monte-Carlo
return seen from them (values):

- **write** ``Q(s, a) <- max(Q(s, a), R)`` when ``s`` is already stored (exact
  match, or — with state aggregation — any key within ``merge_radius``), else
  append, evicting the least recently used key at capacity;
- **estimate**: the stored value on an exact match (or, with aggregation, the
  value of the stored key within ``merge_radius``), else the mean value of the
  ``k`` nearest keys.

Exact matches are found through a hash of the key's bytes (O(1), no distance
computed); the kNN search keeps all keys in one preallocated array with their
squared norms cached, so a batch of lookups is one matrix product plus
``argpartition``. Nothing is rebuilt on insert (the common public MFEC rebuilds
a KD-tree on every write; ``benchmarks/episodic_control.py`` measures both).

:meth:`EpisodicMemory.save` and :meth:`EpisodicMemory.load` keep a table in one ``.npz``
file: a loaded table answers, merges and evicts exactly as the saved one would have.

``scanned`` counts the stored keys compared against queries: a deterministic
measure of lookup cost (wall-clock time is reported separately).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from memrl.memory.slots import LRUSlots
from memrl.runtime import atomic_path


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
        self.slots = LRUSlots(capacity)
        self.scanned = 0  # keys compared against queries in kNN searches

    def __len__(self) -> int:
        return self.slots.size

    @property
    def size(self) -> int:
        return self.slots.size

    def _as_keys(self, x: np.ndarray) -> np.ndarray:
        q = np.ascontiguousarray(x, dtype=np.float32)
        if q.size % self.dim:
            raise ValueError(f"keys must have {self.dim} columns, got shape {np.shape(x)}")
        # + 0.0 turns -0.0 into 0.0: equal keys must have equal bytes (exact matches hash them)
        return q.reshape(-1, self.dim) + np.float32(0.0)

    def _sq_distances(self, q: np.ndarray) -> np.ndarray:
        """Squared distances, shape (n_queries, size), clipped at 0 against round-off."""
        keys = self.keys[: self.size]
        self.scanned += len(q) * self.size
        d = (q * q).sum(1)[:, None] + self.sq_norms[None, : self.size] - 2.0 * (q @ keys.T)
        return np.maximum(d, 0.0)

    def _nearest_within_radius(self, key: np.ndarray) -> int:
        """Slot of the stored key nearest ``key`` if within ``merge_radius``, else -1.

        The nearest key's distance is recomputed directly: the expanded form used
        for ranking loses precision to cancellation.
        """
        i = int(self._sq_distances(key[None])[0].argmin())
        diff = key - self.keys[i]
        return i if float(diff @ diff) <= self.merge_radius**2 else -1

    def estimate(self, queries: np.ndarray) -> np.ndarray:
        """Value estimates for a batch of states (0 for an empty table)."""
        q = self._as_keys(queries)
        out = np.zeros(len(q))
        if self.size == 0:
            return out
        now = self.slots.tick()
        hits = [self.slots.find(row.tobytes()) for row in q]
        miss = np.array([h < 0 for h in hits])
        for j, h in enumerate(hits):
            if h >= 0:
                out[j] = self.values[h]
                self.slots.touch(h, now)
        if miss.any():
            qm = q[miss]
            d = self._sq_distances(qm)
            k = min(self.k, self.size)
            if k < self.size:
                nbrs = np.argpartition(d, k - 1, axis=1)[:, :k]
            else:
                nbrs = np.broadcast_to(np.arange(self.size), (len(qm), self.size))
            est = self.values[nbrs].mean(1)
            if self.merge_radius > 0:  # an aggregated state reads its representative's value
                near = d.argmin(1)
                diff = qm - self.keys[near]
                inside = (diff * diff).sum(1) <= self.merge_radius**2
                est[inside] = self.values[near[inside]]
                self.slots.touch(near[inside], now)
            out[miss] = est
            self.slots.touch(nbrs.ravel(), now)
        return out

    def write(self, key: np.ndarray, value: float) -> int:
        """Store ``value`` for ``key`` (max with an existing match); returns its slot."""
        key = self._as_keys(key)[0]
        now = self.slots.tick()
        raw = key.tobytes()
        i = self.slots.find(raw)
        if i < 0 and self.merge_radius > 0 and self.size:
            i = self._nearest_within_radius(key)
            if i >= 0:  # remember the merge: the next visit is an O(1) hit
                self.slots.bind(raw, i)
        if i >= 0:
            self.values[i] = max(self.values[i], float(value))
            self.slots.touch(i, now)
            return i
        i = self.slots.allocate()
        self.keys[i] = key
        self.sq_norms[i] = float(key @ key)
        self.values[i] = float(value)
        self.slots.touch(i, now)
        self.slots.bind(raw, i)
        return i

    def save(self, path: str | Path) -> Path:
        """Write the table to ``path`` (``.npz``, atomically: an interrupted save leaves the
        last one): its settings, stored keys and values, and the LRU and exact-match state."""
        path = Path(path)
        arrays = {f"slots_{k}": v for k, v in self.slots.state().items()}
        settings = [self.capacity, self.dim, self.k, self.merge_radius, self.scanned]
        with atomic_path(path) as tmp, open(tmp, "wb") as fh:
            np.savez(
                fh,
                settings=np.array(settings, dtype=np.float64),
                keys=self.keys[: self.size],
                sq_norms=self.sq_norms[: self.size],
                values=self.values[: self.size],
                **arrays,
            )
        return path

    @classmethod
    def load(cls, path: str | Path) -> EpisodicMemory:
        """A table saved by :meth:`save`."""
        with np.load(path) as f:
            capacity, dim, k, radius, scanned = f["settings"].tolist()
            table = cls(int(capacity), int(dim), int(k), radius)
            n = len(f["keys"])
            table.keys[:n], table.sq_norms[:n], table.values[:n] = (
                f["keys"],
                f["sq_norms"],
                f["values"],
            )
            table.slots.restore({k[6:]: f[k] for k in f.files if k.startswith("slots_")})
            table.scanned = int(scanned)
        return table
