"""io_dist's counts, kept by the streaming pass as it walks each device's Qs and Ds in time
order: the sizes, and the seek from where the device's previous Q (D) ended to this one's
start. The `io_dist` table (sql/_io_dist_build.sql) only names and orders them: the two
windows over every Q and D of a device (one sort on one thread each) are gone."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from blkscope.analyze.stream.events import EventCoder
from blkscope.analyze.stream.jit import inline_kernel
from blkscope.analyze.stream.layout import (
    A_D,
    A_Q,
    DV_D_END,
    DV_Q_END,
    IO_BUCKETS,
    IO_FIELDS,
    IO_METRIC_COUNT,
    IO_METRICS,
    IO_N,
    IO_TOTAL,
    M_D2D_SEEK,
    M_D_SIZE,
    M_Q2Q_SEEK,
    M_Q_SIZE,
    OPS,
)
from blkscope.analyze.stream.state import State

IO_OPS = 4  # events.op is R, W, D or N: OPS[:4]
# the table of the analysis connection the counts are left in (read by sql/_io_dist_build.sql)
IO_COUNTS = "internal._io_dist_counts"


def new_io_counts(devices: int) -> np.ndarray:
    """The zeroed counts for this many devices."""
    return np.zeros((devices * IO_OPS * IO_METRIC_COUNT * IO_BUCKETS, IO_FIELDS), dtype=np.int64)


@inline_kernel
def log2_bucket(v: int) -> int:
    """concepts.log2_bucket: b with 2^b <= v < 2^(b+1), -1 for v <= 0 (six shifts, exact)."""
    if v <= 0:
        return -1
    b = 0
    for width in (32, 16, 8, 4, 2, 1):
        if v >> width:
            v >>= width
            b += width
    return b


@inline_kernel
def _add(S: State, dev: int, op: int, metric: int, v: int) -> None:
    row = ((dev * IO_OPS + op) * IO_METRIC_COUNT + metric) * IO_BUCKETS + log2_bucket(v) + 1
    S.io[row, IO_N] += 1
    S.io[row, IO_TOTAL] += v


@inline_kernel
def count_io(S: State, a: int, dev: int, op: int, sec: int, nsec: int) -> None:
    """Count a Q's or D's size and its seek (sector -1 and length -1 are nulls: not counted,
    like io_dist's `sector IS NOT NULL AND nsectors > 0`)."""
    if sec < 0 or nsec <= 0 or (a != A_Q and a != A_D):
        return
    size, seek, end = (
        (M_Q_SIZE, M_Q2Q_SEEK, DV_Q_END) if a == A_Q else (M_D_SIZE, M_D2D_SEEK, DV_D_END)
    )
    _add(S, dev, op, size, nsec)
    prev = S.dv[dev, end]
    if prev >= 0:
        _add(S, dev, op, seek, abs(sec - prev))
    S.dv[dev, end] = sec + nsec


def io_counts_table(io: np.ndarray, coder: EventCoder) -> pa.Table:
    """The counts kept as a table: (dev_major, dev_minor, op, metric, bucket, n, total) per
    bucket holding a value."""
    rows = np.flatnonzero(io[:, IO_N])
    bucket = rows % IO_BUCKETS - 1
    metric = rows // IO_BUCKETS % IO_METRIC_COUNT
    op = rows // (IO_BUCKETS * IO_METRIC_COUNT) % IO_OPS
    major, minor = coder.devices.columns(rows // (IO_BUCKETS * IO_METRIC_COUNT * IO_OPS))
    return pa.table({
        "dev_major": major,
        "dev_minor": minor,
        "op": pa.array(np.array(OPS, dtype=object)[op], type=pa.string()),
        "metric": pa.array(np.array(IO_METRICS, dtype=object)[metric], type=pa.string()),
        "bucket": pa.array(bucket.astype(np.int32)),
        "n": pa.array(io[rows, IO_N]),
        "total": pa.array(io[rows, IO_TOTAL]),
    })  # fmt: skip
