"""Read partition listings (/proc/partitions, fdisk -l, lsblk --json) and place partitions on
their disks, so trace sectors can be told apart by partition."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from blkscope.errors import InputFormatError, ParseError
from blkscope.ingest.logs.textlog import LIMIT, numbered_lines, read_text, to_int
from blkscope.schemas.partitions import PARTITIONS


@dataclass
class Partition:
    """One partition and where it starts on its disk (512-byte sectors)."""

    name: str
    disk: str
    disk_major: int | None
    disk_minor: int | None
    dev_major: int | None
    dev_minor: int | None
    start_sector: int
    sectors: int
    source: str


@dataclass
class BlockDevice:
    """A /proc/partitions row."""

    major: int
    minor: int
    blocks_1k: int
    name: str


# Listings are read whole (lsblk's is one JSON document): 10,000 devices take under 2 MiB.
MAX_LISTING_BYTES = 16 << 20
_PROC_ROW = re.compile(r"\s*(\d+)\s+(\d+)\s+(\d+)\s+(\S+)\s*")
_FDISK_DISK = re.compile(r"Disk (/dev/)?(\S+): .*?, (\d+) sectors")
_FDISK_UNITS = re.compile(r"Units: sectors of \d+ \* (\d+) = \d+ bytes")
_FDISK_HEAD = re.compile(r"Device\s+(Boot\s+)?Start\s+End\s+Sectors")
_FDISK_ROW = re.compile(r"(/dev/)?(\S+)\s+(\*\s+)?(\d+)\s+(\d+)\s+(\d+)\s")


def parse_proc_partitions(path: Path, text: str) -> list[BlockDevice]:
    """Rows of /proc/partitions (no start sectors: those come from elsewhere)."""
    out = []
    where = str(path)
    for no, line in numbered_lines(text, where):
        if not line.strip() or line.split()[:2] == ["major", "minor"]:
            continue
        m = _PROC_ROW.fullmatch(line)
        if m is None:
            raise ParseError(where, no, f"expected 'major minor #blocks name', got {line[:80]!r}")
        major, minor, blocks = (to_int(where, no, m[i], what) for i, what in _PROC_FIELDS)
        out.append(BlockDevice(major, minor, blocks, m[4]))
    return out


_PROC_FIELDS = ((1, "major"), (2, "minor"), (3, "#blocks"))


def parse_fdisk(path: Path, text: str) -> list[Partition]:
    """Partition rows of `fdisk -l`, converted from its units to 512-byte sectors."""
    out: list[Partition] = []
    where = str(path)
    disk, unit, in_table = "", 512, False
    for no, line in numbered_lines(text, where):
        if m := _FDISK_DISK.match(line):
            disk, in_table = m[2], False
        elif m := _FDISK_UNITS.match(line):
            unit = to_int(where, no, m[1], "sector size")
        elif _FDISK_HEAD.match(line):
            in_table = True
        elif in_table and line.strip():
            m = _FDISK_ROW.match(line + " ")
            if m is None:
                raise ParseError(
                    where, no, f"expected 'Device Start End Sectors ...', got {line[:80]!r}"
                )
            scale = unit // 512
            start = to_int(where, no, m[4], "Start") * scale
            sectors = to_int(where, no, m[6], "Sectors") * scale
            out.append(Partition(m[2], disk, None, None, None, None, start, sectors, "fdisk"))
        elif not line.strip():
            in_table = False
    return out


def parse_lsblk(path: Path, text: str) -> list[Partition]:
    """Partitions in `lsblk --json` output; it must include the START column."""
    where = str(path)
    try:
        doc = json.loads(text)
        devices = doc["blockdevices"]
    except (ValueError, KeyError, TypeError, RecursionError):
        raise InputFormatError(where, "not lsblk --json output (no 'blockdevices')") from None
    out: list[Partition] = []
    # (device, its disk or None), walked without recursion: the nesting comes from the file
    todo: list[tuple[Any, dict[str, Any] | None]] = [
        (d, None) for d in reversed(_list(where, devices))
    ]
    while todo:
        dev, disk = todo.pop()
        if not isinstance(dev, dict):
            raise InputFormatError(where, f"a device is {type(dev).__name__}, not an object")
        if disk is not None:
            out.append(_lsblk_partition(where, dev, disk))
        children = _list(where, dev.get("children"))
        todo += [(child, dev if disk is None else disk) for child in reversed(children)]
    return out


def _list(where: str, value: Any) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise InputFormatError(where, f"expected a list of devices, got {type(value).__name__}")
    return value


def _lsblk_partition(where: str, dev: dict[str, Any], disk: dict[str, Any]) -> Partition:
    name = dev.get("name")
    if dev.get("start") is None:
        raise InputFormatError(
            where,
            f"lsblk output has no start sector for {name}",
            hint="run lsblk --json -b -o NAME,MAJ:MIN,START,SIZE,PKNAME,TYPE",
        )
    size = dev.get("size")
    if not isinstance(size, int) or isinstance(size, bool):
        raise InputFormatError(where, f"size of {name} is not in bytes", hint="add -b to lsblk")
    dmaj, dmin = _maj_min(where, disk)
    pmaj, pmin = _maj_min(where, dev)
    start = dev["start"]
    if isinstance(start, str) and start.isascii() and start.isdigit() and len(start) < 20:
        start = int(start)
    for what, value in (("start", start), ("size", size)):
        if not isinstance(value, int) or not 0 <= value < LIMIT:
            raise InputFormatError(where, f"{what} of {name} is not a sector count: {value!r}")
    return Partition(
        str(name), str(disk.get("name")), dmaj, dmin, pmaj, pmin, start, size // 512, "lsblk"
    )


def _maj_min(where: str, dev: dict[str, Any]) -> tuple[int, int]:
    m = re.fullmatch(r"(\d{1,9}):(\d{1,9})", str(dev.get("maj:min")))
    if m is None:
        raise InputFormatError(
            where, f"device {dev.get('name')} has no 'maj:min' like 8:0: {dev.get('maj:min')!r}"
        )
    return int(m[1]), int(m[2])


def read_partitions(paths: list[Path]) -> tuple[list[Partition], list[BlockDevice]]:
    """Read any mix of listings; partitions placed by fdisk/lsblk, devices from /proc."""
    parts: list[Partition] = []
    devices: list[BlockDevice] = []
    for path in paths:
        text = read_text(str(path), MAX_LISTING_BYTES, "a partition listing")
        head = text.lstrip()[:200]
        if head.startswith("{"):
            parts += parse_lsblk(path, text)
        elif head.startswith("major") or _PROC_ROW.match(head.splitlines()[0] if head else ""):
            devices += parse_proc_partitions(path, text)
        elif _FDISK_DISK.search(text):
            parts += parse_fdisk(path, text)
        else:
            raise InputFormatError(
                str(path),
                "not a partition listing",
                hint="pass /proc/partitions, `fdisk -l` or `lsblk --json -b "
                "-o NAME,MAJ:MIN,START,SIZE,PKNAME,TYPE` output",
            )
    by_name = {d.name: d for d in devices}
    for p in parts:
        if p.disk_major is None and p.disk in by_name:
            p.disk_major, p.disk_minor = by_name[p.disk].major, by_name[p.disk].minor
        if p.dev_major is None and p.name in by_name:
            p.dev_major, p.dev_minor = by_name[p.name].major, by_name[p.name].minor
    return parts, devices


Remap = tuple[int, int, int, int, int, int]  # disk major, minor, sector, from major, minor, sector


def place_from_remaps(devices: list[BlockDevice], remaps: list[Remap]) -> list[Partition]:
    """Partitions known only from /proc/partitions, placed by the trace's A (remap) events:
    each A says that sector `from` of a partition is sector `sector` of its disk."""
    by_dev = {(d.major, d.minor): d for d in devices}
    placed: dict[tuple[int, int], Partition] = {}
    for dmaj, dmin, sector, fmaj, fmin, from_sector in remaps:
        part, disk = by_dev.get((fmaj, fmin)), by_dev.get((dmaj, dmin))
        if part is None or (fmaj, fmin) in placed:
            continue
        placed[(fmaj, fmin)] = Partition(
            part.name,
            disk.name if disk else f"{dmaj},{dmin}",
            dmaj,
            dmin,
            fmaj,
            fmin,
            sector - from_sector,
            part.blocks_1k * 2,
            "remap events (A)",
        )
    return list(placed.values())


def assign_disk(
    parts: list[Partition], devices: list[tuple[int, int]], override: tuple[int, int] | None
) -> list[Partition]:
    """Give partitions whose disk number is unknown (fdisk) the traced device they sit on."""
    for p in parts:
        if p.disk_major is None:
            if override is None and len(devices) != 1:
                raise InputFormatError(
                    p.disk,
                    f"cannot tell which traced device {p.disk} is "
                    f"({len(devices)} devices in the trace)",
                    hint="pass --device MAJOR,MINOR, or /proc/partitions as well",
                )
            p.disk_major, p.disk_minor = override or devices[0]
    return parts


def partitions_table(parts: list[Partition]) -> pa.Table:
    """The partitions table."""
    return pa.Table.from_pylist([asdict(p) for p in parts], schema=PARTITIONS)
