"""Side-log tables too big for the heap: spilled batch by batch into an Arrow IPC file in the
dataset's temporary folder while they are parsed, then read back memory-mapped.

Ingest holds every parsed side log until the trace's clock is known (the alignment needs the
block events first): on the heap, a big writeback log costs its table and copies of it, several
times the log's size. Spilled, the heap holds one batch; the file's pages are mapped, read where the
alignment looks (a few columns), and dropped again after each batch is written out
(`drop_pages`), so peak RSS no longer grows with the log.

Spilling happens only inside `spooling(folder)` (the folder ingest does it): a parser called
alone keeps its table on the heap, as before.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import tempfile
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

# Batches a table keeps on the heap before it spills (TableRows makes a batch every 65,536 rows).
SPOOL_AFTER_BATCHES = 4


@dataclass
class _Spooling:
    folder: Path
    # (first address, end address, mapping) of every spilled table read back
    maps: list[tuple[int, int, mmap.mmap]] = field(default_factory=list)


_ACTIVE: ContextVar[_Spooling | None] = ContextVar("blkscope_spooling", default=None)


@contextlib.contextmanager
def spooling(folder: Path) -> Iterator[None]:
    """Within this block, big side-log tables spill into files under `folder` (created, and
    removed at the end: a spilled file is unlinked as soon as it is mapped)."""
    folder.mkdir(exist_ok=True)
    token = _ACTIVE.set(_Spooling(folder))
    try:
        yield
    finally:
        _ACTIVE.reset(token)
        with contextlib.suppress(OSError):
            folder.rmdir()


def active() -> bool:
    """Whether big tables spill here."""
    return _ACTIVE.get() is not None


class Spool:
    """The batches of one table, written to an Arrow IPC file as they come."""

    def __init__(self, schema: pa.Schema) -> None:
        spooling = _ACTIVE.get()
        assert spooling is not None, "Spool outside spooling()"
        self._spooling = spooling
        fd, self.path = tempfile.mkstemp(dir=spooling.folder, suffix=".arrow")
        os.close(fd)
        self._file = pa.OSFile(self.path, "wb")
        self._writer = pa.ipc.new_file(self._file, schema)

    def write(self, table: pa.Table) -> None:
        self._writer.write_table(table)

    def table(self) -> pa.Table:
        """The whole table, zero-copy over a read-only mapping of the file (unlinked now: its
        space is freed with the mapping)."""
        self._writer.close()
        self._file.close()
        with open(self.path, "rb") as f:
            mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        os.unlink(self.path)
        buffer = pa.py_buffer(mapped)
        self._spooling.maps.append((buffer.address, buffer.address + buffer.size, mapped))
        return pa.ipc.open_file(buffer).read_all()


def drop_pages(table: pa.Table) -> None:
    """Let go of the mapped pages of a spilled table read so far (they come back from the file
    if read again); a no-op for a table on the heap."""
    spooling = _ACTIVE.get()
    if spooling is None or not table.num_columns or not table.num_rows:
        return
    addresses = {
        b.address
        for column in table.columns
        for b in column.chunks[0].buffers()[:2]
        if column.num_chunks and b is not None
    }
    for low, high, mapped in spooling.maps:
        if any(low <= a < high for a in addresses):
            mapped.madvise(mmap.MADV_DONTNEED)
