"""What no file lists on ext4, read with e2fsprogs (read-only on a mounted filesystem): the
jbd2 journal's extents, the group metadata (superblocks, descriptors, bitmaps, inode tables),
and the owners of blocks no mapped file holds (debugfs icheck, then ncheck for their paths)."""

from __future__ import annotations

import re
import shutil
import subprocess
from typing import Any

from blkscope.files.handmade import HandMap, read_debugfs
from blkscope.files.rows import extent_row

_GROUP = re.compile(r"Group (\d+): \(Blocks")
_AREA = re.compile(
    r"(Primary superblock|Backup superblock|Group descriptors|Reserved GDT blocks|Block bitmap|"
    r"Inode bitmap|Inode table) at (\d+)(?:-(\d+))?"
)
_JOURNAL_INODE = re.compile(r"Journal inode:\s+(\d+)")
_EXTENT = re.compile(r"\((\d+)(?:-(\d+))?\):(\d+)(?:-(\d+))?")
_ETB = re.compile(r"\(ETB\d+\):(\d+)")
TIMEOUT_S = 120.0


def run_tool(argv: list[str], stdin: str | None = None) -> str | None:
    """A read-only e2fsprogs/xfsprogs tool's output, or None when it is missing or fails."""
    if shutil.which(argv[0]) is None:
        return None
    try:
        done = subprocess.run(
            argv, input=stdin, capture_output=True, text=True, errors="replace",
            timeout=TIMEOUT_S, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def layout_rows(
    device: str, disk: tuple[int, int], fs_device: str, start: int
) -> tuple[int, list[dict[str, Any]]]:
    """(block size, rows for the journal and every group's metadata) of an ext4 device."""
    text = run_tool(["dumpe2fs", device])
    if text is None:
        return 0, []
    size_m = re.search(r"Block size:\s+(\d+)", text)
    size = int(size_m[1]) if size_m else 4096
    rows = []
    group = 0
    for line in text.splitlines():
        if m := _GROUP.match(line):
            group = int(m[1])
        for m in _AREA.finditer(line):
            first, last = int(m[2]), int(m[3] or m[2])
            rows.append(
                extent_row(
                    disk,
                    fs_device,
                    start,
                    inode=None,
                    path=f"<{fs_device}: {m[1].lower()}, group {group}>",
                    kind="metadata",
                    file_offset=None,
                    fs_byte=first * size,
                    nbytes=(last - first + 1) * size,
                    flags="",
                    source="ext4-layout",
                )
            )
    journal = _JOURNAL_INODE.search(text)
    if journal:
        rows += _inode_rows(
            device,
            int(journal[1]),
            f"<{fs_device}: journal>",
            "journal",
            disk,
            fs_device,
            start,
            size,
        )
    return size, rows


def _inode_rows(
    device: str,
    inode: int,
    path: str,
    kind: str,
    disk: tuple[int, int],
    fs_device: str,
    start: int,
    size: int,
) -> list[dict[str, Any]]:
    """Extents of one inode from `debugfs -R "stat <N>"` (its extent tree blocks: metadata)."""
    text = run_tool(["debugfs", "-R", f"stat <{inode}>", device]) or ""
    body = text.partition("EXTENTS:")[2]
    rows = []
    for m in _ETB.finditer(body):
        rows.append(
            extent_row(
                disk,
                fs_device,
                start,
                inode=inode,
                path=path,
                kind="metadata",
                file_offset=None,
                fs_byte=int(m[1]) * size,
                nbytes=size,
                flags="",
                source="debugfs",
            )
        )
    for m in _EXTENT.finditer(body):
        first, phys = int(m[1]), int(m[3])
        count = int(m[2] or m[1]) - first + 1
        rows.append(
            extent_row(
                disk,
                fs_device,
                start,
                inode=inode,
                path=path,
                kind=kind,
                file_offset=first * size,
                fs_byte=phys * size,
                nbytes=count * size,
                flags="",
                source="debugfs",
            )
        )
    return rows


# Numbers per debugfs request line: one argument may not pass 128 KiB (MAX_ARG_STRLEN), so the
# requests go through stdin (debugfs -f -), a thousand numbers a line.
PER_REQUEST = 1000


def _requests(command: str, numbers: list[int]) -> str:
    return "".join(
        f"{command} {' '.join(map(str, numbers[i : i + PER_REQUEST]))}\n"
        for i in range(0, len(numbers), PER_REQUEST)
    )


def owners(device: str, blocks: list[int]) -> HandMap:
    """Inodes owning `blocks` (icheck) and their paths (ncheck), as a HandMap."""
    hand = HandMap()
    if not blocks:
        return hand
    text = run_tool(["debugfs", "-f", "-", device], _requests("icheck", blocks)) or ""
    read_debugfs(f"debugfs icheck on {device}", _no_prompts(text), hand, strict=False)
    inodes = sorted(set(hand.owners.values()))
    if inodes:
        text = run_tool(["debugfs", "-f", "-", device], _requests("ncheck", inodes)) or ""
        read_debugfs(f"debugfs ncheck on {device}", _no_prompts(text), hand, strict=False)
    return hand


def _no_prompts(text: str) -> str:
    """debugfs -f echoes each request as `debugfs: REQUEST`: drop those lines."""
    return "\n".join(line for line in text.splitlines() if not line.startswith("debugfs: "))
