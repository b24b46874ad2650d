"""Record a file map at capture time: FIEMAP over the files under --files (or, without it, the
files owning the sectors the trace touched), the ext4 journal and metadata, and debugfs for
blocks no mapped file holds. The work is bounded (files, seconds, blocks) and the report says
how long it took and what was left out. Nothing here writes to the traced filesystems."""

from __future__ import annotations

import os
import re
import stat
import time
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from blkscope.files import ext4, xfs
from blkscope.files.fiemap import fiemap_path
from blkscope.files.handmade import HandMap, hand_rows
from blkscope.files.place import Placement, placement_of
from blkscope.files.rows import SECTOR, extent_row

Disk = tuple[int, int]
Touched = list[tuple[int, int, int, int]]  # dev major, minor, sector, sectors


@dataclass
class MapBudget:
    """How much mapping a capture may do: files opened, seconds spent, blocks asked of debugfs."""

    max_files: int = 100_000
    max_seconds: float = 60.0
    max_blocks: int = 20_000


@dataclass
class _Walk:
    traced: dict[Disk, str]
    budget: MapBudget
    started: float = field(default_factory=time.monotonic)
    rows: list[dict[str, Any]] = field(default_factory=list)
    files: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)
    left_out: list[str] = field(default_factory=list)
    unplaced_bytes: int = 0
    filesystems: dict[str, Placement] = field(default_factory=dict)
    placements: dict[int, Placement | None] = field(default_factory=dict)

    def skip(self, reason: str, path: str) -> None:
        self.skipped[reason] += 1
        seen = self.examples.setdefault(reason, [])
        if len(seen) < 5:
            seen.append(path)

    def over_budget(self) -> str | None:
        if self.files >= self.budget.max_files:
            return f"file budget ({self.budget.max_files} files) reached"
        if time.monotonic() - self.started >= self.budget.max_seconds:
            return f"time budget ({self.budget.max_seconds:g} s) reached"
        return None

    def map_one(self, path: str, as_path: str | None = None) -> None:
        """FIEMAP one file or directory into rows (or count why not)."""
        self.files += 1
        try:
            st, extents = fiemap_path(path)
        except FileNotFoundError:
            self.skip("deleted before it could be mapped", path)
            return
        except OSError as exc:
            self.skip(f"cannot map: {exc.strerror}", path)
            return
        if stat.S_ISDIR(st.st_mode):
            kind = "directory"
        elif stat.S_ISREG(st.st_mode):
            kind = "data"
        else:
            self.skip("not a regular file or directory", path)
            return
        if st.st_dev not in self.placements:
            self.placements[st.st_dev] = placement_of(st.st_dev)
        place = self.placements[st.st_dev]
        disk = (place.disk_major, place.disk_minor) if place else None
        if place is None or disk not in self.traced:
            self.skip("on a device the capture does not trace", path)
            return
        self.filesystems.setdefault(place.fs_device, place)
        for e in extents:
            if not e.placed:
                self.unplaced_bytes += e.length  # delalloc: not on disk yet, so not in the trace
                continue
            self.rows.append(
                extent_row(
                    disk,
                    place.fs_device,
                    place.partition_start,
                    inode=st.st_ino,
                    path=as_path or path,
                    kind=kind,
                    file_offset=e.logical,
                    fs_byte=e.physical,
                    nbytes=e.length,
                    flags=e.flag_names,
                    source="fiemap",
                )
            )


def _entries(root: str) -> Iterator[str]:
    """root and every file and folder under it, not following symlinks (a folder once)."""
    stack = [root]
    yield root
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as it:
                for entry in it:
                    yield entry.path
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
        except OSError:
            continue


def map_paths(
    paths: list[str], traced: dict[Disk, str], budget: MapBudget, touched: Touched | None
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """file_extents rows and a report (seconds, counts, what was left out and why)."""
    walk = _Walk(traced, budget)
    for root in paths:
        for path in _entries(os.path.abspath(root)):
            why = walk.over_budget()
            if why:
                walk.left_out.append(f"{why}: stopped walking in {root}")
                break
            if not os.path.islink(path):
                walk.map_one(path)
    if not paths:
        for mounted, _ in mounted_on(traced):
            walk.filesystems.setdefault(mounted.fs_device, mounted)
    block_sizes = {}
    for name, place in walk.filesystems.items():
        disk = (place.disk_major, place.disk_minor)
        size, rows = ext4.layout_rows(f"/dev/{name}", disk, name, place.partition_start)
        if size:
            block_sizes[name] = size  # debugfs can name the owners of touched blocks
        else:
            size, rows = xfs.layout_rows(f"/dev/{name}", disk, name, place.partition_start)
        walk.rows += rows
    if touched:
        _owners_of_touched(walk, touched, block_sizes, dict(mounted_on(traced)))
    report = {
        "seconds": round(time.monotonic() - walk.started, 3),
        "paths": paths,
        "files_mapped": walk.files - sum(walk.skipped.values()),
        "extents": len(walk.rows),
        "filesystems": sorted(walk.filesystems),
        "skipped": dict(walk.skipped),
        "skipped_examples": walk.examples,
        "left_out": walk.left_out,
        "not_yet_on_disk_bytes": walk.unplaced_bytes,
        "budget": vars(budget),
    }
    return walk.rows, report


def mounted_on(traced: dict[Disk, str]) -> list[tuple[Placement, str]]:
    """(placement, mount point) of the filesystems mounted from the traced disks."""
    found = []
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return []
    seen = set()
    for line in lines:
        fields = line.split()
        major, minor = (int(x) for x in fields[2].split(":"))
        place = placement_of(os.makedev(major, minor))
        if place is None or (place.disk_major, place.disk_minor) not in traced:
            continue
        if fields[3] == "/" and place.fs_device not in seen:  # the filesystem's own root
            seen.add(place.fs_device)
            found.append((place, fields[4].encode().decode("unicode_escape")))
    return found


class _Coverage:
    """Which disk sectors the rows found so far cover (rebuilt after each debugfs round)."""

    def __init__(self, rows: list[dict[str, Any]], disk: Disk) -> None:
        spans = sorted(
            (r["sector"], r["sector"] + r["sectors"])
            for r in rows
            if (r["dev_major"], r["dev_minor"]) == disk
        )
        self.starts = [a for a, _ in spans]
        self.reach: list[int] = []  # furthest end among the spans up to each one
        for _, end in spans:
            self.reach.append(max(end, self.reach[-1] if self.reach else end))

    def __contains__(self, sector: int) -> bool:
        i = bisect_right(self.starts, sector) - 1
        return i >= 0 and sector < self.reach[i]


ROUND = 500  # touched sectors asked of debugfs per round


def _owners_of_touched(
    walk: _Walk, touched: Touched, block_sizes: dict[str, int], mounts: dict[Placement, str]
) -> None:
    """Ask debugfs who owns the touched sectors no row covers yet, in rounds: the first and
    last sector of each touched range; a file debugfs names is mapped whole by FIEMAP, which
    usually covers many other touched ranges, so few rounds are needed."""
    for name, size in block_sizes.items():
        place = walk.filesystems[name]
        disk = (place.disk_major, place.disk_minor)
        start, mount = place.partition_start, mounts.get(place)
        points = sorted({p for major, minor, sector, sectors in touched
                         if (major, minor) == disk and sector >= start
                         for p in (sector, sector + max(sectors, 1) - 1)})  # fmt: skip
        asked = 0
        while points and not walk.over_budget():
            covered = _Coverage(walk.rows, disk)
            points = [p for p in points if p not in covered]
            if not points or asked >= walk.budget.max_blocks:
                break
            batch, points = points[:ROUND], points[ROUND:]
            blocks = sorted({(p - start) * SECTOR // size for p in batch})
            asked += len(blocks)
            hand = ext4.owners(f"/dev/{name}", blocks)
            _map_owned(walk, hand, place, mount, size)
        if points:
            walk.left_out.append(
                f"{len(points)} touched sectors on {name} not looked up (block budget "
                f"{walk.budget.max_blocks} or time budget reached)"
            )


def _map_owned(walk: _Walk, hand: HandMap, place: Placement, mount: str | None, size: int) -> None:
    """FIEMAP the files debugfs named (under their mount point); rows from icheck for the rest."""
    owned = dict(hand.owners)
    for inode, name in hand.names.items():
        full = None if mount is None else os.path.join(mount, name.lstrip("/"))
        if full is not None and not os.path.islink(full) and not walk.over_budget():
            walk.map_one(full)
            owned = {b: i for b, i in owned.items() if i != inode}
    hand.owners = owned
    disk = (place.disk_major, place.disk_minor)
    for row in hand_rows(hand, disk, place.partition_start, size):
        row["fs_device"] = place.fs_device
        if mount is not None and row["path"].startswith("/"):  # ncheck's paths: from the root
            row["path"] = mount if row["path"] == "/" else mount.rstrip("/") + row["path"]
        walk.rows.append(row)


_Q_LINE = re.compile(rb"\s*(\d+),(\d+)\s+\d+\s+\d+\s+\d+\.\d+\s+\d+\s+Q\s+[A-Z]+\s+(\d+) \+ (\d+)")


def touched_in_blkparse(path: Path, limit: int) -> Touched:
    """(device, sector, sectors) of the Q events in a blkparse text, at most `limit` distinct."""
    found: set[tuple[int, int, int, int]] = set()
    try:
        with open(path, "rb") as text:
            for line in text:
                m = _Q_LINE.match(line)
                if m:
                    found.add((int(m[1]), int(m[2]), int(m[3]), int(m[4])))
                    if len(found) >= limit:
                        break
    except OSError:
        return []
    return sorted(found)


def record_file_map(
    out: Path, paths: list[str], traced: dict[Disk, str], budget: MapBudget, blkparse: Path | None
) -> dict[str, Any]:
    """Map the files, write out/file_extents.parquet (atomically) and return the report."""
    from blkscope.files.rows import extents_table
    from blkscope.store.writer import write_parquet_atomic

    touched = touched_in_blkparse(blkparse, budget.max_blocks) if blkparse else None
    rows, report = map_paths(paths, traced, budget, touched)
    report["touched_ranges"] = len(touched or [])
    write_parquet_atomic(extents_table(rows), out / "file_extents.parquet")
    return report
