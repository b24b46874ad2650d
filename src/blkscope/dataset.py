"""The Dataset handle: one dataset folder, its manifest read once, one DuckDB connection.

Commands and library users hold a Dataset instead of a path: the manifest is read (and
checked) the first time it is needed, and the connection, with every table and SQL view
bound, is opened the first time a query runs. Tables are also Polars LazyFrames over the
Parquet files (`blkscope.frames`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, overload

from blkscope.errors import DatasetError
from blkscope.store.manifest import Manifest, read_manifest
from blkscope.wallclock import WallClock

if TYPE_CHECKING:
    import duckdb
    import polars as pl

    from blkscope.analyze.compare import Comparison
    from blkscope.analyze.devices import DeviceName
    from blkscope.analyze.file_usage import During
    from blkscope.analyze.findings import SpikeOptions
    from blkscope.analyze.query import Answer, QueryLimits
    from blkscope.analyze.sql_modules import Column
    from blkscope.files.attach import HandPlacement
    from blkscope.progress import ProgressCallback


@dataclass(frozen=True, repr=False)
class TableInfo:
    """One public table of a dataset: what it holds, its columns and how many rows it has."""

    name: str
    doc: str
    rows: int
    columns: tuple[Column, ...]

    def __repr__(self) -> str:
        return f"<table {self.name}: {self.rows:,} rows, {len(self.columns)} columns>"


class Tables(Sequence[TableInfo]):
    """A dataset's stored tables, by position or by name (`ds.tables["bios"].columns`); shown
    as one short line, the docs only when asked for."""

    def __init__(self, path: Path, tables: Iterable[TableInfo]) -> None:
        self._path = path
        self._tables = tuple(tables)
        self._named = {t.name: t for t in self._tables}

    @overload
    def __getitem__(self, key: int | str) -> TableInfo: ...
    @overload
    def __getitem__(self, key: slice) -> Sequence[TableInfo]: ...
    def __getitem__(self, key: int | str | slice) -> TableInfo | Sequence[TableInfo]:
        if isinstance(key, str):
            if key not in self._named:
                raise _no_table(self._path, key, self._named)
            return self._named[key]
        return self._tables[key]

    def __len__(self) -> int:
        return len(self._tables)

    def __iter__(self) -> Iterator[TableInfo]:
        return iter(self._tables)

    def __contains__(self, item: object) -> bool:
        return item in self._named or item in self._tables

    def __repr__(self) -> str:
        listed = ", ".join(f"{t.name} ({t.rows:,})" for t in self._tables)
        return f"<{len(self)} tables, rows in each: {listed}>"


def _no_table(path: Path, table: str, have: Iterable[str]) -> DatasetError:
    return DatasetError(
        str(path), f"has no table {table!r}", hint=f"it has: {', '.join(sorted(have))}"
    )


@dataclass(frozen=True)
class SpikeFindings:
    """What `Dataset.spikes` found, as Polars LazyFrames (every `*_ns` time also as a Datetime
    or Duration column, as the tables have): latency episodes, the spikes they group, and the
    writeback verdict (why the episodes happened, when a writeback log says)."""

    episodes: pl.LazyFrame
    spikes: pl.LazyFrame
    writeback: pl.LazyFrame


# The findings analyze stores with the default SpikeOptions, and the frame each is in.
_SPIKE_TABLES = {"episodes": "episodes", "spikes": "spikes", "writeback": "writeback_verdict"}


class Dataset:
    """An open dataset folder (see the module doc). Use as a context manager, or close()."""

    def __init__(self, path: str | Path, manifest: Manifest | None = None) -> None:
        self.path = Path(path)
        self._documented = False
        if manifest is not None:  # just written by blkscope: no need to read it back
            self.__dict__["manifest"] = manifest

    def __repr__(self) -> str:
        return f"Dataset({str(self.path)!r})"

    def __getitem__(self, table: str) -> pl.LazyFrame:
        """`ds["bios"]` is `ds.frame("bios")`."""
        return self.frame(table)

    @functools.cached_property
    def manifest(self) -> Manifest:
        """The dataset's manifest, read and checked on first use."""
        return read_manifest(self.path)

    @functools.cached_property
    def con(self) -> duckdb.DuckDBPyConnection:
        """The DuckDB connection with the dataset's tables and views, opened on first use (each
        view created when a statement first names it)."""
        from blkscope.analyze.views import connect_on_use

        return connect_on_use(self.path, self.manifest)

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
    def tables(self) -> Tables:
        """The stored tables, with their docs and columns (as the schemas declare them)."""
        from blkscope.analyze.sql_modules import Column
        from blkscope.schemas import TABLES, doc_of

        return Tables(
            self.path,
            (
                TableInfo(
                    name,
                    doc_of(TABLES[name]),
                    entry.rows,
                    tuple(Column(f.name, str(f.type), doc_of(f)) for f in TABLES[name]),
                )
                for name, entry in sorted(self.manifest.tables.items())
            ),
        )

    def frame(self, table: str) -> pl.LazyFrame:
        """A stored table as a Polars LazyFrame over its Parquet file, with every time also as
        a Datetime (trace instants, when the wall clock is known) or Duration column."""
        from blkscope.analyze.views import table_file
        from blkscope.frames import with_times

        entry = self.manifest.tables.get(table)
        if entry is None:
            raise _no_table(self.path, table, self.manifest.tables)
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

    def query(self, query: str, limits: QueryLimits | None = None) -> Answer:
        """Run SQL from someone else (`blkscope sql`): read-only, on a connection that can
        reach this dataset's own tables and nothing else, within a time and a memory limit
        (default: QueryLimits()); the rows as Python values."""
        from blkscope.analyze import query as run
        from blkscope.analyze.views import reads_catalog

        limits = limits or run.QueryLimits()
        with run.limited(self.con, limits):  # before lock_down locks the configuration
            if reads_catalog(query):
                self.document()  # the column docs, for DESCRIBE-like queries
            self.lock_down()
            return run.run_query(self.con, query, limits)

    def spikes(
        self,
        window: str | int = "1s",
        metric: str = "q2c",
        k: float = 5.0,
        threshold: str | int | None = None,
    ) -> SpikeFindings:
        """Find windows of abnormal latency (p99 above median + k*MAD of the window p99s, or
        above a fixed threshold) and group them into episodes. Durations are ns, or text such
        as '100ms' (bare numbers in text are seconds, as on the command line). With the
        defaults, these are the tables analyze stored (the report's); other options find
        them again."""
        from blkscope.analyze.findings import SpikeOptions
        from blkscope.errors import OptionError

        if metric not in ("q2c", "d2c"):
            raise OptionError("metric", f"must be q2c or d2c, got {metric!r}")
        limit = None if threshold is None else _ns(threshold, "threshold")
        return self.find_spikes(SpikeOptions(_ns(window, "window"), metric, k, limit, min_ios=5))

    def find_spikes(self, options: SpikeOptions) -> SpikeFindings:
        """Dataset.spikes with its options already checked."""
        import polars as pl

        from blkscope.analyze.findings import SpikeOptions, find_episodes
        from blkscope.frames import with_times

        if options == SpikeOptions() and all(self.has(t) for t in _SPIKE_TABLES.values()):
            return SpikeFindings(**{k: self.frame(t) for k, t in _SPIKE_TABLES.items()})
        found = find_episodes(self.con, options)
        tables = {"episodes": found.episodes, "spikes": found.spikes,
                  "writeback": found.writeback_verdict}  # fmt: skip
        return SpikeFindings(
            **{
                k: with_times(pl.from_arrow(t).lazy(), _SPIKE_TABLES[k], self.clock)  # type: ignore[union-attr]
                for k, t in tables.items()
            }
        )

    def periods(self) -> pl.LazyFrame:
        """The significant periods of writeback IO, journal IO, writeback events and spikes,
        most significant first."""
        return self.frame("periods").sort("p_value", "series", nulls_last=True)

    # What the devices are and what the commands print about them.

    def device_names(self) -> dict[tuple[int, int], DeviceName]:
        """What the traced devices are called (vda, nvme0n1, sda1) by (major, minor), where
        the dataset says: capture.json, a partition listing, or the biosnoop log's disk whose
        rows matched the device's requests."""
        if "device_names" not in self.__dict__:
            from blkscope.analyze.crosscheck import biosnoop_agreement
            from blkscope.analyze.devices import device_names

            matched = {}
            if self.has("biosnoop") and self.has("requests"):
                matched = {d.dev: d.disk for d in biosnoop_agreement(self.con) if d.dev}
            self.__dict__["device_names"] = device_names(self.con, dict(self.manifest.doc), matched)
        return self.__dict__["device_names"]

    def device_summary(self) -> list[dict[str, Any]]:
        """Per device: IO counts and device-level stage statistics (ns), and its name."""
        from blkscope.analyze.device_summary import device_summary

        devices = device_summary(self.con)
        names = self.device_names()
        for d in devices:
            major, minor = (int(x) for x in d["dev"].split(","))
            known = names.get((major, minor))
            d["name"] = known.name if known else None
        return devices

    def traced_devices(self, table: str = "events") -> list[tuple[int, int]]:
        """The (major, minor) of every device in one of the dataset's tables."""
        from blkscope.analyze.devices import traced_devices

        return traced_devices(self.con, table)

    def crosscheck(self) -> dict[str, Any]:
        """The rebuilt requests held against the capture's own biosnoop and iostat logs."""
        from blkscope.analyze.crosscheck import crosscheck

        return crosscheck(self.con, set(self.manifest.tables))

    def compare(self, after: Dataset) -> Comparison:
        """This capture against a later one: latency shifts with 95% intervals, spikes,
        periods, each judged noise or real."""
        from blkscope.analyze.compare import compare

        return compare(self.con, after.con, str(self.path), str(after.path))

    def file_usage(
        self, during: During | None = None, top: int = 20, progress: ProgressCallback | None = None
    ) -> dict[str, Any]:
        """Which files the IO went to (needs a file map: `attach_file_maps`), all of it or
        only what was in flight `during` spikes, writeback or a time range."""
        from blkscope.analyze.file_usage import During, file_usage

        return file_usage(self.con, during or During(), top, progress)

    # Tables added to the dataset: each returns the handle on the new version.

    def attach_file_maps(
        self, maps: list[Path], place: HandPlacement, strict: bool = False
    ) -> tuple[Dataset, dict[str, Any]]:
        """Store file maps (a capture's file_extents, `filefrag -v` or debugfs output) as the
        dataset's file_extents; the new handle and what the manifest records of them."""
        from blkscope.files.attach import attach_maps

        traced = self.traced_devices("bios")
        self.close()
        notes = attach_maps(self.path, maps, traced, place, strict)
        return Dataset(self.path), notes

    def attach_partitions(
        self, listings: list[Path], device: tuple[int, int] | None = None
    ) -> Dataset:
        """Place the listed partitions (/proc/partitions, `fdisk -l`, `lsblk --json`) on the
        traced disks and store them as the partitions table; the new handle."""
        from blkscope.analyze.devices import remap_events
        from blkscope.errors import InputFormatError
        from blkscope.ingest.logs.partition_listing import (
            assign_disk,
            partitions_table,
            place_from_remaps,
            read_partitions,
        )
        from blkscope.store.writer import add_table

        parts, devices = read_partitions(listings)
        traced = self.traced_devices("events")
        if not parts and devices:
            parts = place_from_remaps(devices, remap_events(self.con))
            if not parts:
                raise InputFormatError(
                    str(listings[0]),
                    "cannot place partitions: /proc/partitions has no start sectors "
                    "and the trace has no remap (A) events from them",
                    hint="pass `fdisk -l` or `lsblk --json -b -o NAME,MAJ:MIN,START,SIZE,PKNAME,TYPE` "
                    "output instead",
                )
        self.close()
        table = partitions_table(assign_disk(parts, traced, device))
        return Dataset(self.path, add_table(self.path, "partitions", table))

    def partition_io(self) -> list[dict[str, Any]]:
        """IO, bytes and latency per partition (the partition_io view)."""
        from blkscope.analyze.views import query_table

        return query_table(self.con, "SELECT * FROM partition_io").to_pylist()


def _ns(value: str | int, option: str) -> int:
    """A duration given as ns, or as text the command line would take."""
    if isinstance(value, int):
        return value
    from blkscope.units import option_duration_ns

    return option_duration_ns(value, f"--{option}")
