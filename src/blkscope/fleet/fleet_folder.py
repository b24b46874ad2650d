"""Where a fleet's files are, and how a capture's partition appears in it in one step.

    FLEET/fleet.json                      marks the folder as a fleet
    FLEET/host=H/capture=C/               one capture: a whole dataset + the fleet tables
    FLEET/.staging/<random>/              partitions being built (hidden from every reader)

A partition is built whole under `.staging` (same file system) and swapped in with the dataset
writer's folder swap (`renameat2(RENAME_EXCHANGE)`, or two renames that a reader recovers
from): at every instant `capture=C` is absent, the previous version, or the new one. Readers
list only folders holding a manifest, so a kill -9 anywhere leaves a fleet that is queryable
as it was, and `.staging` leftovers are removed by the next `fleet add`.
"""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from blkscope.errors import DatasetError, NotADatasetError, does_not_exist
from blkscope.store.folder_swap import WriteLock, clean_leftovers, make_parent_folders, swap_in
from blkscope.store.manifest import check_utf8_path, is_dataset
from blkscope.store.writer import write_text_atomic

MARKER = "fleet.json"
MARKER_DOC = {"format": "blkscope-fleet", "version": 1}
STAGING = ".staging"
_ADD_HINT = "create one with 'blkscope fleet add FLEET CAPTURE...'"


@dataclass(frozen=True)
class Partition:
    """One committed capture of a fleet."""

    host: str
    capture: str
    path: Path


def partition_dir(fleet: Path, host: str, capture: str) -> Path:
    """The folder of one capture (host and capture already checked by blkscope.fleet.names)."""
    return fleet / f"host={host}" / f"capture={capture}"


def is_fleet(path: Path) -> bool:
    return (path / MARKER).is_file()


def open_fleet(fleet: Path) -> None:
    """A DatasetError unless fleet is a fleet folder."""
    check_utf8_path(fleet)
    try:
        there, found = fleet.exists(), is_fleet(fleet)
    except OSError as exc:
        raise DatasetError(str(fleet), f"cannot open: {exc.strerror}") from None
    if not there:
        raise does_not_exist(str(fleet), hint=_ADD_HINT)
    if not found:
        raise NotADatasetError(
            str(fleet),
            f"not a blkscope fleet (no {MARKER})",
            hint=_ADD_HINT,
        )


def create_fleet(fleet: Path) -> None:
    """Make fleet a fleet folder (new or empty); an existing fleet is left as it is."""
    check_utf8_path(fleet)
    if is_fleet(fleet):
        return
    if fleet.exists() and (not fleet.is_dir() or any(fleet.iterdir())):
        raise DatasetError(
            str(fleet),
            "exists and is not a blkscope fleet; refusing to write into it",
            hint="choose another FLEET folder or remove it first",
        )
    make_parent_folders(fleet / MARKER)
    try:
        fleet.mkdir(exist_ok=True)
    except OSError as exc:
        raise DatasetError(str(fleet), f"cannot write: {exc.strerror}") from None
    write_text_atomic(fleet / MARKER, json.dumps(MARKER_DOC) + "\n")


@contextmanager
def fleet_writer(fleet: Path) -> Iterator[None]:
    """Hold the fleet's writer lock (one `fleet add` at a time) after removing what killed
    writers left in `.staging`."""
    create_fleet(fleet)
    with WriteLock(fleet):
        shutil.rmtree(fleet / STAGING, ignore_errors=True)
        yield


def new_staging(fleet: Path) -> Path:
    """A fresh folder to build one partition in."""
    path = fleet / STAGING / uuid.uuid4().hex
    path.mkdir(parents=True)
    return path


def publish(built: Path, fleet: Path, host: str, capture: str) -> Path:
    """Swap a partition built under `.staging` into its place; return where it now is."""
    target = partition_dir(fleet, host, capture)
    make_parent_folders(target)
    with WriteLock(target):
        clean_leftovers(target)
        swap_in(built, target)
    return target


def partitions(fleet: Path) -> list[Partition]:
    """The committed captures, in host then capture order (folders without a manifest are
    partitions being swapped or never finished: not part of the fleet)."""
    found = []
    for host_dir in sorted(fleet.glob("host=*")):
        for cap_dir in sorted(host_dir.glob("capture=*")):
            if is_dataset(cap_dir):
                host = host_dir.name.partition("=")[2]
                found.append(Partition(host, cap_dir.name.partition("=")[2], cap_dir))
    return found
