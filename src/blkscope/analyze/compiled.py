"""The statistics' compiled steps (rust/src/stats/): what DuckDB did by sorting or unrolling
every request or bio, done in one look at each, between the streaming pass and the SQL
builders. Each reads its rows a batch at a time (never all at once: a query's as they stream
out of DuckDB, or the pass's Q2Q file's row groups) and leaves a small table in the analysis
connection, which a SQL module reads like a table:

- `internal._iostat_islands`: iostat's busy periods, the islands of overlapping [Q, C] spans
  of the requests the disk statistics count (sql/_iostat_build.sql);
- `internal._stage_picks`: stage_stats' exact percentiles that a value bucket of
  `_stage_ranks` holds among several distinct latencies (sql/_stage_stats_build.sql);
- `internal._heatmap_cells`: latency_heatmap's counts per device, stage, time bin and
  latency bucket (sql/_latency_heatmap_build.sql), in each device's time bins (heatmap_bins),
  and `internal._spike_window_rows`: the findings' spike windows at the default
  SpikeOptions (findings.py), both counted from the bios rows as the pass writes them
  (CompletedBios).
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa

from blkscope._core import BusyPeriods, HeatmapCells, SpikeWindowRows, StagePicks
from blkscope.analyze.findings import COMPILED_SPIKE_WINDOWS, SpikeOptions
from blkscope.analyze.memory import give_back
from blkscope.analyze.stream.depth_run import device_bounds
from blkscope.analyze.stream.q2q import SCOPES, q2q_batches
from blkscope.concepts import OBSERVER_COMMS, STAGE_TIME_COLUMNS

ISLANDS = "internal._iostat_islands"
PICKS = "internal._stage_picks"
CELLS = "internal._heatmap_cells"
TABLES = (ISLANDS, PICKS, CELLS)

# the Q2Q gaps' columns, in scope order (1 process, 2 class, 3 op, 4 device): the picker's
_GAPS = tuple(f"{scope}_ns" for scope in SCOPES)

# rows handed to the compiled steps at a time: big enough that the calls cost nothing, small
# enough that a batch's columns stay a few MB
BATCH_ROWS = 1 << 17


def _batches(con: duckdb.DuckDBPyConnection, query: str) -> pa.RecordBatchReader:
    return con.sql(query).to_arrow_reader(BATCH_ROWS)


def busy_islands(con: duckdb.DuckDBPyConnection) -> pa.RecordBatch:
    """iostat's busy periods: (dev_major, dev_minor, lo, hi) per island. Swept as the requests
    come, unless one ends before it starts (a corrupt trace): then again, over them sorted."""
    query = "SELECT dev_major, dev_minor, busy_from_ns, c_time_ns FROM internal._iostat_requests"
    periods = BusyPeriods(False)
    with _batches(con, query) as requests:  # closed before the query runs again
        swept = all(periods.feed(batch) for batch in requests)
    if not swept:
        periods = BusyPeriods(True)
        for batch in _batches(con, query):
            periods.feed(batch)
    return pa.record_batch(periods.islands())


def stage_picks(con: duckdb.DuckDBPyConnection, dataset: Path) -> pa.RecordBatch:
    """The latency at each rank of `_stage_ranks` whose bucket holds several distinct values:
    (level_code, id, stage, permille, v); dataset: the one whose Q2Q file the pass wrote."""
    hits = con.sql(
        "SELECT level_code, id, stage, b, bucket_offset, permille FROM internal._stage_ranks "
        "WHERE lo < hi"
    ).to_arrow_table()
    groups = con.sql("SELECT group_key, gid, cid, oid, did FROM internal._bio_groups")
    picks = StagePicks(_one_batch(hits), _one_batch(groups.to_arrow_table()))
    if hits.num_rows:  # nothing to pick: no bio needs reading
        # the stage times as they are: the picker computes bio_stage_ns itself (a list per bio
        # built by DuckDB cost more than the picking)
        for batch in q2q_batches(dataset, ["group_key", *STAGE_TIME_COLUMNS, *_GAPS]):
            picks.feed(batch)
    return pa.record_batch(picks.picks())


def heatmap_bins(con: duckdb.DuckDBPyConnection) -> pa.RecordBatch:
    """time_bins' rows (dev_major, dev_minor, start_ns, width_ns), as the pass's depth walk has
    them: over each device's first and last event time, which the connection keeps."""
    rows = device_bounds(con)  # (major, minor, t0, t1, start_ns, width_ns, bins) per device
    return pa.record_batch(
        [
            pa.array([r[0] for r in rows], pa.int32()),
            pa.array([r[1] for r in rows], pa.int32()),
            pa.array([r[4] for r in rows], pa.int64()),
            pa.array([r[5] for r in rows], pa.int64()),
        ],
        names=["dev_major", "dev_minor", "start_ns", "width_ns"],
    )


class CompletedBios:
    """latency_heatmap's cells and, from the same bios, the findings' spike windows at the
    default SpikeOptions: counted from each batch of `bios` rows as the streaming pass hands
    it over (stream/run.py), so that bios.parquet is not read again for them. A bio that
    never completed counts in neither; one without a comm is process '?'."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.cells = HeatmapCells(heatmap_bins(con), list(OBSERVER_COMMS))
        spikes = SpikeOptions()
        self.windows = SpikeWindowRows(spikes.window_ns, spikes.metric)

    def feed(self, bios: object) -> None:
        """Count a batch of bios rows (the columns of `bios`, or of any table with its
        dev_major, dev_minor, c_time_ns, d2c_ns, q2c_ns, comm and partial)."""
        self.cells.feed(bios)
        self.windows.feed(bios)

    def store(self, con: duckdb.DuckDBPyConnection) -> None:
        """Leave the cells (CELLS: dev_major, dev_minor, stage, bin, bucket, n, observer_n,
        max_ns, slowest_comm) and the windows (COMPILED_SPIKE_WINDOWS: dev_major, dev_minor,
        win, ios, p99_ns, max_ns, peak_ns; read by the findings, which drop() keeps) in con."""
        store(con, CELLS, pa.record_batch(self.cells.cells()))
        store(con, COMPILED_SPIKE_WINDOWS, pa.record_batch(self.windows.windows()))


def _one_batch(table: pa.Table) -> pa.RecordBatch:
    combined = table.combine_chunks()
    batches = combined.to_batches()
    return batches[0] if batches else pa.RecordBatch.from_pylist([], schema=table.schema)


def compute(con: duckdb.DuckDBPyConnection, dataset: Path) -> None:
    """Leave the compiled steps' tables in con, whose modules over the pass's tables of
    dataset are created (the pass left the cells and spike windows: CompletedBios)."""
    # each step's batches given back before the next: freed but kept by the allocators, they
    # would sit under the builders' peak
    store(con, ISLANDS, busy_islands(con))
    give_back()
    store(con, PICKS, stage_picks(con, dataset))
    give_back()


def drop(con: duckdb.DuckDBPyConnection) -> None:
    """Drop the compiled steps' tables the statistics read (not the spike windows, a row per
    window, which the findings read after them)."""
    for name in TABLES:
        con.execute(f"DROP TABLE IF EXISTS {name}")


def store(con: duckdb.DuckDBPyConnection, name: str, rows: pa.RecordBatch) -> None:
    """Leave rows in con's table `name` (replacing it)."""
    con.register("_compiled_arrow", pa.table(rows))
    con.execute(f"CREATE OR REPLACE TABLE {name} AS SELECT * FROM _compiled_arrow")
    con.unregister("_compiled_arrow")
