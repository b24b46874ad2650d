"""Put file maps into a dataset as its file_extents table: the capture's own map (its
file_extents.parquet) or maps made by hand (filefrag -v, debugfs icheck/ncheck)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from blkscope.errors import InputFormatError
from blkscope.files.handmade import HandMap, hand_rows, read_hand_map
from blkscope.files.rows import extents_table
from blkscope.schemas.file_extents import FILE_EXTENTS
from blkscope.store.manifest import read_manifest
from blkscope.store.writer import DatasetWriter

CAPTURE_MAP = "file_extents.parquet"


@dataclass
class HandPlacement:
    """Where hand-made maps sit: the traced disk, the partition start, the block size."""

    device: tuple[int, int] | None = None
    partition_start: int = 0
    block_size: int | None = None


def read_capture_map(path: Path, data: bytes | None = None) -> pa.Table:
    """A file_extents.parquet written by blkscope capture (or a capture folder holding one);
    `data`: its bytes, read already."""
    file = path / CAPTURE_MAP if data is None and path.is_dir() else path
    try:
        table = pq.read_table(file if data is None else pa.BufferReader(data))
    except (OSError, pa.ArrowException) as exc:
        why = str(exc).replace(" '<Buffer>'", "")  # the file is named first already
        raise InputFormatError(str(file), f"not a file map: {why}") from None
    try:
        return table.select(FILE_EXTENTS.names).cast(FILE_EXTENTS)
    except (KeyError, pa.ArrowException) as exc:
        raise InputFormatError(str(file), f"not blkscope's file_extents table: {exc}") from None


def _check_device(where: str, table: pa.Table, traced: list[tuple[int, int]]) -> None:
    """A map of a device the trace does not hold cannot attribute any bio: say so."""
    disks = {
        (int(a), int(b))
        for a, b in zip(table["dev_major"].to_pylist(), table["dev_minor"].to_pylist(), strict=True)
    }
    foreign = sorted(disks - set(traced))
    if foreign:
        names = ", ".join(f"{a},{b}" for a, b in foreign)
        held = ", ".join(f"{a},{b}" for a, b in traced) or "none"
        raise InputFormatError(
            where,
            f"the map is of device {names}, but the trace holds device {held}",
            hint="map the filesystem of a traced device, or pass --device MAJOR,MINOR for a "
            "hand-made map",
        )


def load_maps(
    maps: list[Path], traced: list[tuple[int, int]], place: HandPlacement, strict: bool
) -> tuple[pa.Table, list[dict[str, Any]]]:
    """The file_extents table of all maps (exact duplicates dropped) and the lines not read."""
    tables = []
    hand = HandMap()
    for path in maps:
        if path.is_dir() or path.suffix == ".parquet":
            table = read_capture_map(path)
            _check_device(str(path), table, traced)
            tables.append(table)
        else:
            read_hand_map(str(path), hand, strict)
    if hand.extents or hand.owners:
        if place.device is None and len(traced) != 1:
            raise InputFormatError(
                str(maps[0]),
                f"cannot tell which traced device the hand-made map is of "
                f"({len(traced)} devices in the trace)",
                hint="pass --device MAJOR,MINOR",
            )
        disk = place.device or traced[0]
        table = extents_table(hand_rows(hand, disk, place.partition_start, place.block_size))
        _check_device(str(maps[0]), table, traced)
        tables.append(table)
    if not tables:
        raise InputFormatError(str(maps[0]), "the maps hold no extents")
    merged = pa.concat_tables(tables).group_by(FILE_EXTENTS.names, use_threads=False)
    table = merged.aggregate([]).cast(FILE_EXTENTS)
    order = pc.sort_indices(table, [(n, "ascending") for n in ("dev_major", "dev_minor", "sector")])
    return table.take(order), hand.errors


def attach_maps(
    dataset: Path,
    maps: list[Path],
    traced: list[tuple[int, int]],
    place: HandPlacement,
    strict: bool = False,
) -> dict[str, Any]:
    """Store the maps as the dataset's file_extents; return what the manifest records of them."""
    table, errors = load_maps(maps, traced, place, strict)
    doc = {
        "maps": [str(p) for p in maps],
        "extents": table.num_rows,
        "error_lines": len(errors),
        "errors": errors[:20],
    }
    with DatasetWriter(dataset, keep=True) as update:
        manifest = read_manifest(dataset).editable()
        manifest["tables"]["file_extents"] = update.put("file_extents", table)
        manifest["file_maps"] = doc
        update.commit(manifest)
    return doc
