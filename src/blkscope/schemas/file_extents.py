"""The `file_extents` table: which file (or filesystem structure) owns each run of sectors."""

from __future__ import annotations

import pyarrow as pa

from blkscope.schemas._declare import field, schema

FILE_EXTENTS = schema(
    "file_extents",
    "File map of the traced devices: one row per physical extent of a file, directory, journal "
    "or metadata area, placed on the traced (whole) disk so bio sectors can be joined to it.",
    [
        field(
            "dev_major",
            pa.int32(),
            "Major of the traced whole disk the extent lies on (the trace's device).",
            nullable=False,
        ),
        field("dev_minor", pa.int32(), "Minor of the traced whole disk.", nullable=False),
        field(
            "fs_device",
            pa.string(),
            "Name of the device holding the filesystem, e.g. sda2 or loop0p1 (untrusted text).",
        ),
        field(
            "partition_start",
            pa.int64(),
            "First sector of that device on the disk (0 for a whole-disk filesystem), in 512-byte "
            "sectors; added to the filesystem's own sector numbers to give `sector`.",
            nullable=False,
        ),
        field("inode", pa.int64(), "Inode number; null for areas no inode owns (bitmaps...)."),
        field(
            "path",
            pa.string(),
            "Path of the file as the map named it (untrusted: may hold newlines or markup); for "
            "structures a label such as <journal> or <inode table, group 3>.",
            nullable=False,
        ),
        field(
            "kind",
            pa.string(),
            "data (a regular file's contents), directory, journal (ext4 jbd2), log (XFS log) or "
            "metadata (inode tables, bitmaps, extent blocks, superblocks).",
            nullable=False,
        ),
        field(
            "file_offset",
            pa.int64(),
            "Byte offset in the file of the extent's first byte; null for structures.",
        ),
        field(
            "sector",
            pa.int64(),
            "First 512-byte sector of the extent on the traced disk (partition_start included).",
            nullable=False,
        ),
        field("sectors", pa.int64(), "Length in 512-byte sectors.", nullable=False),
        field(
            "flags",
            pa.string(),
            "FIEMAP extent flags as filefrag prints them (comma-separated: last, unwritten, "
            "shared, encoded, ...); '' when none.",
            nullable=False,
        ),
        field(
            "source",
            pa.string(),
            "Where the row comes from: fiemap (blkscope capture), filefrag, debugfs, or "
            "ext4-layout (group descriptors read by debugfs stats).",
            nullable=False,
        ),
    ],
)
