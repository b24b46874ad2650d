"""FS_IOC_FIEMAP from Python (what `filefrag -v` uses): a file's physical extents, no new
dependency, and no FIEMAP_FLAG_SYNC: mapping must not write back the box's dirty pages."""

from __future__ import annotations

import fcntl
import os
import struct
from dataclasses import dataclass

FS_IOC_FIEMAP = 0xC020660B  # _IOWR('f', 11, struct fiemap): a 32-byte header
_HEADER = struct.Struct("=QQIIII")  # fm_start, fm_length, fm_flags, mapped, count, reserved
_EXTENT = struct.Struct("=QQQQQIIII")  # logical, physical, length, 2 reserved, flags, 3 reserved
EXTENTS_PER_CALL = 512
# fe_flags, named as filefrag -v prints them
FLAG_NAMES = {
    0x1: "last",
    0x2: "unknown_loc",
    0x4: "delalloc",
    0x8: "encoded",
    0x80: "encrypted",
    0x100: "not_aligned",
    0x200: "inline",
    0x400: "tail_packed",
    0x800: "unwritten",
    0x1000: "merged",
    0x2000: "shared",
}
# Extents whose physical place is not known yet (delayed allocation) or not a block of its own.
NO_PLACE = 0x2 | 0x4 | 0x200 | 0x400


@dataclass(frozen=True)
class Extent:
    """One FIEMAP extent in bytes: file offset, offset on the filesystem's device, length."""

    logical: int
    physical: int
    length: int
    flags: int

    @property
    def flag_names(self) -> str:
        return ",".join(name for bit, name in FLAG_NAMES.items() if self.flags & bit)

    @property
    def placed(self) -> bool:
        """The extent has a physical place on the device (not delalloc, inline or unknown)."""
        return not self.flags & NO_PLACE


def fiemap_fd(fd: int) -> list[Extent]:
    """Every extent of the open file, EXTENTS_PER_CALL at a time."""
    out: list[Extent] = []
    start = 0
    while True:
        buf = bytearray(_HEADER.size + EXTENTS_PER_CALL * _EXTENT.size)
        _HEADER.pack_into(buf, 0, start, (1 << 64) - 1 - start, 0, 0, EXTENTS_PER_CALL, 0)
        fcntl.ioctl(fd, FS_IOC_FIEMAP, buf, True)
        mapped = _HEADER.unpack_from(buf, 0)[3]
        if mapped == 0:
            return out
        for i in range(mapped):
            logical, physical, length, _, _, flags, *_ = _EXTENT.unpack_from(
                buf, _HEADER.size + i * _EXTENT.size
            )
            out.append(Extent(logical, physical, length, flags))
        last = out[-1]
        if last.flags & 0x1 or last.length == 0:
            return out
        start = last.logical + last.length


def fiemap_path(path: str | bytes) -> tuple[os.stat_result, list[Extent]]:
    """stat and extents of a file or directory, opened without following a final symlink."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        return os.fstat(fd), fiemap_fd(fd)
    finally:
        os.close(fd)
