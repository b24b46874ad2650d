"""The Dataset handle: one dataset folder, its manifest read once, one DuckDB connection.

Commands and library users hold a Dataset instead of a path: the manifest is read (and
checked) the first time it is needed, and the connection, with every table and SQL view
bound, is opened the first time a query runs. Tables are also Polars LazyFrames over the
Parquet files (`blkscope.frames`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from blkscope.errors import DatasetError
from blkscope.store.manifest import Manifest, read_manifest
from blkscope.wallclock import WallClock

if TYPE_CHECKING:
    import duckdb
    import polars as pl

    from blkscope.analyze.findings import SpikeOptions
    from blkscope.analyze.sql_modules import Column


@dataclass(frozen=True)
class TableInfo:
    """One public table of a dataset: what it holds, its columns and how many rows it has."""

    name: str
    doc: str
    rows: int
    columns: tuple[Column, ...]


@dataclass(frozen=True)
class SpikeFindings:
    """What `Dataset.spikes` found: latency episodes, the spikes they group, and the
    writeback verdict (why the episodes happened, when a writeback log says)."""

    episodes: pl.DataFrame
    spikes: pl.DataFrame
    writeback: pl.DataFrame


class Dataset:
    """An open dataset folder (see the module doc). Use as a context manager, or close()."""

    def __init__(self, path: str | Path, manifest: Manifest | None = None) -> None:
        self.path = Path(path)
        self._documented = False
        if manifest is not None:  # just written by blkscope: no need to read it back
            self.__dict__["manifest"] = manifest

    def __repr__(self) -> str:
        return f"Dataset({str(self.path)!r})"

    @functools.cached_property
    def manifest(self) -> Manifest:
        """The dataset's manifest, read and checked on first use."""
        return read_manifest(self.path)

    @functools.cached_property
    def con(self) -> duckdb.DuckDBPyConnection:
        """The DuckDB connection with the dataset's tables and views, opened on first use."""
        from blkscope.analyze.views import connect

        return connect(self.path, self.manifest)

    @property
    def clock(self) -> WallClock:
        """Where trace time 0 sits on the wall clock (from the manifest)."""
        return WallClock.from_manifest(dict(self.manifest.doc))

    def document(self) -> None:
        """Put every stored column's doc on the connection as a DuckDB comment (once): then
        `SELECT column_name, comment FROM duckdb_columns() WHERE table_name = 'bios'` lists
        them. `sql` does this itself for a query that reads the catalog."""
        if not self._documented:
            from blkscope.analyze.views import document

            document(self.con, self.manifest.tables)
            self._documented = True

    def lock_down(self) -> None:
        """Leave the connection able to read this dataset's own tables and nothing else (no
        other file, extension or database), for SQL from someone else: `blkscope sql`."""
        from blkscope.analyze.views import lock_down

        lock_down(self.con, self.path, self.manifest.tables)

    def has(self, table: str) -> bool:
        """Whether the dataset stores this table."""
        return table in self.manifest.tables

    def close(self) -> None:
        """Close the connection, if one was opened."""
        con = self.__dict__.pop("con", None)
        self._documented = False
        if con is not None:
            con.close()

    def __enter__(self) -> Dataset:
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # The tables, as documented frames.

    @property
    def tables(self) -> list[TableInfo]:
        """The stored tables, with their docs and columns (as the schemas declare them)."""
        from blkscope.analyze.sql_modules import Column
        from blkscope.schemas import TABLES, doc_of

        return [
            TableInfo(
                name,
                doc_of(TABLES[name]),
                entry.rows,
                tuple(Column(f.name, str(f.type), doc_of(f)) for f in TABLES[name]),
            )
            for name, entry in sorted(self.manifest.tables.items())
        ]

    def frame(self, table: str) -> pl.LazyFrame:
        """A stored table as a Polars LazyFrame over its Parquet file, with every time also as
        a Datetime (trace instants, when the wall clock is known) or Duration column."""
        from blkscope.analyze.views import table_file
        from blkscope.frames import with_times

        entry = self.manifest.tables.get(table)
        if entry is None:
            raise DatasetError(
                str(self.path),
                f"has no table {table!r}",
                hint=f"it has: {', '.join(sorted(self.manifest.tables))}",
            )
        import polars as pl

        scan = pl.scan_parquet(table_file(self.path, entry.file))
        return with_times(scan, table, self.clock)

    @property
    def events(self) -> pl.LazyFrame:
        """The `events` table: one row per trace event, as printed."""
        return self.frame("events")

    @property
    def requests(self) -> pl.LazyFrame:
        """The `requests` table: one row per block request, D to C."""
        return self.frame("requests")

    @property
    def bios(self) -> pl.LazyFrame:
        """The `bios` table: one row per queued bio, Q to C."""
        return self.frame("bios")

    @property
    def stage_stats(self) -> pl.LazyFrame:
        """The `stage_stats` table: per device, operation and stage, latency percentiles."""
        return self.frame("stage_stats")

    @property
    def iostat(self) -> pl.LazyFrame:
        """The `iostat` table: iostat -x figures per interval, from the trace."""
        return self.frame("iostat")

    # Queries and findings.

    def sql(self, query: str) -> pl.DataFrame:
        """Run read-only DuckDB SQL over the tables and public views; the rows as a frame."""
        from blkscope.analyze.query import run_frame
        from blkscope.analyze.views import reads_catalog

        if reads_catalog(query):
            self.document()
        return run_frame(self.con, query)

    def spikes(
        self,
        window: str | int = "1s",
        metric: str = "q2c",
        k: float = 5.0,
        threshold: str | int | None = None,
    ) -> SpikeFindings:
        """Find windows of abnormal latency (p99 above median + k*MAD of the window p99s, or
        above a fixed threshold) and group them into episodes. Durations are ns, or text such
        as '100ms' (bare numbers in text are seconds, as on the command line)."""
        from blkscope.analyze.findings import SpikeOptions
        from blkscope.errors import OptionError

        if metric not in ("q2c", "d2c"):
            raise OptionError("metric", f"must be q2c or d2c, got {metric!r}")
        options = SpikeOptions(_ns(window, "window"), metric, k, None, min_ios=5)
        if threshold is not None:
            options = SpikeOptions(options.window_ns, metric, k, _ns(threshold, "threshold"), 5)
        return self.find_spikes(options)

    def find_spikes(self, options: SpikeOptions) -> SpikeFindings:
        """Dataset.spikes with its options already checked."""
        import polars as pl

        from blkscope.analyze.findings import find_episodes

        found = find_episodes(self.con, options)
        return SpikeFindings(
            pl.from_arrow(found.episodes),  # type: ignore[arg-type]
            pl.from_arrow(found.spikes),  # type: ignore[arg-type]
            pl.from_arrow(found.writeback_verdict),  # type: ignore[arg-type]
        )

    def periods(self) -> pl.DataFrame:
        """The significant periods of writeback IO, journal IO, writeback events and spikes,
        most significant first."""
        return self.sql("SELECT * FROM periods ORDER BY p_value, series")


def _ns(value: str | int, option: str) -> int:
    """A duration given as ns, or as text the command line would take."""
    if isinstance(value, int):
        return value
    from blkscope.units import option_duration_ns

    return option_duration_ns(value, f"--{option}")
