"""`blkscope analyze`: materialize the reconstruction views as Parquet tables in the dataset."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import duckdb
import pyarrow as pa

from blkscope.analyze import compiled
from blkscope.analyze.analysis_tables import STREAMED, analysis_tables
from blkscope.analyze.findings import FINDINGS_TABLES, compute_findings
from blkscope.analyze.memory import bound_memory, give_back
from blkscope.analyze.sql_modules import SqlObject
from blkscope.analyze.stream.run import stream_tables
from blkscope.analyze.views import (
    builders,
    connect,
    modules,
    optional_modules,
    register,
    register_table,
)
from blkscope.errors import DatasetError
from blkscope.progress import ProgressCallback
from blkscope.schemas import TABLES
from blkscope.store.manifest import Manifest, first_unreadable
from blkscope.store.writer import DatasetWriter, write_parquet_atomic

# `requests` and `bios` come from the streaming pass (analyze/stream); the statistics after
# them are the rows of the SQL objects declared `(LIKE table)` (views.builders), two at a time.
# The modules declared `CREATE TABLE` are intermediates read more than once (the reporting
# groups of bio latencies and their bucket counts): computed once, when registered, into tables
# of the in-memory database (which spill to the temp folder under the memory limit).

T = TypeVar("T")

# The SQL modules the analysis's own steps read, besides the statistics' builders: the pass
# (op_class, and the bio latencies' groups and buckets), the compiled steps and the findings.
# Only these (and what they include) are created on its connection; the public views over the
# stored tables are for users, and every Dataset opened creates them all (failing, naming the
# view, if one does not bind).
STEP_MODULES = (
    "op_class",
    "time_bins",
    "_bio_groups",
    "_bio_stages",
    "_stage_buckets",
    "_stage_ranks",
    "_iostat_requests",
    "_inflight_by_process",
    "_series_windows",
    "_spike_windows",
    "_spike_window_tops",
    "writeback_events",
    "_writeback_windows",
)


def step_modules() -> list[str]:
    """The modules the analysis creates: those its steps read, and the builders' own."""
    built = [name for name, m in modules().items() if any(o.like for o in m.objects)]
    return [*STEP_MODULES, *built]


class _Steps:
    """Tell a progress callback which table is being built, one step per stored table."""

    def __init__(self, progress: ProgressCallback | None, name: str) -> None:
        self.progress, self.key = progress, f"analyze {name}"
        self.pending = list(STREAMED) + list(builders()) + list(FINDINGS_TABLES)
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


def _build_table(con: duckdb.DuckDBPyConnection, query: str, schema: pa.Schema) -> pa.Table:
    """Run a query into an Arrow table carrying the declared schema (docs included)."""
    table = con.sql(query).to_arrow_table().select(schema.names)
    if table.schema.types == schema.types:  # the usual case: no cast (and no pyarrow.compute)
        return pa.Table.from_arrays(table.columns, schema=schema)
    return table.cast(schema)


def _rows_of(builder: SqlObject, arguments: dict[str, int]) -> str:
    """The query of a builder's rows: a view's, or a table macro's called with the arguments
    its parameters name."""
    if builder.kind != "macro":
        return f"SELECT * FROM {builder.name}"
    values = ", ".join(str(int(arguments[p.name])) for p in builder.params)
    return f"SELECT * FROM {builder.name}({values})"


def _checked(name: str, path: Path, inputs: list[Path], make: Callable[[], T]) -> T:
    """make(), reported without a traceback when it fails: as an input table file damaged on
    disk (bad input) when one of inputs does not decode, else as a bug (a table not matching
    its declared schema, a query that fails)."""
    try:
        return make()
    except (duckdb.Error, pa.ArrowException, ValueError) as exc:
        damaged = first_unreadable(inputs)  # DuckDB's errors do not say which file, or why
        if damaged is not None:
            raise damaged from None
        raise DatasetError(
            str(path),
            f"cannot build table {name}: {exc}",
            hint="please report this with the dataset's manifest.json",
        ) from None


def _on_cursor(con: duckdb.DuckDBPyConnection, work: Callable[[duckdb.DuckDBPyConnection], T]) -> T:
    """Run work on a cursor of its own that sees what con sees."""
    with con.cursor() as cur:
        return work(cur)


def _build_tables(
    con: duckdb.DuckDBPyConnection,
    done: set[str],
    dataset: Path,
    manifest: dict[str, Any],
    arguments: dict[str, int],
    steps: _Steps,
    progress: ProgressCallback | None,
) -> None:
    """Write requests and bios (one streaming pass over the events), then every statistic
    (views.builders), and leave views over the files; done: the SQL modules created on con.

    The statistics are built two at a time on cursors of their own, so that one's
    single-threaded phases (a window over one partition, a sort) overlap the other's work.
    """
    for name in STREAMED:  # hard links to the current version's files: never write them
        (dataset / f"{name}.parquet").unlink(missing_ok=True)
    inputs = [
        dataset / table["file"]
        for name, table in manifest["tables"].items()
        if name not in analysis_tables()
    ]
    rows = _checked(
        "requests",
        dataset,
        inputs,
        partial(
            stream_tables,
            con,
            dataset,
            caches_plug_time(manifest),
            int(manifest.get("events", {}).get("count", 0)),
            progress,
            key=f"{steps.key} events",
            interval_ns=arguments["interval_ns"],
            origin_ns=arguments["origin_ns"],
        ),
    )
    give_back()
    for name in STREAMED:
        manifest["tables"][name] = {"file": f"{name}.parquet", "rows": rows[name]}
        register_table(con, name, dataset / f"{name}.parquet")
        steps.done(name)
    # the modules over requests, bios and the pass's own tables (the intermediates computed),
    # the compiled steps over them, then the builders that read those
    needed = step_modules()
    register(con, done, needed, source=str(dataset))
    _checked("stage_stats", dataset, inputs, partial(compiled.compute, con, dataset))
    register(con, done, needed, source=str(dataset))
    with ThreadPoolExecutor(max_workers=2) as pool:
        jobs = {
            name: pool.submit(
                _on_cursor,
                con,
                partial(_build_table, query=_rows_of(builder, arguments), schema=TABLES[name]),
            )
            for name, builder in builders().items()
        }
        for name, job in jobs.items():
            path = dataset / f"{name}.parquet"
            table = _checked(name, path, inputs, job.result)
            write_parquet_atomic(table, path)
            manifest["tables"][name] = {"file": path.name, "rows": table.num_rows}
            register_table(con, name, path)
            steps.done(name)
    for module in modules().values():  # the intermediates are read by the statistics only
        for sql_object in module.objects:
            if sql_object.kind == "table" and module.name in done:
                con.execute(f"DROP TABLE {sql_object.name}")
    compiled.drop(con)
    give_back()  # the compiled steps' batches, before the findings
    register(con, done, needed, source=str(dataset))  # the modules over the statistics


def duckdb_threads() -> int:
    """DuckDB's workers for an analysis: every core this process may use but one. The analysis
    keeps a thread of its own busy beside DuckDB's (the streaming pass, or a second statistic
    on its own cursor), and on a core shared with it DuckDB's parallel plans cost more CPU,
    splitting and merging partial results, than they save in wall time."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, (cores or 1) - 1)


def caches_plug_time(manifest: dict[str, Any]) -> bool:
    """Whether the traced kernel stamps a plug's requests with one cached time (Linux >= 6.9);
    assumed when the capture did not record its kernel release."""
    release = str(manifest.get("capture", {}).get("host", {}).get("kernel", ""))
    match = re.match(r"(\d+)\.(\d+)", release)
    return match is None or (int(match[1]), int(match[2])) >= (6, 9)


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
    # only the ingested tables: each analysis table, and each view over one, is defined once
    # it is written
    done: set[str] = set()
    ingested = [name for name in current.tables if name not in analysis_tables()]
    con = connect(dataset, current, ingested, done, step_modules())
    spill = bound_memory(con, dataset)
    con.execute(f"SET threads = {duckdb_threads()}")
    steps = _Steps(progress, update.out.name)
    arguments = {"interval_ns": interval_ns, "origin_ns": origin_ns}
    _build_tables(con, done, dataset, manifest, arguments, steps, progress)
    for name, table in compute_findings(con, manifest).items():  # the last step: none reads them
        path = dataset / f"{name}.parquet"
        write_parquet_atomic(table, path)
        manifest["tables"][name] = {"file": path.name, "rows": table.num_rows}
        steps.done(name)
    # Every view must bind once the analysis tables exist, except those over tables that only
    # some captures bring (a partition listing, a writeback log): anything else is a bug.
    left_out = [
        name
        for name in register(con, done, step_modules(), source=str(update.out))
        if name not in optional_modules(manifest["tables"])
    ]
    con.close()
    shutil.rmtree(spill, ignore_errors=True)  # never part of the dataset
    if left_out:
        raise DatasetError(str(update.out), f"views without their inputs: {', '.join(left_out)}")
    update.commit(manifest)
    return Manifest.from_doc(manifest)
