"""One file_extents row, built the same way by the capture's FIEMAP walk, the ext4 layout and
the hand-made maps: byte offsets on the filesystem's device become sectors of the disk."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from blkscope.schemas.file_extents import FILE_EXTENTS

SECTOR = 512


def extent_row(
    disk: tuple[int, int],
    fs_device: str | None,
    partition_start: int,
    *,
    inode: int | None,
    path: str,
    kind: str,
    file_offset: int | None,
    fs_byte: int,
    nbytes: int,
    flags: str,
    source: str,
) -> dict[str, Any]:
    """A row for `nbytes` at byte `fs_byte` of the filesystem (a partial last sector counts)."""
    first = fs_byte // SECTOR
    return {
        "dev_major": disk[0],
        "dev_minor": disk[1],
        "fs_device": fs_device,
        "partition_start": partition_start,
        "inode": inode,
        "path": path,
        "kind": kind,
        "file_offset": file_offset,
        "sector": partition_start + first,
        "sectors": -(-(fs_byte + nbytes) // SECTOR) - first,
        "flags": flags,
        "source": source,
    }


def extents_table(rows: list[dict[str, Any]]) -> pa.Table:
    """The file_extents table of these rows, ordered by disk and sector."""
    table = pa.Table.from_pylist(rows, schema=FILE_EXTENTS)
    return table.sort_by(
        [("dev_major", "ascending"), ("dev_minor", "ascending"), ("sector", "ascending")]
    )
