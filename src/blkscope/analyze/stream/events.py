"""Events into the streaming pass: read events.parquet in row-group batches, in time order, as
one int64 matrix per batch (strings become integer codes the compiled code can compare)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from blkscope.analyze.memory import bound_memory
from blkscope.analyze.stream import layout as L
from blkscope.analyze.stream.columns import nullable
from blkscope.interrupts import track

COLUMNS = [
    "time_ns", "input_id", "line_no", "dev_major", "dev_minor", "action", "op", "flush",
    "rwbs", "sector", "nsectors", "split_sector", "remap_dev_major", "remap_dev_minor",
    "remap_sector", "error", "pid", "comm",
]  # fmt: skip
STRING_COLUMNS = ["action", "op", "rwbs", "comm"]
BATCH_ROWS = 1 << 17
# Row groups read by one Arrow reader: a reader over the whole file keeps ~3.6 MB per million
# events it has handed out until it ends (measured on the 10x fio capture's events.parquet:
# 160 MB at 44 M events, the pass's RSS growing with the trace), one per 16 groups (~1 M
# events) stays flat.
GROUPS_PER_READER = 16
INT64_MIN = int(np.iinfo(np.int64).min)


class OutOfOrder(Exception):
    """events.parquet is not in (time, input, line) order: read it through a sort instead."""


class Codes:
    """A string column's global dictionary: each distinct string gets the next integer."""

    def __init__(self) -> None:
        self.values: list[str] = []
        self._known = pa.array([], type=pa.string())

    def encode(self, column: pa.ChunkedArray | pa.Array) -> np.ndarray:
        """int64 codes of column (L.NULL for null): a hash lookup in Arrow (index_in) of the
        strings seen so far, then once more after adding the ones this column brings. A
        dictionary-encoded column (events.parquet's strings, read as Parquet stores them) has
        only its dictionary looked up."""
        if isinstance(column, pa.DictionaryArray):
            return self._encode_dictionary(column)
        codes = pc.index_in(column, value_set=self._known)
        new = pc.and_(pc.is_null(codes), pc.is_valid(column))
        if pc.any(new).as_py():
            for value in pc.unique(pc.filter(column, new)).to_pylist():
                self.values.append(value)
            self._known = pa.array(self.values, type=pa.string())
            codes = pc.index_in(column, value_set=self._known)
        return _numpy(pc.fill_null(pc.cast(codes, pa.int64()), L.NULL))

    def _encode_dictionary(self, column: pa.DictionaryArray) -> np.ndarray:
        if len(column.dictionary) == 0:
            return np.full(len(column), L.NULL, dtype=np.int64)
        known = np.append(self.encode(column.dictionary), L.NULL)  # a null index: the last
        indices = column.indices
        if indices.null_count:
            indices = indices.fill_null(len(known) - 1)
        return known[indices.to_numpy(zero_copy_only=False)]

    def strings(self, codes: np.ndarray) -> pa.Array:
        """The strings of codes (L.NULL: null)."""
        indices = nullable(codes, codes == L.NULL, pa.int32())
        dictionary = pa.array(self.values or [""], type=pa.string())
        return pa.DictionaryArray.from_arrays(indices, dictionary).cast(pa.string())


class Devices:
    """(major, minor) <-> small device index (in the order devices first appear)."""

    def __init__(self) -> None:
        self.pairs: list[tuple[int, int]] = []
        self._sorted = np.zeros(0, dtype=np.int64)  # the known keys, sorted
        self._index = np.zeros(0, dtype=np.int64)  # each sorted key's device index

    def encode(self, major: np.ndarray, minor: np.ndarray) -> np.ndarray:
        """Device indexes: a binary search among the few known devices (an Arrow hash lookup
        of every event's key cost 20 ns an event)."""
        key = (major.astype(np.int64) << 32) | minor.astype(np.int64)
        idx, found = self._lookup(key)
        if not found.all():
            new, first = np.unique(key[~found], return_index=True)
            for k in new[np.argsort(first)].tolist():
                self.pairs.append((k >> 32, k & 0xFFFFFFFF))
            keys = np.array([(a << 32) | b for a, b in self.pairs], dtype=np.int64)
            order = np.argsort(keys, kind="stable")
            self._sorted, self._index = keys[order], order.astype(np.int64)
            idx, _ = self._lookup(key)
        return idx

    def _lookup(self, key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if not len(self._sorted):
            return np.zeros(len(key), dtype=np.int64), np.zeros(len(key), dtype=bool)
        pos = np.minimum(np.searchsorted(self._sorted, key), len(self._sorted) - 1)
        return self._index[pos], self._sorted[pos] == key

    def columns(self, dev: np.ndarray) -> tuple[pa.Array, pa.Array]:
        pairs = np.array(self.pairs or [(0, 0)], dtype=np.int32).reshape(-1, 2)
        return pa.array(pairs[dev, 0]), pa.array(pairs[dev, 1])


def _numpy(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    return (
        values.to_numpy()
        if isinstance(values, pa.ChunkedArray)
        else values.to_numpy(zero_copy_only=False)
    )


def _filled(batch: pa.RecordBatch, name: str, null: int) -> np.ndarray:
    """An integer column's values (its own width: the matrix assignment widens them), nulls as
    `null`. Read from Arrow's buffers: a cast, then fill_null, then to_numpy each copied the
    column (52.6 -> 20.8 ns an event for the 13 integer columns, 10x fio capture)."""
    col = batch.column(name)
    if len(col) == 0:
        return np.zeros(0, dtype=np.int64)
    if not pa.types.is_integer(col.type):
        return _converted(col, null)
    dtype = col.type.to_pandas_dtype()
    if col.null_count and np.iinfo(dtype).min <= null <= np.iinfo(dtype).max:
        # Arrow fills in one pass (an all-null column, the remaps on most traces, at no cost):
        # 39 -> 14 ms for the 1x fio capture's sectors, 35 -> 6 for its remap sectors
        return pc.fill_null(col, null).to_numpy()
    if col.null_count == len(col):
        return np.full(len(col), null, dtype=np.int64)
    start, stop = col.offset, col.offset + len(col)
    values = np.frombuffer(col.buffers()[1], dtype=dtype)[start:stop]
    if not col.null_count:
        return values
    bits = np.frombuffer(col.buffers()[0], dtype=np.uint8)
    valid = np.unpackbits(bits, count=stop, bitorder="little")[start:].view(bool)
    out = values.astype(np.int64)
    np.putmask(out, ~valid, null)
    return out


def _converted(col: pa.Array, null: int) -> np.ndarray:
    if col.type != pa.int64():
        col = col.cast(pa.int64())
    if col.null_count:
        col = col.fill_null(null)
    return col.to_numpy(zero_copy_only=False)


class EventCoder:
    """Turns Arrow batches into the pass's event matrix, keeping the dictionaries."""

    def __init__(self) -> None:
        self.rwbs, self.comm, self.devices = Codes(), Codes(), Devices()
        self._actions = Codes()
        self._action_map = np.zeros(0, dtype=np.int64)
        self._ops = Codes()
        self._op_map = np.zeros(0, dtype=np.int64)
        # (time, event id) of the last event seen: times may be negative (a blktrace CPU's
        # events from before the trace's base time), so nothing comes before the smallest int64
        self.last = (INT64_MIN, INT64_MIN)

    def matrix(self, batch: pa.RecordBatch) -> np.ndarray:
        """The batch as the pass's (events, E_FIELDS) int64 matrix, in Fortran order: each
        column is filled in one contiguous write (a row-major fill walks the whole matrix once
        per column), and the compiled pass reads the few columns an event needs. Rows whose
        action the pass ignores keep action 0 (the pass skips them)."""
        n = batch.num_rows
        ev = np.empty((n, L.E_FIELDS), dtype=np.int64, order="F")
        ev[:, L.E_T] = _filled(batch, "time_ns", 0)
        ev[:, L.E_EID] = _filled(batch, "input_id", 0).astype(np.int64) << 40
        ev[:, L.E_EID] += _filled(batch, "line_no", 0)
        self._check_order(ev[:, L.E_T], ev[:, L.E_EID])
        ev[:, L.E_DEV] = self.devices.encode(
            _filled(batch, "dev_major", 0), _filled(batch, "dev_minor", 0)
        )
        acts = self._actions.encode(batch.column("action"))
        if len(self._action_map) < len(self._actions.values):
            self._action_map = np.array(
                [L.ACTIONS.get(a, 0) for a in self._actions.values], dtype=np.int64
            )
        ev[:, L.E_ACT] = self._action_map[acts]
        ops = self._ops.encode(batch.column("op"))
        if len(self._op_map) < len(self._ops.values):
            # events.op is R, W, D or N (its schema); N for anything else
            self._op_map = np.array(
                [L.OPS.index(o) if o in L.OPS[:4] else L.OP_N for o in self._ops.values],
                dtype=np.int64,
            )
        ev[:, L.E_OP] = self._op_map[ops]
        ev[:, L.E_FLUSH] = batch.column("flush").to_numpy(zero_copy_only=False)
        ev[:, L.E_RWBS] = self.rwbs.encode(batch.column("rwbs"))
        ev[:, L.E_SEC] = _filled(batch, "sector", -1)
        ev[:, L.E_NSEC] = _filled(batch, "nsectors", -1)
        ev[:, L.E_SPLIT] = _filled(batch, "split_sector", -1)
        ev[:, L.E_RMAJ] = _filled(batch, "remap_dev_major", L.NULL)
        ev[:, L.E_RMIN] = _filled(batch, "remap_dev_minor", L.NULL)
        ev[:, L.E_RSEC] = _filled(batch, "remap_sector", L.NULL)
        ev[:, L.E_ERR] = _filled(batch, "error", L.NULL)
        ev[:, L.E_PID] = _filled(batch, "pid", 0)
        ev[:, L.E_COMM] = self.comm.encode(batch.column("comm"))
        ev[:, L.E_DLESS] = 0
        return ev

    def _check_order(self, t: np.ndarray, e: np.ndarray) -> None:
        if not len(t):
            return
        last_t, last_e = self.last
        if t[0] < last_t or (t[0] == last_t and e[0] <= last_e):
            raise OutOfOrder
        dt = t[1:] - t[:-1]
        if np.any((dt < 0) | ((dt == 0) & (e[1:] <= e[:-1]))):
            raise OutOfOrder
        self.last = (int(t[-1]), int(e[-1]))


def batches(events: Path, in_order: bool) -> Iterator[pa.RecordBatch]:
    """events.parquet's rows in (time_ns, input_id, line_no) order, a row group at a time: as
    stored when in_order (one blkparse input is in time order), else through DuckDB's sort
    (which spills to disk rather than hold the trace)."""
    if in_order:
        # the strings as Parquet stores them (a dictionary per row group): only the dictionary
        # is looked up (Codes.encode), not every row's string
        file = pq.ParquetFile(events, read_dictionary=STRING_COLUMNS)
        for first in range(0, file.num_row_groups, GROUPS_PER_READER):
            groups = range(first, min(first + GROUPS_PER_READER, file.num_row_groups))
            yield from file.iter_batches(batch_size=BATCH_ROWS, columns=COLUMNS, row_groups=groups)
        return
    con = track(duckdb.connect())
    bound_memory(con, events.parent)  # the analysis removes the spill folder when it is done
    path = events.as_posix().replace("'", "''")
    cols = ", ".join(COLUMNS)
    rel = con.sql(f"SELECT {cols} FROM read_parquet('{path}') ORDER BY time_ns, input_id, line_no")
    yield from rel.to_arrow_reader(BATCH_ROWS)
