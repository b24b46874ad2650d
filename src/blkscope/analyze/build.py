"""`blkscope analyze`: materialize the reconstruction views as Parquet tables in the dataset."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import duckdb
import pyarrow as pa

from blkscope.analyze.analysis_tables import STREAMED, analysis_tables
from blkscope.analyze.findings import FINDINGS_TABLES, compute_findings
from blkscope.analyze.memory import bound_memory, give_back
from blkscope.analyze.stream.run import stream_tables
from blkscope.analyze.views import (
    INTERNAL,
    connect,
    in_schema,
    materialized,
    needed_by,
    optional_views,
    register_table,
    register_views,
    sql_views,
    unbound_views,
)
from blkscope.errors import DatasetError
from blkscope.progress import ProgressCallback
from blkscope.schemas import TABLES
from blkscope.store.manifest import Manifest
from blkscope.store.writer import DatasetWriter, write_parquet_atomic

# `requests` and `bios` come from the streaming pass (analyze/stream); the tables after them are
# statistics over those two and the events, each made by the view whose header says
# `-- materialize: table NAME`, two at a time. The views marked `-- materialize: temp` are
# intermediates read more than once (the long form of bio latencies and its bucket counts, the
# in-flight step functions): computed once, in header order, into tables of the in-memory
# database (which spill to the temp folder under the memory limit).
# (in the order the schemas declare the tables: the order progress and the manifest list them)
BUILD_ORDER: list[tuple[str, str]] = sorted(
    ((v.table or v.name, v.name) for v in materialized("table")),
    key=lambda t: list(TABLES).index(t[0]),
)
SHARED_AFTER_BIOS = tuple(v.name for v in materialized("temp"))


FINDINGS = FINDINGS_TABLES

T = TypeVar("T")


class _Steps:
    """Tell a progress callback which table is being built, one step per stored table."""

    def __init__(self, progress: ProgressCallback | None, name: str) -> None:
        self.progress, self.key = progress, f"analyze {name}"
        self.pending = list(STREAMED) + [name for name, _ in BUILD_ORDER] + list(FINDINGS)
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
    table = con.sql(f"SELECT * FROM {in_schema(view)}").to_arrow_table()
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


def _build_tables(
    con: duckdb.DuckDBPyConnection,
    dataset: Path,
    manifest: dict[str, Any],
    variables: dict[str, int],
    steps: _Steps,
    progress: ProgressCallback | None,
) -> None:
    """Write requests and bios (one streaming pass over the events), then every BUILD_ORDER
    table, and leave views over the files.

    The statistics are built two at a time on cursors of their own, so that one's
    single-threaded phases (a window over one partition, a sort) overlap the other's work.
    """
    for name in STREAMED:  # hard links to the current version's files: never write them
        (dataset / f"{name}.parquet").unlink(missing_ok=True)
    rows = _checked(
        "requests",
        dataset,
        partial(
            stream_tables,
            con,
            dataset,
            bool(variables["blkscope_plug_clock"]),
            int(manifest.get("events", {}).get("count", 0)),
            progress,
            key=f"{steps.key} events",
        ),
    )
    give_back()
    for name in STREAMED:
        manifest["tables"][name] = {"file": f"{name}.parquet", "rows": rows[name]}
        register_table(con, name, dataset / f"{name}.parquet")
        steps.done(name)
    # The temps' inputs first, the views reading the temps once they are tables: bound over the
    # temps' views, _stage_stats_build and _latency_hist_build took 55 ms of every analysis.
    waiting = unbound_views(con)
    first = needed_by(SHARED_AFTER_BIOS, sql_views().values())
    unbound = register_views(con, [v for v in waiting if v in first], source=str(dataset))
    for shared in SHARED_AFTER_BIOS:
        make = (
            f"CREATE OR REPLACE TABLE {INTERNAL}.{shared}_t AS SELECT * FROM {INTERNAL}.{shared};"
            f"DROP VIEW {INTERNAL}.{shared}; ALTER TABLE {INTERNAL}.{shared}_t RENAME TO {shared}"
        )
        _checked(shared, dataset, partial(con.execute, make))
    unbound += register_views(con, [v for v in waiting if v not in first], source=str(dataset))
    with ThreadPoolExecutor(max_workers=2) as pool:
        jobs = {
            name: pool.submit(
                _on_cursor,
                con,
                variables,
                {},
                partial(_build_table, view=view, schema=TABLES[name]),
            )
            for name, view in BUILD_ORDER
        }
        for name, job in jobs.items():
            path = dataset / f"{name}.parquet"
            table = _checked(name, path, job.result)
            write_parquet_atomic(table, path)
            manifest["tables"][name] = {"file": path.name, "rows": table.num_rows}
            register_table(con, name, path)
            steps.done(name)
    for shared in SHARED_AFTER_BIOS:
        con.execute(f"DROP TABLE {INTERNAL}.{shared}")
    register_views(con, unbound, source=str(dataset))


def caches_plug_time(manifest: dict[str, Any]) -> bool:
    """Whether the traced kernel stamps a plug's requests with one cached time (Linux >= 6.9);
    assumed when the capture did not record its kernel release."""
    release = str(manifest.get("capture", {}).get("host", {}).get("kernel", ""))
    match = re.match(r"(\d+)\.(\d+)", release)
    return match is None or (int(match[1]), int(match[2])) >= (6, 9)


# Every table `analyze_dataset` writes: a dataset holding them all is analysed.
ANALYSIS_TABLES = analysis_tables()


def analyze_dataset(
    dataset: Path,
    current: Manifest,
    interval_ns: int = 1_000_000_000,
    origin_ns: int = 0,
    progress: ProgressCallback | None = None,
) -> Manifest:
    """Write every analysis table into the dataset (whose manifest is `current`) and return
    the new manifest.

    interval_ns and origin_ns (trace ns) set the bins of the iostat table; progress hears of
    each table as it is done.
    """
    if interval_ns <= 0:
        raise DatasetError(str(dataset), f"interval must be positive, got {interval_ns} ns")
    if "events" not in current.tables:
        raise DatasetError(str(dataset), "has no events table", hint="ingest a trace first")
    # The tables are written into the dataset's next version, swapped in as a whole at the end:
    # an interrupted analysis leaves the dataset as it was.
    with DatasetWriter(dataset, keep=True) as update:
        return _analyze_into(update, current, interval_ns, origin_ns, progress)


def _analyze_into(
    update: DatasetWriter,
    current: Manifest,
    interval_ns: int,
    origin_ns: int,
    progress: ProgressCallback | None,
) -> Manifest:
    dataset = update.tmp  # the next version: the current one's files, hard-linked
    manifest = current.editable()
    con = connect(dataset, current)
    variables = {
        "blkscope_interval_ns": int(interval_ns),
        "blkscope_origin_ns": int(origin_ns),
        "blkscope_plug_clock": int(caches_plug_time(manifest)),
    }
    for var, value in variables.items():
        con.execute(f"SET VARIABLE {var} = {value}")
    spill = bound_memory(con, dataset)
    steps = _Steps(progress, update.out.name)
    _build_tables(con, dataset, manifest, variables, steps, progress)
    for name, table in compute_findings(con, manifest).items():
        path = dataset / f"{name}.parquet"
        write_parquet_atomic(table, path)
        manifest["tables"][name] = {"file": path.name, "rows": table.num_rows}
        register_table(con, name, path)
        steps.done(name)
    # Every view must bind once the analysis tables exist, except those over tables that only
    # some captures bring (a partition listing, a writeback log): anything else is a bug.
    left_out = [
        v
        for v in register_views(con, unbound_views(con), source=str(update.out))
        if v not in optional_views(manifest["tables"])
    ]
    con.close()
    shutil.rmtree(spill, ignore_errors=True)  # never part of the dataset
    if left_out:
        raise DatasetError(str(update.out), f"views without their inputs: {', '.join(left_out)}")
    update.commit(manifest)
    return Manifest.from_doc(manifest)
