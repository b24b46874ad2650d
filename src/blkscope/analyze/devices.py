"""What the traced devices are called (vda, nvme0n1, sda1): blkparse only prints major,minor."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # (only named in annotations: ingest's summary needs no duckdb)
    import duckdb


@dataclass(frozen=True)
class DeviceName:
    """A device's name and where it was learnt."""

    name: str
    source: str  # capture.json, partition listing, biosnoop log (matched by sector)


def _dev(text: Any) -> tuple[int, int] | None:
    parts = str(text).replace(":", ",").split(",")
    if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
        return None
    return int(parts[0]), int(parts[1])


def recorded_names(manifest: dict[str, Any]) -> dict[tuple[int, int], DeviceName]:
    """The names capture.json recorded (known from ingest on, before any analysis)."""
    names: dict[tuple[int, int], DeviceName] = {}
    for d in (manifest.get("capture") or {}).get("devices") or []:
        key = _dev(d.get("dev"))
        if key and d.get("name"):
            names.setdefault(key, DeviceName(str(d["name"]), "capture.json"))
    return names


def device_names(
    con: duckdb.DuckDBPyConnection,
    manifest: dict[str, Any],
    matched: dict[str, str] | None = None,
) -> dict[tuple[int, int], DeviceName]:
    """Names by (major, minor): capture.json's devices first, then a partition listing (the
    disk's name, or the partition's own when the traced device is a partition), then `matched`
    ({'major,minor': disk name} whose log rows matched the device's requests, e.g. biosnoop's)."""
    names = recorded_names(manifest)
    if "partitions" in manifest.get("tables", {}):
        rows = con.execute(
            "SELECT DISTINCT disk_major, disk_minor, disk FROM partitions "
            "WHERE disk_major IS NOT NULL UNION SELECT DISTINCT dev_major, dev_minor, name "
            "FROM partitions WHERE dev_major IS NOT NULL ORDER BY ALL"
        ).fetchall()
        for major, minor, name in rows:
            names.setdefault((int(major), int(minor)), DeviceName(str(name), "partition listing"))
    for dev, disk in (matched or {}).items():
        key = _dev(dev)
        if key and disk:
            names.setdefault(key, DeviceName(disk, "biosnoop log, matched by sector"))
    return names


def traced_devices(con: duckdb.DuckDBPyConnection, table: str = "events") -> list[tuple[int, int]]:
    """The (major, minor) of every device in a table (`events`, `bios`, ...), in order."""
    rows = con.execute(f"SELECT DISTINCT dev_major, dev_minor FROM {table} ORDER BY 1, 2")
    return [(int(a), int(b)) for a, b in rows.fetchall()]


def remap_events(con: duckdb.DuckDBPyConnection) -> list[tuple[int, int, int, int, int, int]]:
    """Every remap (A) event: (device, sector, the device and sector it came from)."""
    rows = con.execute(
        "SELECT dev_major, dev_minor, sector, remap_dev_major, remap_dev_minor, remap_sector "
        "FROM events WHERE action = 'A'"
    ).fetchall()
    return [tuple(int(x) for x in r) for r in rows]  # type: ignore[misc]


def label(major: int, minor: int, names: dict[tuple[int, int], DeviceName]) -> str:
    """'vda (254,0)', or '254,0' when the name is unknown."""
    found = names.get((major, minor))
    return f"{found.name} ({major},{minor})" if found else f"{major},{minor}"
