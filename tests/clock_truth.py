"""Ground truth for clock tests: the binaries' time zero and writeback_ns on the trace timeline."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from blkscope.ingest.blktrace.records import read_records
from blkscope.ingest.folder import ingest_folder
from blkscope.ingest.logs.writeback_log import parse_writeback
from tests.conftest import capture_folder

MQ = ["mq-writeback-30s", "mq-writeback-60s"]
NOTIFY = 1 << 15  # BLK_TC_NOTIFY: the category bit of notes (process names, wall clock, messages)


def capture(name: str) -> Path:
    """A capture folder (../shared, or its copy in fixtures/), skipping the test when absent."""
    return capture_folder(name)


def trace_zero_mono(folder: Path) -> int:
    """Smallest `time` over the event records (notes excluded) of trace.blktrace.*."""
    smallest = []
    for path in sorted(folder.glob("trace.blktrace.*")):
        records = read_records(str(path)).records
        events = records[((records["action"] >> 16) & NOTIFY) == 0]
        smallest.append(int(events["time"].min()))
    return min(smallest)


def clock_pair(folder: Path) -> tuple[int, int]:
    """clock.txt's (MONO_NS, WALL_NS)."""
    mono, wall = (folder / "clock.txt").read_text().split()
    return int(mono), int(wall)


def writeback_truth(folder: Path) -> np.ndarray:
    """writeback_ns.txt's times on the trace timeline, row for row."""
    table = parse_writeback(str(folder / "writeback_ns.txt"))
    return table["time_ns"].to_numpy() - trace_zero_mono(folder)


def ingest_subset(folder: Path, files: list[str], tmp: Path, **kwargs: object) -> Path:
    """Copy `files` of a capture into a fresh folder and ingest it; return the dataset."""
    src = tmp / "capture"
    src.mkdir()
    for name in files:
        shutil.copy(folder / name, src / name)
    out = tmp / "dataset"
    ingest_folder(src, out, **kwargs)  # type: ignore[arg-type]
    return out


def column(dataset: Path, table: str, name: str) -> np.ndarray:
    """One column of a dataset table as numpy."""
    return pq.read_table(dataset / f"{table}.parquet", columns=[name])[name].to_numpy()
