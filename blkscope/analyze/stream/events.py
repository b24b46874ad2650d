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

from blkscope.analyze.stream import layout as L

COLUMNS = [
    "time_ns", "input_id", "line_no", "dev_major", "dev_minor", "action", "op", "flush",
    "rwbs", "sector", "nsectors", "split_sector", "remap_dev_major", "remap_dev_minor",
    "remap_sector", "error", "pid", "comm",
]  # fmt: skip
BATCH_ROWS = 1 << 20


class OutOfOrder(Exception):
    """events.parquet is not in (time, input, line) order: read it through a sort instead."""


class Codes:
    """A string column's global dictionary: each distinct string gets the next integer."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}
        self.values: list[str] = []

    def encode(self, column: pa.ChunkedArray | pa.Array) -> np.ndarray:
        """int64 codes of column (L.NULL for null)."""
        enc = pc.dictionary_encode(column)
        if isinstance(enc, pa.ChunkedArray):
            enc = enc.combine_chunks()
        local = np.array(
            [self._code(v) for v in enc.dictionary.to_pylist()] + [L.NULL], dtype=np.int64
        )
        idx = enc.indices.fill_null(len(local) - 1).to_numpy(zero_copy_only=False)
        return local[idx]

    def _code(self, value: str) -> int:
        code = self.index.get(value)
        if code is None:
            code = self.index[value] = len(self.values)
            self.values.append(value)
        return code

    def strings(self, codes: np.ndarray) -> pa.Array:
        """The strings of codes (L.NULL: null)."""
        mask = codes == L.NULL
        indices = pa.array(np.where(mask, 0, codes).astype(np.int32), mask=mask)
        dictionary = pa.array(self.values or [""], type=pa.string())
        return pa.DictionaryArray.from_arrays(indices, dictionary).cast(pa.string())


class Devices:
    """(major, minor) <-> small device index."""

    def __init__(self) -> None:
        self.index: dict[int, int] = {}
        self.pairs: list[tuple[int, int]] = []

    def encode(self, major: np.ndarray, minor: np.ndarray) -> np.ndarray:
        key = (major.astype(np.int64) << 32) | minor.astype(np.int64)
        uniq, inverse = np.unique(key, return_inverse=True)
        local = np.empty(len(uniq), dtype=np.int64)
        for j, k in enumerate(uniq.tolist()):
            if k not in self.index:
                self.index[k] = len(self.pairs)
                self.pairs.append((k >> 32, k & 0xFFFFFFFF))
            local[j] = self.index[k]
        return local[inverse]

    def columns(self, dev: np.ndarray) -> tuple[pa.Array, pa.Array]:
        pairs = np.array(self.pairs or [(0, 0)], dtype=np.int32).reshape(-1, 2)
        return pa.array(pairs[dev, 0]), pa.array(pairs[dev, 1])


def _filled(batch: pa.RecordBatch, name: str, null: int) -> np.ndarray:
    col = batch.column(name)
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
        self.last = (-1, -1)

    def matrix(self, batch: pa.RecordBatch) -> np.ndarray:
        n = batch.num_rows
        ev = np.empty((n, L.E_FIELDS), dtype=np.int64)
        ev[:, L.E_T] = _filled(batch, "time_ns", 0)
        ev[:, L.E_EID] = (_filled(batch, "input_id", 0) << 40) + _filled(batch, "line_no", 0)
        self._check_order(ev)
        ev[:, L.E_DEV] = self.devices.encode(
            _filled(batch, "dev_major", 0), _filled(batch, "dev_minor", 0)
        )
        acts = self._actions.encode(batch.column("action"))
        if len(self._action_map) < len(self._actions.values):
            self._action_map = np.array(
                [L.ACTIONS.get(a, 0) for a in self._actions.values], dtype=np.int64
            )
        ev[:, L.E_ACT] = self._action_map[acts]
        ops = np.array([L.OPS.index(o) if o in L.OPS else 3 for o in ("R", "W", "D", "N")])
        op_codes = Codes()
        op_codes.values, op_codes.index = ["R", "W", "D", "N"], {"R": 0, "W": 1, "D": 2, "N": 3}
        ev[:, L.E_OP] = ops[op_codes.encode(batch.column("op"))]
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
        return ev[ev[:, L.E_ACT] != 0]

    def _check_order(self, ev: np.ndarray) -> None:
        if not len(ev):
            return
        t, e = ev[:, L.E_T], ev[:, L.E_EID]
        prev_t = np.concatenate(([self.last[0]], t[:-1]))
        prev_e = np.concatenate(([self.last[1]], e[:-1]))
        if np.any((t < prev_t) | ((t == prev_t) & (e <= prev_e))):
            raise OutOfOrder
        self.last = (int(t[-1]), int(e[-1]))


def batches(events: Path, in_order: bool) -> Iterator[pa.RecordBatch]:
    """events.parquet's rows in (time_ns, input_id, line_no) order, a row group at a time: as
    stored when in_order (one blkparse input is in time order), else through DuckDB's sort
    (which spills to disk rather than hold the trace)."""
    if in_order:
        yield from pq.ParquetFile(events).iter_batches(batch_size=BATCH_ROWS, columns=COLUMNS)
        return
    con = duckdb.connect()
    path = events.as_posix().replace("'", "''")
    cols = ", ".join(COLUMNS)
    rel = con.sql(f"SELECT {cols} FROM read_parquet('{path}') ORDER BY time_ns, input_id, line_no")
    yield from rel.to_arrow_reader(BATCH_ROWS)
