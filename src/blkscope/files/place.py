"""Where a filesystem's device sits: its disk and partition start, from /sys (the partition
table as the kernel read it), so filesystem offsets become sectors of the traced disk."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

SYS_DEV_BLOCK = Path("/sys/dev/block")


@dataclass(frozen=True)
class Placement:
    """A filesystem device (a disk or a partition) and where it starts on its whole disk."""

    fs_device: str
    disk: str
    disk_major: int
    disk_minor: int
    partition_start: int  # 512-byte sectors; 0 for a whole disk


def placement_of(st_dev: int, sys_dev_block: Path = SYS_DEV_BLOCK) -> Placement | None:
    """The device of st_dev and its disk, or None when it is no block device (tmpfs, nfs...)."""
    node = sys_dev_block / f"{os.major(st_dev)}:{os.minor(st_dev)}"
    try:
        real = node.resolve(strict=True)
    except OSError:
        return None
    if (real / "partition").exists():
        disk = real.parent
        major, minor = (disk / "dev").read_text().strip().split(":")
        start = int((real / "start").read_text())
        return Placement(real.name, disk.name, int(major), int(minor), start)
    return Placement(real.name, real.name, os.major(st_dev), os.minor(st_dev), 0)
