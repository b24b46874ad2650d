"""Write a dataset folder atomically: everything goes to a temp folder that is renamed at the end."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import queue
import shutil
import threading
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

from blkscope.errors import BlkscopeError, DatasetError
from blkscope.store.folder_swap import (
    WRITE_HINT,
    WriteLock,
    clean_leftovers,
    swap_in,
    temp_sibling,
)
from blkscope.store.manifest import (
    MANIFEST,
    MANIFEST_VERSION,
    Manifest,
    check_utf8_path,
    is_dataset,
    read_manifest,
)

# pyarrow is imported where a table is written: output names are checked, and missing inputs
# refused, before it loads
if TYPE_CHECKING:
    import pyarrow as pa

# Errors of the file system written to, not of an input read: disk full, quota, read-only, too
# big a file, not allowed, a failing disk.
WRITE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG, errno.EACCES, errno.EPERM,
                errno.EIO}  # fmt: skip


def cannot_write(out: Path, exc: OSError) -> DatasetError:
    """The one message for a dataset the file system would not take."""
    reason = os.strerror(exc.errno) if exc.errno else str(exc)
    return DatasetError(str(out), f"cannot write: {reason}", hint=WRITE_HINT)


class TableWriter(Protocol):
    """What a sink writes with: pyarrow's ParquetWriter, or another file of the same face."""

    is_open: bool

    def write_table(self, table: pa.Table) -> None: ...

    def close(self) -> None: ...


OpenWriter = Callable[[Path, "pa.Schema"], TableWriter]


def close_quietly(writer: TableWriter) -> None:
    """Close a Parquet writer whose file is being abandoned (its disk may be full): without
    this, its __del__ retries the close at exit and prints a second, ignored traceback."""
    with suppress(Exception):
        writer.close()
    writer.is_open = False


class _ParquetSink:
    """A Parquet file fed from a bounded queue by a thread, so encoding overlaps parsing."""

    def __init__(
        self, path: Path, schema: pa.Schema, open_writer: OpenWriter | None = None, **options: Any
    ) -> None:
        import pyarrow.parquet as pq

        codec = {} if "compression" in options else {"compression": "zstd", "compression_level": 1}
        self.writer: TableWriter
        if open_writer is None:
            self.writer = pq.ParquetWriter(path, schema, **codec, **options)
        else:
            self.writer = open_writer(path, schema)
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
        if isinstance(ev, BlkscopeError) and str(self.tmp) in str(ev):
            # the user knows the dataset, not the hidden folder its next version was built in
            raise ev.relocated(str(self.tmp), str(self.out)) from None

    def table(
        self, name: str, schema: pa.Schema, open_writer: OpenWriter | None = None, **options: Any
    ) -> _ParquetSink:
        """Return (opening on first use) the streaming sink of table `name`: pyarrow's Parquet
        writer with `options`, or the file `open_writer(path, schema)` makes."""
        if name not in self.sinks:
            path = self.tmp / f"{name}.parquet"
            path.unlink(
                missing_ok=True
            )  # a hard link to the current version's file: never write it
            self.sinks[name] = _ParquetSink(path, schema, open_writer, **options)
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
    import pyarrow as pa
    import pyarrow.parquet as pq

    tmp = temp_file(path)
    try:
        # dictionary pages pay off for repeated strings only: on numbers they cost a fifth
        strings = [f.name for f in table.schema if pa.types.is_string(f.type)]
        pq.write_table(table, tmp, compression="zstd", use_dictionary=strings)
        os.replace(tmp, path)
    except OSError as exc:
        _remove_quietly(tmp)
        raise DatasetError(str(path), f"cannot write: {exc.strerror}") from None


EXAMPLE_OUTPUT = {"dataset": "trace.dataset", "report": "report.html", "trace": "run.pftrace"}


def check_output_name(path: Path, what: str, option: str = "-o") -> None:
    """A DatasetError for an output named '-': on a command line that means stdout, and a
    dataset or report is written to a path, not a stream."""
    if path.name == "-":
        raise DatasetError(
            str(path),
            f"'-' would be read as stdout, but the {what} is written to a path",
            hint=f"give the {what} a name, e.g. {option} {EXAMPLE_OUTPUT[what]}",
        )


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
    """Replace a dataset's manifest atomically (stamped with the layout version it follows)."""
    manifest["version"] = MANIFEST_VERSION
    write_text_atomic(dataset / MANIFEST, json.dumps(manifest, indent=2) + "\n")


def add_table(dataset: Path, name: str, table: pa.Table) -> Manifest:
    """Write (or replace) one table of an existing dataset, record it in the manifest, and
    return the new manifest."""
    with DatasetWriter(dataset, keep=True) as update:
        manifest = read_manifest(dataset).editable()
        manifest["tables"][name] = update.put(name, table)
        update.commit(manifest)
    return Manifest.from_doc(manifest)
