"""`blkscope analyze`: materialize the reconstruction views as Parquet tables in the dataset."""

from __future__ import annotations

import re
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import duckdb
import pyarrow as pa

from blkscope.analyze.findings import FINDINGS_TABLES, compute_findings
from blkscope.analyze.views import (
    connect,
    optional_views,
    register_table,
    register_views,
    unbound_views,
)
from blkscope.errors import DatasetError
from blkscope.ingest.dataset import DatasetWriter, read_manifest, write_parquet_atomic
from blkscope.progress import ProgressCallback
from blkscope.schemas import TABLES

# (table, view that computes it), in dependency order: bios read the stored requests. The
# tables after them read only events, requests and bios, so they are built side by side.
BUILD_ORDER: list[tuple[str, str]] = [
    ("requests", "_requests_build"),
    ("bios", "_bios_build"),
    ("stage_stats", "_stage_stats_build"),
    ("iostat", "_iostat_build"),
    ("latency_hist", "_latency_hist_build"),
    ("depth", "_depth_build"),
    ("depth_bins", "_depth_bins_build"),
    ("io_dist", "_io_dist_build"),
]
SIDE_BY_SIDE_FROM = 2  # BUILD_ORDER index of the first table built side by side

# Intermediates read more than once, computed once into temp tables before the first reader:
# requests and bios both follow every bio through its pieces; requests looks up the plug clock
# of each piece's Q and of its G.
SHARED_BEFORE: dict[str, tuple[str, ...]] = {
    "requests": ("_bio_pieces", "_piece_requests", "_plug_clock"),
}
# Of those, the ones that read only events: computed from the start on a cursor of their own,
# alongside the bio chain (the plug clock's windows over one global order run on one thread).
FROM_EVENTS = ("_plug_clock",)
# Intermediates of the tables built side by side, computed once after bios: the integer-keyed
# long form of bio latencies is read by both stage_stats and latency_hist, the in-flight step
# functions by both depth and depth_bins.
SHARED_AFTER_BIOS = ("_bio_groups", "_bio_stages", "_depth_steps")

FINDINGS = FINDINGS_TABLES

T = TypeVar("T")


class _Steps:
    """Tell a progress callback which table is being built, one step per stored table."""

    def __init__(self, progress: ProgressCallback | None, name: str) -> None:
        self.progress, self.key = progress, f"analyze {name}"
        self.pending = [name for name, _ in BUILD_ORDER] + list(FINDINGS)
        self.total = len(self.pending)
        self.report()

    def report(self) -> None:
        if self.progress is not None:
            doing = self.pending[0] if self.pending else "done"
            done = self.total - len(self.pending)
            self.progress(self.key, done, self.total, unit="steps", label=f"{self.key}: {doing}")

    def done(self, name: str) -> None:
        self.pending.remove(name)
        self.report()


def _build_table(con: duckdb.DuckDBPyConnection, view: str, schema: pa.Schema) -> pa.Table:
    """Run a view into an Arrow table carrying the declared schema (docs included)."""
    table = con.sql(f"SELECT * FROM {view}").to_arrow_table()
    return table.select(schema.names).cast(schema)


def _checked(name: str, path: Path, make: Callable[[], T]) -> T:
    """make(), with a table not matching its declared schema (a bug) reported without a traceback."""
    try:
        return make()
    except (duckdb.Error, pa.ArrowException, ValueError) as exc:
        raise DatasetError(
            str(path),
            f"cannot build table {name}: {exc}",
            hint="please report this with the dataset's manifest.json",
        ) from None


def _on_cursor(
    con: duckdb.DuckDBPyConnection,
    variables: dict[str, int],
    arrows: dict[str, pa.Table],
    work: Callable[[duckdb.DuckDBPyConnection], T],
) -> T:
    """Run work on a cursor of its own that sees what con sees."""
    with con.cursor() as cur:
        for var, value in variables.items():
            cur.execute(f"SET VARIABLE {var} = {value}")
        for name, table in arrows.items():
            cur.register(name, table)
        return work(cur)


def _fetch(view: str, cur: duckdb.DuckDBPyConnection) -> pa.Table:
    """A view's rows as an Arrow table."""
    return cur.sql(f"SELECT * FROM main.{view}").to_arrow_table()


def _build_tables(
    con: duckdb.DuckDBPyConnection,
    dataset: Path,
    manifest: dict[str, Any],
    variables: dict[str, int],
    steps: _Steps,
) -> None:
    """Write every BUILD_ORDER table into the dataset and leave views over the files.

    Each table is written by a background thread while the next ones are computed from its
    Arrow copy in memory; the tables after bios are built two at a time on their own cursors,
    so that one's single-threaded phases (a window over one partition, a sort) overlap the
    other's work.
    """
    # Binding a view reads its tables' Parquet footers: after each new table, retry only the
    # views that could not bind yet instead of redefining all of them.
    unbound = unbound_views(con)
    arrows: dict[str, pa.Table] = {}  # by the name each cursor registers it under
    writes: dict[str, Future[None]] = {}
    with ThreadPoolExecutor(max_workers=1) as writer, ThreadPoolExecutor(max_workers=2) as pool:

        def keep(name: str, table: pa.Table) -> None:
            path = dataset / f"{name}.parquet"
            writes[name] = writer.submit(write_parquet_atomic, table, path)
            manifest["tables"][name] = {"file": path.name, "rows": table.num_rows}
            arrows[f"_arrow_{name}"] = table
            con.register(f"_arrow_{name}", table)
            con.execute(f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM _arrow_{name}")
            steps.done(name)

        early = {
            view: pool.submit(_on_cursor, con, variables, {}, partial(_fetch, view))
            for view in FROM_EVENTS
        }
        for name, view in BUILD_ORDER[:SIDE_BY_SIDE_FROM]:
            unbound = register_views(con, unbound)
            path = dataset / f"{name}.parquet"
            for shared in SHARED_BEFORE.get(name, ()):
                if shared in early:  # its Arrow copy, registered here, hides the view
                    con.register(shared, _checked(name, path, early[shared].result))
                    continue
                make = f"CREATE OR REPLACE TEMP TABLE {shared} AS SELECT * FROM main.{shared}"
                _checked(name, path, partial(con.execute, make))
            keep(name, _checked(name, path, partial(_build_table, con, view, TABLES[name])))
        unbound = register_views(con, unbound)
        for shared in SHARED_AFTER_BIOS:  # its Arrow copy, registered here, hides the view
            arrows[shared] = _checked(shared, dataset, partial(_fetch, shared, con))
            con.register(shared, arrows[shared])
        jobs = {
            name: pool.submit(
                _on_cursor,
                con,
                variables,
                dict(arrows),
                partial(_build_table, view=view, schema=TABLES[name]),
            )
            for name, view in BUILD_ORDER[SIDE_BY_SIDE_FROM:]
        }
        for name, job in jobs.items():
            keep(name, _checked(name, dataset / f"{name}.parquet", job.result))
        for shared in SHARED_AFTER_BIOS:
            con.unregister(shared)
        for name, write in writes.items():
            _checked(name, dataset / f"{name}.parquet", write.result)
            register_table(con, name, dataset / f"{name}.parquet")
            con.unregister(f"_arrow_{name}")
    register_views(con, unbound)


def caches_plug_time(manifest: dict[str, Any]) -> bool:
    """Whether the traced kernel stamps a plug's requests with one cached time (Linux >= 6.9);
    assumed when the capture did not record its kernel release."""
    release = str(manifest.get("capture", {}).get("host", {}).get("kernel", ""))
    match = re.match(r"(\d+)\.(\d+)", release)
    return match is None or (int(match[1]), int(match[2])) >= (6, 9)


def analyze_dataset(
    dataset: Path,
    interval_ns: int = 1_000_000_000,
    origin_ns: int = 0,
    progress: ProgressCallback | None = None,
) -> duckdb.DuckDBPyConnection:
    """Write every analysis table into the dataset, register them, and return the connection.

    interval_ns and origin_ns (trace ns) set the bins of the iostat table; progress hears of
    each table as it is done.
    """
    if interval_ns <= 0:
        raise DatasetError(str(dataset), f"interval must be positive, got {interval_ns} ns")
    if "events" not in read_manifest(dataset)["tables"]:
        raise DatasetError(str(dataset), "has no events table", hint="ingest a trace first")
    # The tables are written into the dataset's next version, swapped in as a whole at the end:
    # an interrupted analysis leaves the dataset as it was.
    with DatasetWriter(dataset, keep=True) as update:
        _analyze_into(update, interval_ns, origin_ns, progress)
    return connect(dataset)


def _analyze_into(
    update: DatasetWriter,
    interval_ns: int,
    origin_ns: int,
    progress: ProgressCallback | None,
) -> None:
    dataset = update.tmp
    manifest = read_manifest(dataset)
    con = connect(dataset)
    variables = {
        "blkscope_interval_ns": int(interval_ns),
        "blkscope_origin_ns": int(origin_ns),
        "blkscope_plug_clock": int(caches_plug_time(manifest)),
    }
    for var, value in variables.items():
        con.execute(f"SET VARIABLE {var} = {value}")
    steps = _Steps(progress, update.out.name)
    _build_tables(con, dataset, manifest, variables, steps)
    for name, table in compute_findings(con, manifest).items():
        path = dataset / f"{name}.parquet"
        write_parquet_atomic(table, path)
        manifest["tables"][name] = {"file": path.name, "rows": table.num_rows}
        register_table(con, name, path)
        steps.done(name)
    # Every view must bind once the analysis tables exist, except those over tables that only
    # some captures bring (a partition listing, a writeback log): anything else is a bug.
    left_out = [v for v in register_views(con) if v not in optional_views(manifest)]
    con.close()
    if left_out:
        raise DatasetError(str(update.out), f"views failed to bind: {', '.join(left_out)}")
    update.commit(manifest)
