"""A dataset's manifest.json: what it must hold, read and checked once into a typed Manifest.

A dataset may come from a machine nobody here controls, so everything later code trusts
(table names, file names, device spans, the capture keys the analysis reads) is checked here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from blkscope.errors import DatasetError, NotADatasetError, does_not_exist
from blkscope.store.folder_swap import WriteLock, has_old_version, recover
from blkscope.store.jsonshape import COUNT, OPT_INT, OPT_STR, SCALAR, Required, mismatch
from blkscope.units import MAX_DURATION_NS as LIMIT

MANIFEST = "manifest.json"
MAX_MANIFEST_BYTES = 64 << 20  # a real one is a few KiB
# Version 1: the first layout (a manifest without "version" is one). Version 2 may list the
# last_plugs table, which a version-1 reader refuses as unknown: it must say "upgrade" instead.
MANIFEST_VERSION = 2

# capture.json as `blkscope capture` writes it, the keys the analysis and the report read; it
# is checked when a capture folder is ingested and again in every manifest read.
CAPTURE_SHAPE = {
    "format": str,
    "host": {"kernel": OPT_STR, "hostname": OPT_STR},
    "devices": [{"name": OPT_STR, "dev": OPT_STR, "scheduler": OPT_STR, "queue": {str: SCALAR}}],
    "vm_sysctls": {str: SCALAR},
    "sysctl": {str: SCALAR},
}


@dataclass(frozen=True)
class TableFile:
    """One stored table: its Parquet file (inside the dataset folder) and its row count."""

    name: str
    file: str
    rows: int


@dataclass(frozen=True)
class DeviceEntry:
    """One traced device as ingest counted it."""

    dev: str  # "MAJOR,MINOR"
    major: int
    minor: int
    events: int
    first_ns: int | None
    last_ns: int | None
    by_action: Mapping[str, int]


@dataclass(frozen=True)
class Manifest:
    """A dataset's manifest, checked: the typed parts every stage reads, and the whole
    document (`doc`) for what is only shown (inputs, capture settings, the clock)."""

    version: int
    tables: Mapping[str, TableFile]
    devices: tuple[DeviceEntry, ...]
    event_count: int
    warnings: tuple[str, ...]  # the completeness warnings ingest wrote
    doc: Mapping[str, Any] = field(repr=False)

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> Manifest:
        """The typed view of a manifest document already checked by read_manifest_doc (or
        just written by blkscope)."""
        tables = {
            name: TableFile(name, str(info["file"]), int(info.get("rows", 0)))
            for name, info in (doc.get("tables") or {}).items()
        }
        devices = tuple(
            DeviceEntry(
                dev=str(d["dev"]),
                major=int(d["major"]),
                minor=int(d["minor"]),
                events=int(d.get("events", 0)),
                first_ns=d.get("first_time_ns"),
                last_ns=d.get("last_time_ns"),
                by_action=dict(d.get("by_action") or {}),
            )
            for d in doc.get("devices") or []
        )
        return cls(
            version=int(doc.get("version", MANIFEST_VERSION)),
            tables=tables,
            devices=devices,
            event_count=int((doc.get("events") or {}).get("count") or 0),
            warnings=tuple((doc.get("completeness") or {}).get("warnings", [])),
            doc=doc,
        )

    @property
    def kernel(self) -> str:
        """The traced kernel's release as the capture recorded it ('' when unknown)."""
        return str(((self.doc.get("capture") or {}).get("host") or {}).get("kernel") or "")

    def editable(self) -> dict[str, Any]:
        """A deep copy of the document, for a writer that records new tables in it."""
        return json.loads(json.dumps(self.doc))


def read_manifest(path: Path) -> Manifest:
    """A dataset's manifest, read and checked (see read_manifest_doc)."""
    return Manifest.from_doc(read_manifest_doc(path))


def check_utf8_path(path: Path) -> None:
    """A DatasetError when a dataset's path is not UTF-8: Arrow and DuckDB take paths as UTF-8
    text, so such a folder could be written by Python but never read back."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        raise DatasetError(
            str(path).encode("utf-8", "backslashreplace").decode("ascii", "replace"),
            "the dataset's path is not valid UTF-8 (Arrow and DuckDB cannot open it)",
            hint="choose a path whose name is UTF-8",
        ) from None


def recover_quietly(path: Path) -> None:
    """Bring back a dataset a killed writer left only as `.NAME.old-*`, unless one is writing.
    Without such a leftover there is nothing to lock (taking the lock would create the
    missing folders above a path a reader merely named)."""
    if not has_old_version(path):
        return
    try:
        with WriteLock(path):
            recover(path)
    except DatasetError:
        pass


def is_dataset(path: Path) -> bool:
    """True when path is a folder holding a blkscope manifest."""
    return (path / MANIFEST).is_file()


def read_manifest_doc(path: Path) -> dict[str, Any]:
    """Load a dataset's manifest as JSON, with a clear error when it is not a dataset.

    A dataset may come from a machine nobody here controls: its table names become SQL
    identifiers and its file names paths, so both are checked against what blkscope writes.
    """
    check_utf8_path(path)
    try:
        if not path.exists():
            recover_quietly(path)
            if not path.exists():
                raise does_not_exist(str(path), hint=_INGEST_HINT)
        found = is_dataset(path)
    except OSError as exc:  # a name too long, a loop of links...
        raise DatasetError(str(path), f"cannot open: {exc.strerror}") from None
    if not found:
        raise NotADatasetError(
            str(path),
            "not a blkscope dataset (no manifest.json)",
            hint=_INGEST_HINT,
        )
    where = str(path / MANIFEST)
    try:
        with open(path / MANIFEST, "rb") as f:
            data = f.read(MAX_MANIFEST_BYTES + 1)
        if len(data) > MAX_MANIFEST_BYTES:
            raise ValueError(f"more than {MAX_MANIFEST_BYTES >> 20} MiB")
        manifest = json.loads(data)
    except (OSError, ValueError, RecursionError) as exc:
        raise NotADatasetError(where, f"cannot read the manifest: {exc}", hint=_REINGEST) from None
    if not isinstance(manifest, dict):
        raise NotADatasetError(where, "the manifest is not a JSON object", hint=_REINGEST)
    version = manifest.get("version", MANIFEST_VERSION)
    if isinstance(version, int) and version > MANIFEST_VERSION:
        raise DatasetError(
            where,
            f"manifest version {version} is newer than this blkscope reads ({MANIFEST_VERSION})",
            hint="upgrade blkscope, or ingest the capture again with this one",
        )
    check_manifest_tables(where, manifest.setdefault("tables", {}))
    problem = mismatch(manifest, MANIFEST_SHAPE) or _span_problem(manifest)
    if problem:
        raise NotADatasetError(where, f"damaged manifest: {problem}", hint=_REINGEST)
    return manifest


_INGEST_HINT = "create one with 'blkscope ingest INPUT -o DATASET'"
_REINGEST = "the dataset is damaged or was not written by blkscope; ingest the capture again"
_SPAN = {"first_time_ns": OPT_INT, "last_time_ns": OPT_INT}
# What the analysis and the reports read from a manifest (other keys are only shown).
MANIFEST_SHAPE = {
    "inputs": [{"path": OPT_STR, "lines": OPT_INT}],
    "tables": {str: {"file": Required(str), "rows": COUNT}},
    "events": {"count": OPT_INT, "by_action": {str: COUNT}, **_SPAN},
    "devices": [
        {
            "dev": Required(str),
            "major": Required(int),
            "minor": Required(int),
            "events": COUNT,
            "by_action": {str: COUNT},
            **_SPAN,
        }
    ],
    "ingest": {"error_lines": COUNT, "error_lines_not_stored": COUNT},
    "capture": CAPTURE_SHAPE,
    "version": int,
    # shown on every output (the report, summary.json, analyze)
    "completeness": {"warnings": [str]},
    "reconciliation": {"missing_events": {str: COUNT}, "warnings": [str]},
    "skipped": [{"name": Required(str), "reason": Required(str)}],
}


def _span_problem(manifest: dict[str, Any]) -> str | None:
    """Device spans must be ordered and within the clock's range (the report bins them)."""
    for i, d in enumerate(manifest.get("devices", [])):
        first, last = d.get("first_time_ns"), d.get("last_time_ns")
        for value in (first, last):
            if value is not None and not -LIMIT < value < LIMIT:
                return f"devices[{i}] time {value} is out of range"
        if first is not None and last is not None and first > last:
            return f"devices[{i}] ends ({last}) before it starts ({first})"
    return None


def check_manifest_tables(where: str, tables: object) -> None:
    """Refuse table entries blkscope never writes: an unknown name, or a file that is not the
    table's own `<name>.parquet` inside the dataset folder."""
    from blkscope.schemas import TABLES  # pyarrow: not before a dataset is found

    if not isinstance(tables, dict):
        raise NotADatasetError(where, "'tables' is not a JSON object", hint=_REINGEST)
    for name, info in tables.items():
        if name not in TABLES:
            raise NotADatasetError(where, f"unknown table {name!r} in 'tables'", hint=_REINGEST)
        file = info.get("file") if isinstance(info, dict) else None
        if file != f"{name}.parquet":
            raise NotADatasetError(
                where,
                f"table {name!r} names file {file!r}, not {name + '.parquet'!r}",
                hint=_REINGEST,
            )


def unreadable_table(path: Path, why: Exception) -> NotADatasetError:
    """The error for a table file of a dataset that cannot be read (cut short, or damaged on
    disk: a page that does not decode): bad input, like any damaged input file."""
    said = " ".join(str(why).split())  # Arrow's messages run over several lines
    return NotADatasetError(str(path), f"is not a readable Parquet file ({said})", hint=_REINGEST)


def first_unreadable(paths: list[Path]) -> NotADatasetError | None:
    """The error for the first of these table files with a page that does not decode or fails
    its checksum (every page read, a row group at a time), or None when all read."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    for path in paths:
        try:
            file = pq.ParquetFile(path, page_checksum_verification=True)
            for group in range(file.num_row_groups):
                file.read_row_group(group)
        except (OSError, pa.ArrowException) as exc:
            return unreadable_table(path, exc)
    return None


def check_table_file(path: Path, name: str) -> None:
    """Refuse a table file that is missing, is not Parquet (or is cut short), or lacks the
    table's declared columns: DuckDB would fail on it in the middle of an analysis."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from blkscope.schemas import TABLES

    where = str(path)
    if not path.is_file():  # missing, or a FIFO that would block the reader
        raise NotADatasetError(where, "is missing: the dataset is incomplete", hint=_REINGEST)
    try:
        found = pq.read_schema(path)
    except (OSError, pa.ArrowException) as exc:
        raise unreadable_table(path, exc) from None
    have = {f.name: f.type for f in found}
    for f in TABLES[name]:
        if have.get(f.name) != f.type:
            raise NotADatasetError(
                where,
                f"column {f.name} is {have.get(f.name) or 'missing'}, expected {f.type}",
                hint=_REINGEST,
            )
