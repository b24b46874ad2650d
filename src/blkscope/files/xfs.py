"""What no file lists on XFS, read with xfs_db -r (read-only on a mounted filesystem): the
internal log and each allocation group's header sectors (superblock, AGF, AGI, AGFL)."""

from __future__ import annotations

import re
from typing import Any

from blkscope.files.ext4 import run_tool
from blkscope.files.rows import extent_row

_FIELDS = ("logstart", "logblocks", "blocksize", "agblocks", "agcount", "agblklog", "sectsize")
_VALUE = re.compile(r"(\w+) = (\d+)")


def layout_rows(
    device: str, disk: tuple[int, int], fs_device: str, start: int
) -> tuple[int, list[dict[str, Any]]]:
    """(block size, rows for the log and the AG headers) of an XFS device; (0, []) if not XFS."""
    text = run_tool(["xfs_db", "-r", "-c", "sb 0", "-c", "p " + " ".join(_FIELDS), device])
    sb = {m[1]: int(m[2]) for m in _VALUE.finditer(text or "")}
    if set(_FIELDS) - sb.keys():
        return 0, []
    size = sb["blocksize"]
    rows = []
    for ag in range(sb["agcount"]):
        rows.append(
            extent_row(disk, fs_device, start, inode=None,
                       path=f"<{fs_device}: AG headers, group {ag}>", kind="metadata",
                       file_offset=None, fs_byte=ag * sb["agblocks"] * size,
                       nbytes=4 * sb["sectsize"], flags="", source="xfs_db")
        )  # fmt: skip
    if sb["logstart"]:  # 0: an external log, on another device
        ag, block = sb["logstart"] >> sb["agblklog"], sb["logstart"] & ((1 << sb["agblklog"]) - 1)
        rows.append(
            extent_row(disk, fs_device, start, inode=None, path=f"<{fs_device}: log>",
                       kind="log", file_offset=None,
                       fs_byte=(ag * sb["agblocks"] + block) * size,
                       nbytes=sb["logblocks"] * size, flags="", source="xfs_db")
        )  # fmt: skip
    return size, rows
