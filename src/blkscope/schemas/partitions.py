"""The `partitions` table: where each partition sits on its disk, from a partition listing."""

from __future__ import annotations

import pyarrow as pa

from blkscope.schemas._declare import field, schema

PARTITIONS = schema(
    "partitions",
    "Partitions of the traced disks, to map trace sectors to partitions.",
    [
        field("name", pa.string(), "Partition name, e.g. sda2 or loop0p1.", nullable=False),
        field("disk", pa.string(), "Name of the whole disk it is on, e.g. sda.", nullable=False),
        field(
            "disk_major",
            pa.int32(),
            "Major of the whole disk (the traced device); null when unknown.",
        ),
        field("disk_minor", pa.int32(), "Minor of the whole disk; null when unknown."),
        field("dev_major", pa.int32(), "Major of the partition device itself, when listed."),
        field("dev_minor", pa.int32(), "Minor of the partition device itself, when listed."),
        field(
            "start_sector",
            pa.int64(),
            "First sector on the disk, in 512-byte sectors.",
            nullable=False,
        ),
        field("sectors", pa.int64(), "Length in 512-byte sectors.", nullable=False),
        field(
            "source",
            pa.string(),
            "Where the placement came from: fdisk, lsblk, or remap events (A).",
            nullable=False,
        ),
    ],
)
