"""The numba streaming pass, kept until the Rust pass (run.py) has been proven against it
(tests/analyze/test_pass_differential.py): events in, `requests` and `bios` Parquet out, in batches."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from blkscope.analyze.correlation import device_spans
from blkscope.analyze.stream import layout as L
from blkscope.analyze.stream.columns import nullable
from blkscope.analyze.stream.core import BATCH, TRACE_END, step
from blkscope.analyze.stream.depth_run import DepthWalk, device_bounds
from blkscope.analyze.stream.events import EventCoder, OutOfOrder, batches
from blkscope.analyze.stream.iodist import IO_COUNTS, io_counts_table, new_io_counts
from blkscope.analyze.stream.keyed import new_table, with_room
from blkscope.analyze.stream.pools import Pool
from blkscope.analyze.stream.q2q import (
    _KEY_CLASS_SHIFT,
    _KEY_DEV_SHIFT,
    _WRITTEN,
    N_SCOPES,
    STAGE_TIME_COLUMNS,
    UNKNOWN_COMM_CODE,
    OpClasses,
    Q2QWriter,
    _strings,
)
from blkscope.analyze.stream.state import State
from blkscope.analyze.stream.threads import Background, Prefetch
from blkscope.errors import DatasetError
from blkscope.numba_kernels import is_cached
from blkscope.progress import ProgressCallback
from blkscope.schemas import TABLES
from blkscope.store.writer import close_quietly


class _OldQ2QWriter(Q2QWriter):
    """Writes each bio's gaps (the `_bio_q2q` rows) beside `bios`, in the spill folder."""

    def __init__(self, dataset: Path, classes: OpClasses) -> None:
        super().__init__(dataset)
        self.classes = classes

    def write(self, bo: np.ndarray, bios: pa.Table) -> None:  # type: ignore[override]
        """The rows of bio matrix bo, whose `bios` rows (in the same order) are `bios`."""
        coder = self.classes.coder
        comm = bo[:, L.BO_COMM]
        comm = np.where(comm == L.NULL, UNKNOWN_COMM_CODE, comm)
        cls, base = self.classes.classes(bo)
        key = (bo[:, L.BO_DEV] << _KEY_DEV_SHIFT) | (cls << _KEY_CLASS_SHIFT) | comm
        cols: list[pa.Array | pa.ChunkedArray] = [
            pa.array(bo[:, L.BO_Q_EID]),
            bios["dev_major"],
            bios["dev_minor"],
            _strings(base, self.classes.base_names),
            _strings(cls, self.classes.names),
            _strings(comm, coder.comm.values),
            pa.array(key),
            *[bios[name] for name in STAGE_TIME_COLUMNS],
        ]
        for k in range(N_SCOPES):
            gap = bo[:, L.BO_Q2Q + k]
            null = gap == L.NULL
            cols.append(nullable(gap, null, pa.int64()))
        self.writer.write_table(pa.Table.from_arrays(cols, schema=_WRITTEN))


OUT_ROWS = 1 << 18
# Rows (requests + bios) written at once: a drain holds ~9 k of each on the fio capture, and
# Parquet costs a third more CPU a row written 9 k rows at a time than 64 k (row group and
# page overheads; 10x fio capture: ~3 CPU-s).
WRITE_ROWS = 1 << 17
SPARE = 256  # free rows per pool when a compiled call starts; it stops below 64
# The trace end's (unread) event matrix: two rows, so that numba types it Fortran-ordered as it
# types every batch (an empty or one-row matrix is also C-contiguous, which numba prefers: a
# second compiled `step`, ~25 s on a first run)
NO_EVENTS = np.zeros((2, L.E_FIELDS), dtype=np.int64, order="F")

TABLE_NAMES = [name for name in State._fields if name.startswith("d_")]


class Pass:
    """The pass's state, owned by Python between batches (pools grow here)."""

    def __init__(self, plug_clock: bool, devices: np.ndarray) -> None:
        self.pools = {
            "gr": Pool(L.GR_FIELDS),
            "ky": Pool(L.KY_FIELDS),
            "bi": Pool(L.BI_FIELDS),
            "pc": Pool(L.PC_FIELDS),
            "ss": Pool(L.SS_FIELDS),
            "pd": Pool(L.PD_FIELDS),
        }
        self.dv = devices
        self.db = np.zeros((L.DB_CAP, L.DB_FIELDS), dtype=np.int64)
        self.ct = np.zeros(L.CT_FIELDS, dtype=np.int64)
        self.ct[L.CT_PLUG] = int(plug_clock)
        self.ct[L.CT_NOW] = L.NULL
        self.rq = np.zeros((OUT_ROWS, L.RQ_FIELDS), dtype=np.int64)
        self.bo = np.zeros((OUT_ROWS, L.BO_FIELDS), dtype=np.int64)
        self.deferred = np.zeros(1024, dtype=np.int64)
        self.io = new_io_counts(len(devices))
        # the keyed tables, in State's order (d_remap holds (major, minor, sector))
        self.tables = [new_table(3 if name == "d_remap" else 1) for name in TABLE_NAMES]
        self.qclass = np.zeros((1, 8), dtype=np.int64)  # q2q.OpClasses.lookup

    def state(self, keys: int = 0) -> State:
        """The state as the compiled code takes it, with room for at least one more event (and
        `keys` more keys in each keyed table): the compiled pass stops itself, for Python to
        grow them, when a pool runs low, a keyed table gets crowded or an output matrix could
        overflow."""
        for pool in self.pools.values():
            pool.reserve(SPARE)
        # every row written comes from a live request or bio: room for all of them at once
        live = self.pools["gr"].in_use() + self.pools["bi"].in_use() + SPARE
        self.rq = _room(self.rq, int(self.ct[L.CT_RQ_N]) + live)
        self.bo = _room(self.bo, int(self.ct[L.CT_BO_N]) + live)
        if len(self.deferred) < self.pools["gr"].capacity:
            grown = np.zeros(self.pools["gr"].capacity, dtype=np.int64)
            grown[: len(self.deferred)] = self.deferred
            self.deferred = grown
        self.tables = [with_room(table, keys) for table in self.tables]
        parts: list[Any] = []
        for pool in self.pools.values():
            parts += [pool.rows, pool.free, pool.alive, pool.nfree]
        return State._make(
            [
                *parts,
                self.dv,
                self.db,
                self.ct,
                self.rq,
                self.bo,
                self.deferred,
                self.io,
                *self.tables,
                self.qclass,
            ]
        )


def _room(out: np.ndarray, rows: int) -> np.ndarray:
    """out, or a copy with at least `rows` rows."""
    if len(out) >= rows:
        return out
    grown = np.zeros((max(rows, 2 * len(out)), out.shape[1]), dtype=np.int64)
    grown[: len(out)] = out
    return grown


# What device_facts asks of each device: does some event show it (no scan past the first one).
_DISPATCHES = "action = 'D' AND (sector IS NOT NULL OR (flush AND op = 'N'))"
_BIO_NODES = "action IN ('G', 'M', 'F', 'X')"


def device_facts(con: duckdb.DuckDBPyConnection, coder: EventCoder) -> np.ndarray:
    """Per device: does it dispatch requests (D), and does any bio land or split there.

    The devices come from their event spans (a scan the depth walk and the findings need
    anyway, cached on con); each fact is an EXISTS, which stops at the first event showing it
    (counting them over every event cost 2.25 CPU-s on the 10x fio capture, before the pass
    could start)."""
    devices = list(device_spans(con))
    major = np.array([d[0] for d in devices], dtype=np.int64)
    minor = np.array([d[1] for d in devices], dtype=np.int64)
    idx = coder.devices.encode(major, minor) if devices else np.zeros(0, dtype=np.int64)
    dv = np.zeros((max(len(devices), 1), L.DV_FIELDS), dtype=np.int64)
    dv[:, [L.DV_Q_END, L.DV_D_END]] = -1  # no Q or D yet
    for j, (a, b) in enumerate(devices):
        for field, test in ((L.DV_HAS_D, _DISPATCHES), (L.DV_NODES, _BIO_NODES)):
            row = con.execute(
                "SELECT EXISTS (SELECT 1 FROM events "
                f"WHERE dev_major = ? AND dev_minor = ? AND {test})",
                [a, b],
            ).fetchone()
            dv[idx[j], field] = int(bool(row and row[0]))
    return dv


def _names(names: pa.Array, codes: np.ndarray) -> pa.Array:
    """The strings of small codes: a take from the few names (a numpy array of Python strings
    costs three times as much to turn into Arrow: 0.1 us a row)."""
    return names.take(pa.array(codes))


OP_NAMES = pa.array(L.OPS, type=pa.string())
KIND_NAMES = pa.array(L.KINDS, type=pa.string())
STATUS_NAMES = pa.array(["completed", "merged", "partial"], type=pa.string())  # bios.status


def _col(values: np.ndarray, null: int, typ: pa.DataType) -> pa.Array:
    return nullable(values, values == null, typ)


def requests_table(rq: np.ndarray, coder: EventCoder) -> pa.Table:
    """Rows of the pass's request matrix as the `requests` table."""
    dev = rq[:, L.RQ_DEV]
    major, minor = coder.devices.columns(dev)
    d2c = np.where(
        (rq[:, L.RQ_C_T] == L.NULL) | (rq[:, L.RQ_LAST_D] == L.NULL),
        L.NULL,
        rq[:, L.RQ_C_T] - rq[:, L.RQ_LAST_D],
    )
    cols = {
        "dev_major": major,
        "dev_minor": minor,
        "op": _names(OP_NAMES, rq[:, L.RQ_OP]),
        "sector": _col(rq[:, L.RQ_SEC], -1, pa.int64()),
        "nsectors": _col(rq[:, L.RQ_NSEC], -1, pa.int32()),
        "kind": _names(KIND_NAMES, rq[:, L.RQ_KIND]),
        "flags": coder.rwbs.strings(rq[:, L.RQ_RWBS]),
        "q_time_ns": _col(rq[:, L.RQ_Q_T], L.NULL, pa.int64()),
        "g_time_ns": _col(rq[:, L.RQ_G_T], L.NULL, pa.int64()),
        "acct_start_ns": _col(rq[:, L.RQ_ACCT], L.NULL, pa.int64()),
        "first_d_time_ns": _col(rq[:, L.RQ_FIRST_D], L.NULL, pa.int64()),
        "d_time_ns": _col(rq[:, L.RQ_LAST_D], L.NULL, pa.int64()),
        "c_time_ns": _col(rq[:, L.RQ_C_T], L.NULL, pa.int64()),
        "d2c_ns": _col(d2c, L.NULL, pa.int64()),
        "requeues": pa.array(rq[:, L.RQ_REQUEUES].astype(np.int32)),
        "dispatches": pa.array(rq[:, L.RQ_DISPATCHES].astype(np.int32)),
        "error": _col(rq[:, L.RQ_ERR], L.NULL, pa.int32()),
        "partial": pa.array(rq[:, L.RQ_PARTIAL] == 1),
        "pid": _col(rq[:, L.RQ_PID], L.NULL, pa.int64()),
        "process": coder.comm.strings(rq[:, L.RQ_PROCESS]),
        "d_eid": _col(rq[:, L.RQ_D_EID], L.NULL, pa.int64()),
        "c_eid": _col(rq[:, L.RQ_C_EID], L.NULL, pa.int64()),
    }
    return pa.table(cols).cast(TABLES["requests"])


def bios_table(bo: np.ndarray, coder: EventCoder) -> pa.Table:
    """Rows of the pass's bio matrix as the `bios` table."""
    major, minor = coder.devices.columns(bo[:, L.BO_DEV])
    c, q = bo[:, L.BO_C_T], bo[:, L.BO_Q_T]
    partial = bo[:, L.BO_PARTIAL] == 1
    merged = bo[:, L.BO_MERGED] == 1
    status = np.where(partial, 2, merged.astype(np.int64))
    cols = {
        "dev_major": major,
        "dev_minor": minor,
        "op": _names(OP_NAMES, bo[:, L.BO_OP]),
        "flags": coder.rwbs.strings(bo[:, L.BO_RWBS]),
        "sector": _col(bo[:, L.BO_SEC], -1, pa.int64()),
        "nsectors": _col(bo[:, L.BO_NSEC], -1, pa.int32()),
        "pid": pa.array(bo[:, L.BO_PID]),
        "comm": coder.comm.strings(bo[:, L.BO_COMM]),
        "q_time_ns": pa.array(q),
        "g_time_ns": _col(bo[:, L.BO_G_T], L.NULL, pa.int64()),
        "m_time_ns": _col(bo[:, L.BO_M_T], L.NULL, pa.int64()),
        "i_time_ns": _col(bo[:, L.BO_I_T], L.NULL, pa.int64()),
        "d_time_ns": _col(bo[:, L.BO_D_T], L.NULL, pa.int64()),
        "c_time_ns": _col(c, L.NULL, pa.int64()),
        "q2c_ns": _col(np.where(c == L.NULL, L.NULL, c - q), L.NULL, pa.int64()),
        "d2c_ns": _col(bo[:, L.BO_D2C], L.NULL, pa.int64()),
        "merged": pa.array(merged),
        "split": pa.array(bo[:, L.BO_PIECES] > 1),
        "pieces": pa.array(bo[:, L.BO_PIECES].astype(np.int32)),
        "requeues": _col(bo[:, L.BO_REQUEUES], L.NULL, pa.int32()),
        "status": _names(STATUS_NAMES, status),
        "partial": pa.array(partial),
        "remap_dev_major": _col(bo[:, L.BO_RMAJ], L.NULL, pa.int32()),
        "remap_dev_minor": _col(bo[:, L.BO_RMIN], L.NULL, pa.int32()),
        "remap_sector": _col(bo[:, L.BO_RSEC], L.NULL, pa.int64()),
        "q_eid": pa.array(bo[:, L.BO_Q_EID]),
        "d_eid": _col(bo[:, L.BO_D_EID], L.NULL, pa.int64()),
    }
    return pa.table(cols).cast(TABLES["bios"])


ORPHANS_SQL = """
WITH f AS (SELECT * FROM _orphan_candidates),
ev AS (
    SELECT dev_major, dev_minor, sector, nsectors, time_ns,
           (input_id::BIGINT << 40) + line_no AS eid, action
    FROM events SEMI JOIN (SELECT DISTINCT dev_major, dev_minor, sector, nsectors FROM f)
      USING (dev_major, dev_minor, sector, nsectors)
    WHERE action IN ('D', 'R', 'C') AND NOT (flush AND op = 'N')
), runs AS (
    SELECT * FROM (
        SELECT *, lag(action) OVER (PARTITION BY dev_major, dev_minor, sector, nsectors
                                    ORDER BY time_ns, eid) AS prev FROM ev)
    WHERE action = 'D' AND prev = 'C'
)
SELECT f.row FROM f WHERE EXISTS (
    SELECT 1 FROM runs r WHERE r.dev_major = f.dev_major AND r.dev_minor = f.dev_minor
      AND r.sector = f.sector AND r.nsectors = f.nsectors
      AND (r.time_ns < f.time_ns OR (r.time_ns = f.time_ns AND r.eid < f.eid)))
"""


def _writer(dataset: Path, table: str) -> pq.ParquetWriter:
    """A Parquet writer for one of the pass's tables. Dictionary pages only for the string
    columns: on the times and ids (nearly all distinct) Parquet builds a dictionary and then
    gives it up; measured on the fio capture's two tables, zstd-1 with dictionaries on every
    column took 1.50 s CPU for 54.6 MB, on the strings only 0.79 s for 32.4 MB. The 64-bit
    integers (times, ids, sectors: rising, or close to their neighbours) are delta-encoded: on
    the 10x fio capture's bios, 3.38 -> 2.69 CPU-s to write, 149 -> 119 MB, and DuckDB reads its
    times in 0.35 CPU-s instead of 0.94 (less to decompress). lz4 rather than zstd-1 on the
    delta-encoded pages: 2.1 -> 1.65 CPU-s to write each table of the 10x fio capture, 2 %
    larger (bios 113 -> 115 MB), read by DuckDB as fast."""
    schema = TABLES[table]
    strings = [f.name for f in schema if pa.types.is_string(f.type)]
    deltas = {f.name: "DELTA_BINARY_PACKED" for f in schema if f.type == pa.int64()}
    return pq.ParquetWriter(
        dataset / f"{table}.parquet",
        schema,
        compression="lz4",
        use_dictionary=strings,
        column_encoding=deltas,
    )


def _column_major(parts: list[np.ndarray]) -> np.ndarray:
    """The drained row-major matrices as one column-major matrix: every column the tables take
    is then read once, contiguously (from the pass's row-major matrices each was a strided
    gather: 37 -> 22 ms for 147 k rows), and the rows are copied once (concatenating into a
    column-major matrix: 6.8 ms for 126 k rows of 26 fields, concatenating and then
    transposing: 18 ms)."""
    out = np.empty((sum(len(p) for p in parts), parts[0].shape[1]), dtype=np.int64, order="F")
    return np.concatenate(parts, out=out)


class _Sinks:
    """Where finished rows go: copied out of the pass's output matrices (which it reuses) and
    written by a background thread."""

    def __init__(self, dataset: Path, classes: OpClasses, depth: DepthWalk) -> None:
        self.coder = classes.coder
        self.depth = depth
        self.requests = _writer(dataset, "requests")
        self.bios = _writer(dataset, "bios")
        self.q2q = _OldQ2QWriter(dataset, classes)
        self.held: list[pa.Table] = []  # requests whose kind needs the orphan check
        self.fix_eid: list[np.ndarray] = []
        self.fix_t: list[np.ndarray] = []
        self.rows = {"requests": 0, "bios": 0}
        self.pending: list[tuple[np.ndarray, np.ndarray]] = []  # drained, not yet written
        self.pending_rows = 0
        # A write happens every ~14 drains (WRITE_ROWS) and takes as long as those drains did to
        # arrive: with a queue of 2 the pass waited for it (1x fio capture: a sixth of the pass's
        # wall). 16 drains of ~9 k rows each hold at most ~60 MB.
        self.thread = Background(self._write, depth=16)

    def drain(self, run: Pass) -> None:
        n, m = int(run.ct[L.CT_RQ_N]), int(run.ct[L.CT_BO_N])
        self.depth.rows(run.rq[:n], run.bo[:m])
        if n or m:
            self.thread.submit((run.rq[:n].copy(), run.bo[:m].copy()))
        run.ct[L.CT_RQ_N] = 0
        run.ct[L.CT_BO_N] = 0

    def _write(self, rows: tuple[np.ndarray, np.ndarray]) -> None:
        """Collect drained rows; write them once there are WRITE_ROWS."""
        self.pending.append(rows)
        self.pending_rows += len(rows[0]) + len(rows[1])
        if self.pending_rows >= WRITE_ROWS:
            self._flush()

    def _flush(self) -> None:
        if not self.pending:
            return
        rq = _column_major([r for r, _ in self.pending])
        bo = _column_major([b for _, b in self.pending])
        self.pending, self.pending_rows = [], 0
        if len(rq):
            fix = rq[:, L.RQ_FIX] != 0
            rest = rq
            if fix.any():
                self.held.append(requests_table(rq[fix], self.coder))
                self.fix_eid.append(rq[fix, L.RQ_FIX])
                self.fix_t.append(
                    np.where(rq[fix, L.RQ_C_T] == L.NULL, rq[fix, L.RQ_FIRST_D], rq[fix, L.RQ_C_T])
                )
                rest = rq[~fix]
            if len(rest):
                table = requests_table(rest, self.coder)
                self.requests.write_table(table)
                self.rows["requests"] += table.num_rows
        if len(bo):
            table = bios_table(bo, self.coder)
            self.bios.write_table(table)
            self.rows["bios"] += table.num_rows
            self.q2q.write(bo, table)

    def abandon(self) -> None:
        """The pass stopped early (out of order, disk full, Ctrl-C): let the thread finish what
        it has, close the files without raising (they go with the temp version)."""
        self.thread.abandon()
        close_quietly(self.requests)
        close_quietly(self.bios)
        self.q2q.abandon()

    def close(self, con: duckdb.DuckDBPyConnection) -> None:
        self.thread.close()
        self._flush()
        if self.held:
            held = pa.concat_tables(self.held)
            cand = pa.table({
                "row": np.arange(held.num_rows),
                "dev_major": held["dev_major"], "dev_minor": held["dev_minor"],
                "sector": held["sector"], "nsectors": held["nsectors"],
                "eid": np.concatenate(self.fix_eid),
                "time_ns": np.concatenate(self.fix_t),
            })  # fmt: skip
            con.register("_orphan_candidates", cand)
            rows = [r[0] for r in con.execute(ORPHANS_SQL).fetchall()]
            con.unregister("_orphan_candidates")
            kind = np.array(held["kind"].to_pylist(), dtype=object)
            kind[rows] = "orphan"
            held = held.set_column(
                held.schema.get_field_index("kind"),
                TABLES["requests"].field("kind"),
                pa.array(kind, type=pa.string()),
            )
            self.requests.write_table(held)
            self.rows["requests"] += held.num_rows
        self.requests.close()
        self.bios.close()
        self.q2q.close(con)


def stream_tables(
    con: duckdb.DuckDBPyConnection,
    dataset: Path,
    plug_clock: bool,
    total_events: int,
    progress: ProgressCallback | None = None,
    in_order: bool = True,
    key: str = "analyze events",
) -> dict[str, int]:
    """Write requests.parquet and bios.parquet into dataset from its events; return row counts.
    io_dist's counts (stream/iodist.py) are left in con's table IO_COUNTS."""
    coder = EventCoder()
    classes = OpClasses(coder)
    run = Pass(plug_clock, device_facts(con, coder))
    depth = DepthWalk(coder, run.dv, device_bounds(con))
    sinks = _Sinks(dataset, classes, depth)
    events = Prefetch(batches(dataset / "events.parquet", in_order), coder.matrix)
    done = 0
    if progress is not None and not is_cached(step):  # the first run after an install
        label = f"{key}: compiling the pass (once after an install, 1-2 min)"
        progress(key, 0, total_events, unit="events", label=label)
    try:
        for ev in events:
            run.qclass = classes.cover(con)
            start = 0
            while start < len(ev):
                # the whole batch, then its end; a call stops early when a table needs room
                start = step(run.state(), ev, start, len(ev), len(run.rq), len(run.bo), BATCH)
                if run.ct[L.CT_RQ_N] > OUT_ROWS // 2 or run.ct[L.CT_BO_N] > OUT_ROWS // 2:
                    sinks.drain(run)
            sinks.drain(run)
            depth.batch(ev, run.pools["bi"])
            done += len(ev)
            if progress is not None:
                progress(key, done, total_events, unit="events", label=f"{key}: pairing")
        # finish settles every bio still in flight: a preflush one may wait on its sector
        step(run.state(keys=run.pools["bi"].in_use()), NO_EVENTS, 0, 0, 0, 0, TRACE_END)
        sinks.drain(run)
        depth.end()
    except OutOfOrder:
        events.close()
        sinks.abandon()
        if not in_order:  # DuckDB's sort gave rows out of its own order: a bug, said plainly
            raise DatasetError(
                str(dataset),
                "events are not in time order even after sorting them",
                hint="please report this with the dataset's manifest.json",
            ) from None
        return stream_tables(
            con, dataset, plug_clock, total_events, progress, in_order=False, key=key
        )
    except BaseException:
        events.close()
        sinks.abandon()
        raise
    events.close()
    try:
        sinks.close(con)
    except BaseException:  # the last writes failed (disk full): no second error from __del__
        close_quietly(sinks.requests)
        close_quietly(sinks.bios)
        sinks.q2q.abandon()
        raise
    depth.tables(con, dataset / "requests.parquet")
    con.register("_io_counts_arrow", io_counts_table(run.io, coder))
    con.execute(f"CREATE OR REPLACE TABLE {IO_COUNTS} AS SELECT * FROM _io_counts_arrow")
    con.unregister("_io_counts_arrow")
    return sinks.rows
