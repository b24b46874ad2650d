"""Fixed-width tables of things in flight (requests being built, bios, pieces, plug sessions):
int64 matrices whose rows are recycled through a free stack, so memory follows what is in flight
and never the length of the trace. Python grows a table between batches; compiled code only
takes and gives back rows."""

from __future__ import annotations

import numpy as np

from blkscope.analyze.stream.jit import inline_kernel
from blkscope.analyze.stream.layout import NULL


class Pool:
    """One table: `rows` (int64, one row per slot), `free` (a stack of free slots), `alive`."""

    def __init__(self, fields: int, capacity: int = 1024) -> None:
        self.rows = np.full((capacity, fields), NULL, dtype=np.int64)
        self.free = np.arange(capacity - 1, -1, -1, dtype=np.int64)
        self.alive = np.zeros(capacity, dtype=np.uint8)
        self.nfree = np.array([capacity], dtype=np.int64)  # shared with compiled code

    @property
    def capacity(self) -> int:
        return int(self.rows.shape[0])

    def in_use(self) -> int:
        return self.capacity - int(self.nfree[0])

    def reserve(self, wanted: int) -> None:
        """Make sure at least `wanted` slots are free, doubling the table as needed."""
        if int(self.nfree[0]) >= wanted:
            return
        old = self.capacity
        new = old
        while new - self.in_use() < wanted:
            new *= 2
        rows = np.full((new, self.rows.shape[1]), NULL, dtype=np.int64)
        rows[:old] = self.rows
        alive = np.zeros(new, dtype=np.uint8)
        alive[:old] = self.alive
        n = int(self.nfree[0])
        free = np.empty(new, dtype=np.int64)
        free[: new - old] = np.arange(new - 1, old - 1, -1)
        free[new - old : new - old + n] = self.free[:n]
        self.rows, self.alive, self.free = rows, alive, free
        self.nfree[0] = n + new - old


@inline_kernel
def take(rows: np.ndarray, free: np.ndarray, alive: np.ndarray, nfree: np.ndarray) -> int:
    """A free slot, its fields reset to NULL (the caller reserved enough)."""
    nfree[0] -= 1
    slot = free[nfree[0]]
    rows[slot, :] = NULL
    alive[slot] = 1
    return slot


@inline_kernel
def give(slot: int, free: np.ndarray, alive: np.ndarray, nfree: np.ndarray) -> None:
    """Return a slot to its table."""
    alive[slot] = 0
    free[nfree[0]] = slot
    nfree[0] += 1


@inline_kernel
def k1(dev: int, sec: int) -> int:
    return (dev << 48) | (sec + 1)


@inline_kernel
def nmin(a: int, b: int) -> int:
    if a == NULL:
        return b
    if b == NULL:
        return a
    return min(a, b)


@inline_kernel
def nmax(a: int, b: int) -> int:
    if a == NULL:
        return b
    if b == NULL:
        return a
    return max(a, b)
