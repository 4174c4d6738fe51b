"""Slot bookkeeping shared by the episodic tables (MFEC's and NEC's).

A table of fixed capacity stores rows in slots ``0..size-1``. :class:`LRUSlots`
hands out the next free slot, or, when full, the least recently used one; it
keeps a hash from a key's exact bytes to its slot, so revisiting a state costs a
dictionary lookup instead of a nearest-neighbour search. Several byte strings
may point at one slot (states merged into it); all of them go when it is evicted.
"""

from __future__ import annotations

import numpy as np


class LRUSlots:
    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be positive, got {capacity}")
        self.capacity = int(capacity)
        self.size = 0
        self.last_used = np.zeros(capacity, dtype=np.int64)
        self._clock = 0
        self._slot: dict[bytes, int] = {}
        self._owned: dict[int, list[bytes]] = {}

    def tick(self) -> int:
        """Advance the clock (one per read or write); returns the new time."""
        self._clock += 1
        return self._clock

    def touch(self, slots, now: int) -> None:
        self.last_used[slots] = now

    def find(self, raw: bytes) -> int:
        """Slot bound to these exact key bytes, or -1."""
        return self._slot.get(raw, -1)

    def bind(self, raw: bytes, slot: int) -> None:
        """Let ``raw`` find ``slot`` from now on (until the slot is evicted)."""
        self._slot[raw] = slot
        self._owned.setdefault(slot, []).append(raw)

    def allocate(self) -> int:
        """A slot for a new row: the next free one, else the least recently used (evicted)."""
        if self.size < self.capacity:
            self.size += 1
            return self.size - 1
        slot = int(self.last_used[: self.size].argmin())
        for raw in self._owned.pop(slot, []):
            if self._slot.get(raw) == slot:  # a byte string may have been rebound since
                del self._slot[raw]
        return slot

    def state(self) -> dict[str, np.ndarray]:
        """Arrays that :meth:`restore` turns back into this bookkeeping: the used slots'
        times, the clock, and every key byte string bound to a slot."""
        raws, slots = list(self._slot), list(self._slot.values())
        width = len(raws[0]) if raws else 0
        return {
            "last_used": self.last_used[: self.size].copy(),
            "clock": np.array(self._clock),
            "bound_keys": np.frombuffer(b"".join(raws), np.uint8).reshape(len(raws), width),
            "bound_slots": np.array(slots, dtype=np.int64),
        }

    def restore(self, state: dict[str, np.ndarray]) -> None:
        """Take the bookkeeping :meth:`state` returned (into an empty instance)."""
        self.size = len(state["last_used"])
        if self.size > self.capacity:
            raise ValueError(f"{self.size} slots saved, capacity is {self.capacity}")
        self.last_used[: self.size] = state["last_used"]
        self._clock = int(state["clock"])
        self._slot, self._owned = {}, {}
        for raw, slot in zip(state["bound_keys"], state["bound_slots"], strict=True):
            self.bind(raw.tobytes(), int(slot))
