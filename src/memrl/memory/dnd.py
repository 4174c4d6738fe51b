"""The differentiable neural dictionary of Neural Episodic Control (Pritzel et al. 2017).

One :class:`DND` per action holds keys ``h_i`` (embeddings of visited states)
and values ``Q_i`` (N-step return estimates). A read returns

    Q(h) = sum_i w_i Q_i,   w_i = k(h, h_i) / sum_j k(h, h_j),   k(h, h_i) = 1 / (||h - h_i||^2 + delta)

over the ``p`` nearest keys. Reads are differentiable in ``h`` (training the
embedding network) and in the neighbours' keys and values, which
:meth:`DND.apply_gradients` updates in place (sparse: only rows that were read).
A write of a key already stored moves its value toward the new return
(``Q_i <- Q_i + alpha (G - Q_i)``, the paper's tabular update); a new key is
appended, evicting the least recently used at capacity.

Keys live in one preallocated tensor whose numpy view serves the exact kNN
search (one matrix product + ``argpartition``; cached squared norms), so
nothing is rebuilt on insert.
"""

from __future__ import annotations

import numpy as np
import torch as th

from memrl.memory.slots import LRUSlots


def inverse_distance_kernel(sq_dist: th.Tensor, delta: float) -> th.Tensor:
    """NEC's kernel ``1 / (||h - h_i||^2 + delta)``."""
    return 1.0 / (sq_dist + delta)


def kernel_read(h: th.Tensor, keys: th.Tensor, values: th.Tensor, delta: float) -> th.Tensor:
    """Kernel-weighted value of queries ``h`` (n, d) over their neighbours ``keys`` (n, p, d), ``values`` (n, p)."""
    sq = ((h[:, None, :] - keys) ** 2).sum(-1)
    w = inverse_distance_kernel(sq, delta)
    return (w * values).sum(1) / w.sum(1)


class DND:
    """Differentiable neural dictionary for one action.

    :param capacity: most keys kept (least recently used evicted first).
    :param key_dim: embedding size.
    :param neighbours: ``p``, keys read per query.
    :param delta: kernel constant.
    :param alpha: tabular write rate for a key already stored.
    """

    def __init__(
        self,
        capacity: int,
        key_dim: int,
        neighbours: int = 50,
        delta: float = 1e-3,
        alpha: float = 0.1,
    ) -> None:
        if capacity < 1 or key_dim < 1 or neighbours < 1:
            raise ValueError("capacity, key_dim and neighbours must be positive")
        self.capacity, self.key_dim, self.p = int(capacity), int(key_dim), int(neighbours)
        self.delta, self.alpha = float(delta), float(alpha)
        self.keys = th.zeros(capacity, key_dim)
        self.values = th.zeros(capacity)
        self._keys_np = self.keys.numpy()  # numpy views sharing memory with the tensors
        self._values_np = self.values.numpy()
        self._sq = np.zeros(capacity, dtype=np.float32)
        self.slots = LRUSlots(capacity)

    def __len__(self) -> int:
        return self.slots.size

    @property
    def size(self) -> int:
        return self.slots.size

    def search(self, h: np.ndarray) -> np.ndarray:
        """Indices (n, min(p, size)) of the nearest stored keys to each query row."""
        q = np.ascontiguousarray(h, dtype=np.float32).reshape(-1, self.key_dim)
        n = self.size
        p = min(self.p, n)
        d = self._sq[:n][None] - 2.0 * (q @ self._keys_np[:n].T)  # + |q|^2, constant per row
        idx = (
            np.argpartition(d, p - 1, axis=1)[:, :p]
            if p < n
            else np.tile(np.arange(n), (len(q), 1))
        )
        self.slots.touch(idx.ravel(), self.slots.tick())
        return idx

    def lookup(self, h: np.ndarray) -> np.ndarray:
        """Q estimates for query rows ``h`` (n, d), no gradients (0 for an empty table).

        Plain numpy: acting reads every action's table at every step, where
        torch's per-call overhead would dominate.
        """
        q = np.ascontiguousarray(h, dtype=np.float32).reshape(-1, self.key_dim)
        if self.size == 0:
            return np.zeros(len(q))
        idx = self.search(q)
        diff = self._keys_np[idx] - q[:, None, :]
        w = 1.0 / ((diff * diff).sum(-1) + self.delta)
        return (w * self._values_np[idx]).sum(1) / w.sum(1)

    def read(
        self, h: th.Tensor, idx: np.ndarray
    ) -> tuple[th.Tensor, tuple[th.Tensor, th.Tensor, th.Tensor]]:
        """Differentiable read of ``h`` over neighbours ``idx``.

        Returns the estimates and ``(idx, key_leaf, value_leaf)`` for :meth:`apply_gradients`.
        """
        ti = th.from_numpy(idx)
        k = self.keys[ti].requires_grad_(True)
        v = self.values[ti].requires_grad_(True)
        return kernel_read(h, k, v, self.delta), (ti, k, v)

    @th.no_grad()
    def apply_gradients(self, handle: tuple[th.Tensor, th.Tensor, th.Tensor], lr: float) -> None:
        """SGD step on the keys and values read through ``handle`` (after ``backward``)."""
        ti, k, v = handle
        flat = ti.reshape(-1)
        if k.grad is not None:
            self.keys.index_add_(0, flat, -lr * k.grad.reshape(-1, self.key_dim))
            rows = th.unique(flat).numpy()
            self._sq[rows] = (self._keys_np[rows] ** 2).sum(1)
        if v.grad is not None:
            self.values.index_add_(0, flat, -lr * v.grad.reshape(-1))

    @th.no_grad()
    def write(self, h: np.ndarray, value: float) -> int:
        """Store ``(h, value)``: tabular update on an exact match, else append/evict."""
        key = np.ascontiguousarray(h, dtype=np.float32).reshape(self.key_dim)
        raw = key.tobytes()
        now = self.slots.tick()
        i = self.slots.find(raw)
        if i >= 0 and np.array_equal(self._keys_np[i], key):  # keys move under SGD
            self.values[i] += self.alpha * (float(value) - float(self.values[i]))
            self.slots.touch(i, now)
            return i
        i = self.slots.allocate()
        self._keys_np[i] = key
        self._sq[i] = float(key @ key)
        self.values[i] = float(value)
        self.slots.touch(i, now)
        self.slots.bind(raw, i)
        return i
