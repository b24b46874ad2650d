"""Write a dataset folder atomically: everything goes to a temp folder that is renamed at the end."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import queue
import shutil
import threading
from contextlib import suppress
from pathlib import Path
from types import TracebackType
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from blkscope.errors import DatasetError
from blkscope.ingest.capture_doc import CAPTURE_SHAPE
from blkscope.ingest.folder_swap import (
    WRITE_HINT,
    WriteLock,
    clean_leftovers,
    recover,
    swap_in,
    temp_sibling,
)
from blkscope.ingest.jsonshape import OPT_INT, OPT_STR, Required, mismatch
from blkscope.ingest.textlog import LIMIT
from blkscope.schemas import TABLES

MANIFEST = "manifest.json"
MAX_MANIFEST_BYTES = 64 << 20  # a real one is a few KiB


# Errors of the file system written to, not of an input read: disk full, quota, read-only, too
# big a file, not allowed, a failing disk.
WRITE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG, errno.EACCES, errno.EPERM,
                errno.EIO}  # fmt: skip


def cannot_write(out: Path, exc: OSError) -> DatasetError:
    """The one message for a dataset the file system would not take."""
    reason = os.strerror(exc.errno) if exc.errno else str(exc)
    return DatasetError(str(out), f"cannot write: {reason}", hint=WRITE_HINT)


def close_quietly(writer: pq.ParquetWriter) -> None:
    """Close a Parquet writer whose file is being abandoned (its disk may be full): without
    this, its __del__ retries the close at exit and prints a second, ignored traceback."""
    with suppress(Exception):
        writer.close()
    writer.is_open = False


class _ParquetSink:
    """A Parquet file fed from a bounded queue by a thread, so encoding overlaps parsing."""

    def __init__(self, path: Path, schema: pa.Schema, **options: Any) -> None:
        self.writer = pq.ParquetWriter(
            path, schema, compression="zstd", compression_level=1, **options
        )
        self.rows = 0
        self.queue: queue.Queue[pa.Table | None] = queue.Queue(maxsize=2)
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            table = self.queue.get()
            if table is None:
                return
            if self.error is None:
                try:
                    self.writer.write_table(table)
                except BaseException as exc:  # reported on close, in the caller's thread
                    self.error = exc

    def write(self, table: pa.Table) -> None:
        if table.num_rows:
            self.rows += table.num_rows
            self.queue.put(table)

    def close(self) -> None:
        self.queue.put(None)
        self.thread.join()
        self.writer.close()
        if self.error is not None:
            raise self.error


class DatasetWriter:
    """Build a dataset's next version in a hidden sibling folder; `commit` swaps it into place.

    One writer at a time (a lock beside the folder); leftovers of killed writers are cleaned
    first. With `keep=True` the new version starts from the current one's files (hard links, so
    nothing is copied): the way to add or replace some tables of an existing dataset.
    """

    def __init__(self, out: Path, keep: bool = False) -> None:
        self.out = out
        check_output_name(out, "dataset")
        check_utf8_path(out)
        self.lock = WriteLock(out).__enter__()
        try:
            clean_leftovers(out)
            if out.exists() and not is_dataset(out) and (not out.is_dir() or any(out.iterdir())):
                raise DatasetError(
                    str(out),
                    "exists and is not a blkscope dataset; refusing to replace it",
                    hint="choose another -o path or remove it first",
                )
            if keep and not is_dataset(out):
                raise DatasetError(
                    str(out),
                    "not a blkscope dataset (no manifest.json)",
                    hint="create one with 'blkscope ingest INPUT -o DATASET'",
                )
            self.tmp = temp_sibling(out)
            self.tmp.mkdir()
            if keep:
                _link_files(out, self.tmp)
        except OSError as exc:
            self._abandon()
            raise cannot_write(out, exc) from None
        except BaseException:  # Ctrl-C while linking the current files: no temp version left
            self._abandon()
            raise
        self.sinks: dict[str, _ParquetSink] = {}

    def _abandon(self) -> None:
        if hasattr(self, "tmp"):
            shutil.rmtree(self.tmp, ignore_errors=True)
        self.lock.__exit__()

    def __enter__(self) -> DatasetWriter:
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            if self.tmp.exists():
                for sink in self.sinks.values():
                    sink.queue.put(None)
                    sink.thread.join()
                    close_quietly(sink.writer)
                shutil.rmtree(self.tmp, ignore_errors=True)
        finally:
            self.lock.__exit__()
        if isinstance(ev, OSError) and ev.errno in WRITE_ERRNOS:
            # disk full or read-only while a table was written (by us, Arrow or DuckDB)
            raise cannot_write(self.out, ev) from None

    def table(self, name: str, schema: pa.Schema, **options: Any) -> _ParquetSink:
        """Return (opening on first use) the streaming sink of table `name`."""
        if name not in self.sinks:
            path = self.tmp / f"{name}.parquet"
            path.unlink(
                missing_ok=True
            )  # a hard link to the current version's file: never write it
            self.sinks[name] = _ParquetSink(path, schema, **options)
        return self.sinks[name]

    def put(self, name: str, table: pa.Table) -> dict[str, Any]:
        """Write one whole table into the new version; return its manifest entry."""
        write_parquet_atomic(table, self.tmp / f"{name}.parquet")
        return {"file": f"{name}.parquet", "rows": table.num_rows}

    def commit(self, manifest: dict[str, Any]) -> None:
        """Finish every table, write the manifest last, then swap the folder into place.

        The manifest's tables are those of the streaming sinks plus, for a `keep` writer, the
        entries the caller kept or added with `put`.
        """
        for sink in self.sinks.values():
            sink.close()
        tables = manifest.setdefault("tables", {})
        tables.update(
            {name: {"file": f"{name}.parquet", "rows": s.rows} for name, s in self.sinks.items()}
        )
        try:
            # replaced, not rewritten: in a `keep` version it is a hard link to the current one
            save_manifest(self.tmp, manifest)
            swap_in(self.tmp, self.out)
        except OSError as exc:
            raise cannot_write(self.out, exc) from None


def _link_files(src: Path, dst: Path) -> None:
    """Give dst the files of src as hard links (copies where the file system has none)."""
    for item in src.iterdir():
        if item.is_file() and not item.is_symlink():
            try:
                os.link(item, dst / item.name)
            except OSError:
                shutil.copy2(item, dst / item.name)


# Linux's NAME_MAX is 255 bytes; the temp name adds a dot and ".tmp-PID"
_TEMP_STEM_BYTES = 200


def temp_file(path: Path) -> Path:
    """A hidden temp name beside path for writing it atomically. A name near the 255-byte limit
    is shortened, or a report named so would fail on its temp name alone (seed-2 CLI run 2482)."""
    stem = os.fsencode(path.name)[:_TEMP_STEM_BYTES].decode("utf-8", "ignore")
    return path.with_name(f".{stem}.tmp-{os.getpid()}")


def _remove_quietly(tmp: Path) -> None:
    """Remove a temp file after a failed write; a failure here (read-only folder, a name the
    system refuses) must not replace the error being reported."""
    with contextlib.suppress(OSError):
        tmp.unlink(missing_ok=True)


def write_parquet_atomic(table: pa.Table, path: Path) -> None:
    """Write one Parquet file through a temp name, so readers never see half of it."""
    tmp = temp_file(path)
    try:
        # dictionary pages pay off for repeated strings only: on numbers they cost a fifth
        strings = [f.name for f in table.schema if pa.types.is_string(f.type)]
        pq.write_table(table, tmp, compression="zstd", use_dictionary=strings)
        os.replace(tmp, path)
    except OSError as exc:
        _remove_quietly(tmp)
        raise DatasetError(str(path), f"cannot write: {exc.strerror}") from None


EXAMPLE_OUTPUT = {"dataset": "trace.dataset", "report": "report.html"}


def check_output_name(path: Path, what: str) -> None:
    """A DatasetError for an output named '-': on a command line that means stdout, and a
    dataset or report is written to a path, not a stream."""
    if path.name == "-":
        raise DatasetError(
            str(path),
            f"'-' would be read as stdout, but the {what} is written to a path",
            hint=f"give the {what} a name, e.g. -o {EXAMPLE_OUTPUT[what]}",
        )


def check_utf8_path(path: Path) -> None:
    """A DatasetError when a dataset's path is not UTF-8: Arrow and DuckDB take paths as UTF-8
    text, so such a folder could be written by Python but never read back."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        raise DatasetError(
            str(path).encode("utf-8", "backslashreplace").decode("ascii", "replace"),
            "the dataset's path is not valid UTF-8 (Arrow and DuckDB cannot open it)",
            hint="choose a path whose name is UTF-8",
        ) from None


def write_text_atomic(path: Path, text: str) -> None:
    """Write a text file (manifest, report) through a temp name."""
    tmp = temp_file(path)
    try:
        # bytes of a name from another machine that are not UTF-8 (kept by Python as
        # surrogates) are written as \udcXX: the file stays valid UTF-8
        tmp.write_bytes(text.encode("utf-8", "backslashreplace"))
        os.replace(tmp, path)
    except OSError as exc:
        _remove_quietly(tmp)
        raise DatasetError(str(path), f"cannot write: {exc.strerror}") from None


def save_manifest(dataset: Path, manifest: dict[str, Any]) -> None:
    """Replace a dataset's manifest atomically."""
    write_text_atomic(dataset / MANIFEST, json.dumps(manifest, indent=2) + "\n")


def recover_quietly(path: Path) -> None:
    """Bring back a dataset a killed writer left only as `.NAME.old-*`, unless one is writing."""
    try:
        with WriteLock(path):
            recover(path)
    except DatasetError:
        pass


def is_dataset(path: Path) -> bool:
    """True when path is a folder holding a blkscope manifest."""
    return (path / MANIFEST).is_file()


def read_manifest(path: Path) -> dict[str, Any]:
    """Load a dataset's manifest, with a clear error when it is not a dataset.

    A dataset may come from a machine nobody here controls: its table names become SQL
    identifiers and its file names paths, so both are checked against what blkscope writes.
    """
    check_utf8_path(path)
    try:
        if not path.exists():
            recover_quietly(path)
        found = is_dataset(path)
    except OSError as exc:  # a name too long, a loop of links...
        raise DatasetError(str(path), f"cannot open: {exc.strerror}") from None
    if not found:
        raise DatasetError(
            str(path),
            "not a blkscope dataset (no manifest.json)",
            hint="create one with 'blkscope ingest INPUT -o DATASET'",
        )
    where = str(path / MANIFEST)
    try:
        with open(path / MANIFEST, "rb") as f:
            data = f.read(MAX_MANIFEST_BYTES + 1)
        if len(data) > MAX_MANIFEST_BYTES:
            raise ValueError(f"more than {MAX_MANIFEST_BYTES >> 20} MiB")
        manifest = json.loads(data)
    except (OSError, ValueError, RecursionError) as exc:
        raise DatasetError(where, f"cannot read the manifest: {exc}", hint=_REINGEST) from None
    if not isinstance(manifest, dict):
        raise DatasetError(where, "the manifest is not a JSON object", hint=_REINGEST)
    check_manifest_tables(where, manifest.setdefault("tables", {}))
    problem = mismatch(manifest, MANIFEST_SHAPE) or _span_problem(manifest)
    if problem:
        raise DatasetError(where, f"damaged manifest: {problem}", hint=_REINGEST)
    return manifest


_REINGEST = "the dataset is damaged or was not written by blkscope; ingest the capture again"
_SPAN = {"first_time_ns": OPT_INT, "last_time_ns": OPT_INT}
# What the analysis and the reports read from a manifest (other keys are only shown).
MANIFEST_SHAPE = {
    "inputs": [{"path": OPT_STR, "lines": OPT_INT}],
    "events": {"count": OPT_INT, "by_action": {str: int}, **_SPAN},
    "devices": [
        {
            "dev": Required(str),
            "major": Required(int),
            "minor": Required(int),
            "events": int,
            "by_action": {str: int},
            **_SPAN,
        }
    ],
    "ingest": {"error_lines": int, "error_lines_not_stored": int},
    "capture": CAPTURE_SHAPE,
}


def _span_problem(manifest: dict[str, Any]) -> str | None:
    """Device spans must be ordered and within the clock's range (the report bins them)."""
    for i, d in enumerate(manifest.get("devices", [])):
        first, last = d.get("first_time_ns"), d.get("last_time_ns")
        for value in (first, last):
            if value is not None and not -LIMIT < value < LIMIT:
                return f"devices[{i}] time {value} is out of range"
        if first is not None and last is not None and first > last:
            return f"devices[{i}] ends ({last}) before it starts ({first})"
    return None


def check_manifest_tables(where: str, tables: object) -> None:
    """Refuse table entries blkscope never writes: an unknown name, or a file that is not the
    table's own `<name>.parquet` inside the dataset folder."""
    if not isinstance(tables, dict):
        raise DatasetError(where, "'tables' is not a JSON object", hint=_REINGEST)
    for name, info in tables.items():
        if name not in TABLES:
            raise DatasetError(where, f"unknown table {name!r} in 'tables'", hint=_REINGEST)
        file = info.get("file") if isinstance(info, dict) else None
        if file != f"{name}.parquet":
            raise DatasetError(
                where,
                f"table {name!r} names file {file!r}, not {name + '.parquet'!r}",
                hint=_REINGEST,
            )


def check_table_file(path: Path, name: str) -> None:
    """Refuse a table file that is missing, is not Parquet (or is cut short), or lacks the
    table's declared columns: DuckDB would fail on it in the middle of an analysis."""
    where = str(path)
    if not path.is_file():  # missing, or a FIFO that would block the reader
        raise DatasetError(where, "is missing: the dataset is incomplete", hint=_REINGEST)
    try:
        found = pq.read_schema(path)
    except (OSError, pa.ArrowException) as exc:
        raise DatasetError(
            where, f"is not a readable Parquet file ({exc})", hint=_REINGEST
        ) from None
    have = {f.name: f.type for f in found}
    for f in TABLES[name]:
        if have.get(f.name) != f.type:
            raise DatasetError(
                where,
                f"column {f.name} is {have.get(f.name) or 'missing'}, expected {f.type}",
                hint=_REINGEST,
            )


def add_table(dataset: Path, name: str, table: pa.Table) -> None:
    """Write (or replace) one table of an existing dataset, then record it in the manifest."""
    with DatasetWriter(dataset, keep=True) as update:
        manifest = read_manifest(dataset)
        manifest["tables"][name] = update.put(name, table)
        update.commit(manifest)
