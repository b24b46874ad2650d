"""Partition listings: parsed from real fdisk output, placed on the traced disk, exact errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from blkscope.errors import InputFormatError
from blkscope.ingest.logs.partition_listing import (
    BlockDevice,
    assign_disk,
    place_from_remaps,
    read_partitions,
)

DATA = Path(__file__).parents[1] / "data" / "partitions"


def test_fdisk_gpt_listing() -> None:
    parts, devices = read_partitions([DATA / "fdisk_gpt_loop0.txt"])
    assert devices == []
    assert [(p.name, p.disk, p.start_sector, p.sectors, p.source) for p in parts] == [
        ("loop0p1", "loop0", 2048, 204800, "fdisk"),
        ("loop0p2", "loop0", 208896, 409600, "fdisk"),
        ("loop0p3", "loop0", 620000, 200000, "fdisk"),
    ]


def test_proc_partitions_names_the_disk_of_fdisk_rows() -> None:
    parts, devices = read_partitions(
        [DATA / "fdisk_gpt_loop0.txt", DATA / "proc_partitions_vm.txt"]
    )
    assert [(d.name, d.major, d.minor) for d in devices] == [("loop0", 7, 0), ("vda", 254, 0)]
    assert {(p.disk_major, p.disk_minor) for p in parts} == {(7, 0)}


def test_fdisk_with_4k_units_converts_to_512_byte_sectors(tmp_path: Path) -> None:
    text = (
        (DATA / "fdisk_gpt_loop0.txt")
        .read_text()
        .replace("Units: sectors of 1 * 512 = 512 bytes", "Units: sectors of 1 * 4096 = 4096 bytes")
    )
    listing = tmp_path / "fdisk4k.txt"
    listing.write_text(text)
    parts, _ = read_partitions([listing])
    assert parts[1].start_sector == 208896 * 8


def test_lsblk_json_with_start_column() -> None:
    parts, _ = read_partitions([DATA / "lsblk_sda.json"])
    assert [
        (p.name, p.disk_major, p.disk_minor, p.dev_minor, p.start_sector, p.sectors) for p in parts
    ] == [("sda1", 8, 0, 1, 2048, 2097152), ("sda2", 8, 0, 2, 2099200, 102758975)]


def test_remap_events_place_partitions_known_only_from_proc() -> None:
    devices = [BlockDevice(8, 0, 52428800, "sda"), BlockDevice(8, 2, 51379200, "sda2")]
    (p,) = place_from_remaps(devices, [(8, 0, 2109200, 8, 2, 10000)])
    assert (p.name, p.disk, p.start_sector, p.sectors) == ("sda2", "sda", 2099200, 102758400)


def test_errors_are_exact(tmp_path: Path) -> None:
    default = tmp_path / "lsblk.json"
    default.write_text(
        '{"blockdevices": [{"name": "sda", "maj:min": "8:0", "size": "50G", '
        '"children": [{"name": "sda1", "maj:min": "8:1", "size": "1G"}]}]}'
    )
    with pytest.raises(InputFormatError) as info:
        read_partitions([default])
    assert str(info.value) == f"{default}: lsblk output has no start sector for sda1"
    assert info.value.hint == "run lsblk --json -b -o NAME,MAJ:MIN,START,SIZE,PKNAME,TYPE"
    other = tmp_path / "iostat.txt"
    other.write_text("Linux 6.18 (vm)\n\navg-cpu:  %user\n")
    with pytest.raises(InputFormatError, match="not a partition listing"):
        read_partitions([other])
    parts, _ = read_partitions([DATA / "fdisk_gpt_loop0.txt"])
    with pytest.raises(InputFormatError) as info:
        assign_disk(parts, [(254, 0), (7, 0)], None)
    assert (
        info.value.message() == "cannot tell which traced device loop0 is (2 devices in the trace)"
    )
