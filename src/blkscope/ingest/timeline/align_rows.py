"""The few rows of a side log that an alignment looks at, read a batch at a time.

The alignments use at most a few thousand rows (align.WORK_ROWS, align.MATCH_ROWS): turning
whole columns of a big log into arrays to pick them would make the peak of its ingest. Read in
batches, with a spilled table's pages dropped after each, the
memory is a batch.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from blkscope.ingest.logs.spool import drop_pages
from blkscope.ingest.timeline.align import MATCH_ROWS, MIN_WORK_NS, WORK_ROWS

BATCH_ROWS = 1 << 18


def _batches(table: pa.Table, columns: list[str]) -> Iterator[dict[str, np.ndarray]]:
    for batch in table.select(columns).to_batches(max_chunksize=BATCH_ROWS):
        # nulls (no device, no sector) as -1: the integers stay exact
        yield {name: batch.column(i).fill_null(-1).to_numpy() for i, name in enumerate(columns)}
        drop_pages(table)


def _on_trace(rows: dict[str, np.ndarray], wanted: np.ndarray | None) -> np.ndarray:
    # wanted None: the log names devices by bdi, not major:minor; every row counts
    if wanted is None:
        return np.ones(len(rows["time_ns"]), bool)
    major, minor = rows["dev_major"].astype(np.int64), rows["dev_minor"].astype(np.int64)
    return np.isin((major << 32) + minor, wanted)


def writeback_work(
    table: pa.Table, traced: set[tuple[int, int]]
) -> tuple[np.ndarray, np.ndarray, int] | None:
    """(stamps, durations, first stamp) of the work items align_writeback uses: rows on the
    traced devices (every row when the log names no device the trace knows and none by
    major:minor), at least MIN_WORK_NS long, WORK_ROWS of them evenly spread; the first stamp
    is that of the first row on the traced devices. None when the log has no such row."""
    columns = ["dev_major", "dev_minor", "time_ns", "duration_ns"]
    wanted: np.ndarray | None = np.array([(a << 32) + b for a, b in traced], np.int64)
    first, work = _first_and_work(table, columns, wanted)
    if first is None:
        if table["dev_major"].null_count < table.num_rows:
            return None  # only devices the trace did not record
        wanted = None
        first, work = _first_and_work(table, columns, wanted)
    if first is None:
        return None
    # the rows align_writeback would sample from all of them
    pick = np.arange(work)
    if work > WORK_ROWS:
        pick = np.linspace(0, work - 1, WORK_ROWS).round().astype(np.int64)
    stamps, durations = [], []
    seen = 0
    for rows in _batches(table, columns):
        keep = _on_trace(rows, wanted) & (rows["duration_ns"] >= MIN_WORK_NS)
        n = int(keep.sum())
        mine = pick[(pick >= seen) & (pick < seen + n)] - seen
        stamps.append(rows["time_ns"][keep][mine].astype(np.int64))
        durations.append(rows["duration_ns"][keep][mine].astype(np.int64))
        seen += n
    return np.concatenate(stamps), np.concatenate(durations), first


def _first_and_work(
    table: pa.Table, columns: list[str], wanted: np.ndarray | None
) -> tuple[int | None, int]:
    # the first stamp on the traced devices, and how many rows there are work items
    first: int | None = None
    work = 0
    for rows in _batches(table, columns):
        on = _on_trace(rows, wanted)
        if first is None and on.any():
            first = int(rows["time_ns"][on][0])
        work += int((on & (rows["duration_ns"] >= MIN_WORK_NS)).sum())
    return first, work


def first_sector_rows(table: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """(sectors, times) of the first MATCH_ROWS rows with a sector: all align_by_sector uses."""
    sectors, times = [], []
    found = 0
    for rows in _batches(table, ["sector", "time_ns"]):
        keep = rows["sector"] >= 0
        sectors.append(rows["sector"][keep].astype(np.int64)[: MATCH_ROWS - found])
        times.append(rows["time_ns"][keep].astype(np.int64)[: MATCH_ROWS - found])
        found += len(sectors[-1])
        if found >= MATCH_ROWS:
            break
    if not sectors:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(sectors), np.concatenate(times)
