"""The pass's keyed lookups (what is in flight at a (device, sector), a task's plug record, ...):
open-addressing hash tables over one int64 matrix each, instead of numba typed dicts.

A typed dict costs ~30-50 ns per operation plus an atomic reference count on every access from
compiled code; profiled on the 4.4 M-event fio capture, those NRT_incref/NRT_decref calls alone
took 35 % of the pass. A table here is a plain array, so the compiled code touches no reference
counts, and an operation is a multiply, a shift and a probe or two.

Layout: rows 0..cap-1 are slots [key_a, key_b, value...]; key_a == EMPTY marks a free slot (no
key the pass makes is EMPTY: they are built from device indexes, sectors + 1, slots and pids).
Row cap holds [count, shift]. Linear probing; deletion shifts later entries back (no
tombstones), so a table that sees millions of inserts and deletes stays as short as what is in
flight. The compiled pass stops before a table is half full (`crowded`) and Python doubles it
between calls (`with_room`), as it grows the pools."""

from __future__ import annotations

import numpy as np

from blkscope.analyze.stream.jit import inline_kernel, kernel
from blkscope.analyze.stream.layout import NULL

EMPTY = NULL
_K1 = -7046029254386353131  # 0x9E3779B97F4A7C15 (Fibonacci hashing) as int64
_K2 = 0x5851F42D4C957F2D


def new_table(values: int = 1, capacity: int = 1024) -> np.ndarray:
    """An empty table of `capacity` slots (a power of two) holding `values` int64 per key."""
    table = np.zeros((capacity + 1, 2 + values), dtype=np.int64)
    table[:capacity, 0] = EMPTY
    table[capacity, 1] = 64 - (capacity.bit_length() - 1)
    return table


def with_room(table: np.ndarray, keys: int = 0) -> np.ndarray:
    """table, or a bigger copy, so that it stays at most half full with `keys` more keys."""
    capacity = table.shape[0] - 1
    if 2 * (int(table[capacity, 0]) + 64 + keys) <= capacity:
        return table
    bigger = new_table(table.shape[1] - 2, 2 * capacity)
    _rehash(table, bigger)
    return with_room(bigger, keys)


@kernel
def _rehash(old: np.ndarray, new: np.ndarray) -> None:
    for i in range(old.shape[0] - 1):
        if old[i, 0] != EMPTY:
            s = tab_slot(new, old[i, 0], old[i, 1])
            for c in range(2, old.shape[1]):
                new[s, c] = old[i, c]


@inline_kernel
def crowded(table: np.ndarray) -> bool:
    """More than half full: the pass stops so that Python grows it (an event inserts a handful
    of keys at most, so a crowded table still has room for the event being handled)."""
    capacity = table.shape[0] - 1
    return 2 * table[capacity, 0] > capacity


@inline_kernel
def _home(a: int, b: int, shift: int, mask: int) -> int:
    # the product's top bits: sectors step by 8 or more, so the low bits alone would collide
    return (((a ^ (b * _K2)) * _K1) >> shift) & mask


@inline_kernel
def _probe(table: np.ndarray, a: int, b: int) -> int:
    """The slot holding key (a, b), or the empty slot where it would go."""
    mask = table.shape[0] - 2  # capacity - 1: the last row holds the count and the shift
    i = _home(a, b, table[mask + 1, 1], mask)
    while True:
        ka = table[i, 0]
        if ka == EMPTY or (ka == a and table[i, 1] == b):
            return i
        i = (i + 1) & mask


@kernel
def tab_find(table: np.ndarray, a: int, b: int) -> int:
    """The slot holding key (a, b), or -1."""
    i = _probe(table, a, b)
    return -1 if table[i, 0] == EMPTY else i


@kernel
def tab_slot(table: np.ndarray, a: int, b: int) -> int:
    """The slot of key (a, b), inserted (values 0) if it was not there."""
    i = _probe(table, a, b)
    if table[i, 0] == EMPTY:
        capacity = table.shape[0] - 1
        if table[capacity, 0] >= capacity - 1:
            raise IndexError("keyed table full")  # Python did not grow it: a bug
        table[i, 0] = a
        table[i, 1] = b
        for c in range(2, table.shape[1]):
            table[i, c] = 0
        table[capacity, 0] += 1
    return i


@kernel
def tab_remove(table: np.ndarray, slot: int) -> None:
    """Empty slot, moving back the entries after it whose probe passed it."""
    capacity = table.shape[0] - 1
    mask = capacity - 1
    shift = table[capacity, 1]
    hole = slot
    j = slot
    while True:
        j = (j + 1) & mask
        if table[j, 0] == EMPTY:
            break
        home = _home(table[j, 0], table[j, 1], shift, mask)
        if ((hole - home) & mask) < ((j - home) & mask):
            for c in range(table.shape[1]):  # a loop: a slice copy would allocate
                table[hole, c] = table[j, c]
            hole = j
    table[hole, 0] = EMPTY
    table[capacity, 0] -= 1


@inline_kernel
def tab_get(table: np.ndarray, a: int, b: int, default: int) -> int:
    s = tab_find(table, a, b)
    return table[s, 2] if s >= 0 else default


@inline_kernel
def tab_put(table: np.ndarray, a: int, b: int, value: int) -> None:
    table[tab_slot(table, a, b), 2] = value


@inline_kernel
def tab_pop(table: np.ndarray, a: int, b: int, default: int) -> int:
    s = tab_find(table, a, b)
    if s < 0:
        return default
    value = table[s, 2]
    tab_remove(table, s)
    return value


@inline_kernel
def tab_del(table: np.ndarray, a: int, b: int) -> None:
    s = tab_find(table, a, b)
    if s >= 0:
        tab_remove(table, s)


@kernel
def tab_clear(table: np.ndarray) -> None:
    capacity = table.shape[0] - 1
    table[:capacity, 0] = EMPTY
    table[capacity, 0] = 0
