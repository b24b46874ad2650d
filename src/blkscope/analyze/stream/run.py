"""Drive the streaming pass (the compiled core's `StreamPass`, rust/src/pass): events in, one
Arrow batch at a time; `requests`, `bios` and the pass's internal tables out.

The pass works with the GIL released; two helper threads (threads.py) read and decode the next
batch of events, and write the finished rows to Parquet, meanwhile."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from blkscope._core import IostatCounts, IssuerLoads, StreamPass
from blkscope.analyze.compiled import CompletedBios
from blkscope.analyze.correlation import device_spans
from blkscope.analyze.evidence import ISSUER_LOAD_BINS, NORMAL_BIN_NS
from blkscope.analyze.stream.depth_run import DEPTH_BIN_SUMS, DEPTH_TIME, device_bounds
from blkscope.analyze.stream.events import STRING_COLUMNS, OutOfOrder, batches, device_spans_of
from blkscope.analyze.stream.iodist import IO_COUNTS
from blkscope.analyze.stream.iostat_counts import IOSTAT_DONE, IOSTAT_MERGES
from blkscope.analyze.stream.q2q import STAGE_COUNTS, Q2QWriter
from blkscope.analyze.stream.row_counts import BIO_ROW_COUNTS, REQUEST_ROW_COUNTS
from blkscope.analyze.stream.threads import Background, Prefetch
from blkscope.errors import DatasetError
from blkscope.progress import ProgressCallback
from blkscope.schemas import TABLES
from blkscope.store.core_parquet import CoreParquet
from blkscope.store.writer import close_quietly

EVENTS = TABLES["events"]

# Rows (requests + bios) written at once: Parquet costs a third more CPU a row written 9 k rows
# at a time than 64 k (row group and page overheads).
WRITE_ROWS = 1 << 17

# What device_facts asks of each device: does some event show it (no scan past the first one).
_DISPATCHES = "action = 'D' AND (sector IS NOT NULL OR (flush AND op = 'N'))"
_BIO_NODES = "action IN ('G', 'M', 'F', 'X')"

# The op letters of events.op, in the order of the pass's class columns (op x has a sector).
_CLASS_OPS = ("R", "W", "D", "N")


def device_facts(con: duckdb.DuckDBPyConnection) -> list[tuple[int, int, bool, bool]]:
    """Per device of the events, in device order: (major, minor, does it dispatch requests (a
    D with a sector, or a data-less flush D), does any bio land or split there (G, M, F, X)).

    The devices come from their event spans (a scan the depth walk and the findings need
    anyway, cached on con); each fact is an EXISTS, which stops at the first event showing it:
    counting them over every event would hold up the pass on a big trace."""
    facts = []
    for major, minor in device_spans(con):
        found = []
        for test in (_DISPATCHES, _BIO_NODES):
            row = con.execute(
                "SELECT EXISTS (SELECT 1 FROM events "
                f"WHERE dev_major = ? AND dev_minor = ? AND {test})",
                [major, minor],
            ).fetchone()
            found.append(bool(row and row[0]))
        facts.append((major, minor, found[0], found[1]))
    return facts


def last_plugs(con: duckdb.DuckDBPyConnection, dataset: Path | None) -> list[tuple[int, int]]:
    """(pid, time of its last P) per task that plugs: after it, no P can join the task's open
    plug session, so the requests of its bios need not wait for one (rust/src/pass/plug.rs
    `session_plugged`). Ingest stores them (the last_plugs table); a dataset ingested before
    it did is scanned for them."""
    stored = None if dataset is None else dataset / "last_plugs.parquet"
    if stored is not None and stored.exists():
        table = pq.ParquetFile(stored).read()  # read_table would import pyarrow.dataset
        return list(zip(table["pid"].to_pylist(), table["last_plug_ns"].to_pylist(), strict=True))
    found = con.execute(
        "SELECT pid, max(time_ns) FROM events WHERE action = 'P' GROUP BY pid"
    ).fetchall()
    return [(int(pid), int(t)) for pid, t in found]


def new_stream(
    con: duckdb.DuckDBPyConnection, plug_clock: bool, events: Path | None = None
) -> StreamPass:
    """A pass over con's events (stored in the file `events`, when given: its statistics may
    tell the devices' spans without a scan), told what it needs to know of the whole trace
    first."""
    if events is not None:
        device_spans(con, device_spans_of(events))
    dataset = None if events is None else events.parent
    plugs = last_plugs(con, dataset) if plug_clock else []
    return StreamPass(plug_clock, device_facts(con), device_bounds(con), plugs)


class OpClassNames:
    """Hands the pass the op classes of each RWBS before the events that carry it.

    A bio's op class is the `op_class` and `bio_op_class` macros' (blkscope/concepts.py), their
    one definition: DuckDB evaluates them once per RWBS string (x op letter x whether the Q has
    a sector), as the strings first appear in a batch's dictionary."""

    def __init__(self, con: duckdb.DuckDBPyConnection, stream: StreamPass) -> None:
        self.con, self.stream = con, stream
        self.seen: set[str | None] = set()
        self._add([None])  # a Q without RWBS

    def cover(self, batch: pa.RecordBatch) -> None:
        """Add the classes of the RWBS strings of batch's dictionary not seen before."""
        values = batch.column("rwbs").dictionary.to_pylist()
        new = [v for v in dict.fromkeys(values) if v not in self.seen]
        if new:
            self._add(new)

    def _add(self, values: list[str | None]) -> None:
        columns = len(_CLASS_OPS) * 2
        combos = pa.table({
            "i": range(len(values) * columns),
            "op": [_CLASS_OPS[c // 2] for _ in values for c in range(columns)],
            "flags": pa.array([v for v in values for _ in range(columns)], type=pa.string()),
            "sector": pa.array(
                [None if c % 2 else 0 for _ in values for c in range(columns)], type=pa.int64()
            ),
        })  # fmt: skip
        self.con.register("_q2q_rwbs", combos)
        try:
            found = self.con.execute(
                "SELECT b, bio_op_class(b, flags) FROM (SELECT i, flags, "
                "op_class(op, flags, sector) AS b FROM _q2q_rwbs) ORDER BY i"
            ).fetchall()
        finally:
            self.con.unregister("_q2q_rwbs")
        for j, value in enumerate(values):
            names = [(str(b), str(c)) for b, c in found[j * columns : (j + 1) * columns]]
            self.stream.add_op_classes(value, names)
            self.seen.add(value)


def _as_the_pass_reads(batch: pa.RecordBatch) -> pa.RecordBatch:
    """The batch with each column in the type `events` declares and its strings
    dictionary-encoded, as the pass reads them (Parquet's reader gives them so; DuckDB's sort,
    the out-of-order path, gives plain strings)."""
    columns = []
    for name, column in zip(batch.schema.names, batch.columns, strict=True):
        declared = EVENTS.field(name).type
        if name in STRING_COLUMNS:
            if not pa.types.is_dictionary(column.type):
                import pyarrow.compute as pc  # here: a run in order never needs it

                column = pc.dictionary_encode(column.cast(declared))
        elif column.type != declared:
            column = column.cast(declared)
        columns.append(column)
    return pa.RecordBatch.from_arrays(columns, names=batch.schema.names)


def _writer(dataset: Path, table: str) -> CoreParquet:
    """A Parquet writer (the core's) for one of the pass's tables. Dictionaries for the string
    columns only (op, kind, flags, status, process names: a few values each). The 64-bit
    integers (times, ids, sectors: rising, or close to their neighbours) are delta-encoded:
    smaller, cheaper to write, and DuckDB reads them back with less to decompress. Statistics
    (min, max) on the integer columns, where the steps after filter."""
    schema = TABLES[table]
    strings = [f.name for f in schema if pa.types.is_string(f.type)]
    integers = [f.name for f in schema if pa.types.is_integer(f.type)]
    deltas = [f.name for f in schema if f.type == pa.int64()]
    return CoreParquet(dataset / f"{table}.parquet", schema, strings, deltas, integers)


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


def orphans(con: duckdb.DuckDBPyConnection, candidates: pa.RecordBatch) -> list[int]:
    """The rows of `candidates` (requests without D) that are orphans: a C without D in a
    later run of its key (a D after a C came before it), where the pass, which forgets a key
    once nothing of it is in flight, no longer knew."""
    if not candidates.num_rows:
        return []
    con.register("_orphan_candidates", candidates)
    try:
        return [int(r[0]) for r in con.execute(ORPHANS_SQL).fetchall()]
    finally:
        con.unregister("_orphan_candidates")


class _Sinks:
    """Where finished rows go: Parquet files written by a background thread, which also counts
    the bios into the heatmap's cells, the spike windows and the issuers' loads per second
    (evidence.NormalLoads), and the requests into iostat's counts."""

    def __init__(
        self, dataset: Path, completed: CompletedBios, interval_ns: int, origin_ns: int
    ) -> None:
        self.requests = _writer(dataset, "requests")
        self.bios = _writer(dataset, "bios")
        self.q2q = Q2QWriter(dataset)
        self.completed = completed
        self.loads = IssuerLoads(NORMAL_BIN_NS)
        self.iostat = IostatCounts(interval_ns, origin_ns)
        self.rows: dict[str, int] = {}
        self.thread = Background(self._write, depth=4)

    def submit(self, rows: tuple[object, object, object]) -> None:
        self.thread.submit(rows)

    def _write(self, rows: tuple[object, object, object]) -> None:
        requests, bios, q2q = rows
        self.requests.write_batch(requests)
        self.iostat.feed(requests)
        self.bios.write_batch(bios)
        self.completed.feed(bios)
        self.loads.feed(bios)
        self.q2q.write(q2q)

    def abandon(self) -> None:
        """The pass stopped early (out of order, disk full, Ctrl-C): let the thread finish what
        it has, close the files without raising (they go with the temp version)."""
        self.thread.abandon()
        close_quietly(self.requests)
        close_quietly(self.bios)
        self.q2q.abandon()

    def close(self, con: duckdb.DuckDBPyConnection, held: pa.RecordBatch) -> None:
        """Write the last rows and the settled held requests; close the files."""
        self.thread.close()
        self.requests.write_batch(held)
        self.iostat.feed(held)
        self.requests.close()
        self.bios.close()
        self.q2q.close(con)
        self.rows = {"requests": self.requests.rows, "bios": self.bios.rows}


def _store(con: duckdb.DuckDBPyConnection, name: str, rows: object) -> None:
    """Leave rows of the pass in con's table `name`."""
    con.register("_pass_arrow", pa.table(pa.record_batch(rows)))
    con.execute(f"CREATE OR REPLACE TABLE {name} AS SELECT * FROM _pass_arrow")
    con.unregister("_pass_arrow")


def _events(dataset: Path, in_order: bool) -> Iterator[pa.RecordBatch]:
    return batches(dataset / "events.parquet", in_order)


def stream_tables(
    con: duckdb.DuckDBPyConnection,
    dataset: Path,
    plug_clock: bool,
    total_events: int,
    progress: ProgressCallback | None = None,
    in_order: bool = True,
    key: str = "analyze events",
    interval_ns: int = 1_000_000_000,
    origin_ns: int = 0,
) -> dict[str, int]:
    """Write requests.parquet and bios.parquet into dataset from its events; return row counts.
    The pass's internal tables are left in con: io_dist's counts (IO_COUNTS), the depth walk's
    sums (DEPTH_TIME, DEPTH_BIN_SUMS), the bio latencies' bucket counts (STAGE_COUNTS), the
    rows written, counted (BIO_ROW_COUNTS, REQUEST_ROW_COUNTS), the heatmap's cells and the
    spike windows (compiled.CompletedBios), the Q2Q view (q2q.Q2Q_VIEW), the issuers' loads
    per second (ISSUER_LOAD_BINS) and iostat's counts in its intervals of interval_ns from
    origin_ns (IOSTAT_DONE, IOSTAT_MERGES)."""
    stream = new_stream(con, plug_clock, dataset / "events.parquet")
    stream.count_merges(interval_ns, origin_ns)
    classes = OpClassNames(con, stream)
    completed = CompletedBios(con)
    sinks = _Sinks(dataset, completed, interval_ns, origin_ns)
    events = Prefetch(_events(dataset, in_order), _as_the_pass_reads)
    done = 0
    try:
        for batch in events:
            classes.cover(batch)
            if not stream.feed(batch):
                raise OutOfOrder
            if stream.pending_rows() >= WRITE_ROWS:
                sinks.submit(stream.take_rows())
            done += batch.num_rows
            if progress is not None:
                progress(key, done, total_events, unit="events", label=f"{key}: pairing")
        stream.finish()
        sinks.submit(stream.take_rows())
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
            con,
            dataset,
            plug_clock,
            total_events,
            progress,
            in_order=False,
            key=key,
            interval_ns=interval_ns,
            origin_ns=origin_ns,
        )
    except BaseException:
        events.close()
        sinks.abandon()
        raise
    events.close()
    try:
        held, times, bins = stream.settle(orphans(con, pa.record_batch(stream.orphan_candidates())))
        sinks.close(con, held)
    except BaseException:  # the last writes failed (disk full): no second error from __del__
        close_quietly(sinks.requests)
        close_quietly(sinks.bios)
        sinks.q2q.abandon()
        raise
    _store(con, DEPTH_TIME, times)
    _store(con, DEPTH_BIN_SUMS, bins)
    _store(con, IO_COUNTS, stream.io_counts())
    _store(con, STAGE_COUNTS, stream.stage_counts())
    completed.store(con)
    _store(con, IOSTAT_DONE, sinks.iostat.done())
    _store(con, IOSTAT_MERGES, stream.merge_counts())
    _store(con, ISSUER_LOAD_BINS, sinks.loads.bins())
    bio_counts, request_counts = stream.row_counts()
    _store(con, BIO_ROW_COUNTS, bio_counts)
    _store(con, REQUEST_ROW_COUNTS, request_counts)
    return sinks.rows
