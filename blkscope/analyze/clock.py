"""Put a trace on CLOCK_MONOTONIC: its time zero is the smallest `time` in the blktrace binaries."""

from __future__ import annotations

from pathlib import Path

import numba
import numpy as np

from blkscope.errors import InputFormatError
from blkscope.ingest.sources import open_source


@numba.njit(cache=True)
def _min_time(buf: np.ndarray) -> tuple[int, int, int]:  # pragma: no cover - compiled
    # records are variable-length (48 bytes + pdu_len), so they can only be walked in order
    off = 0
    best = np.uint64(0xFFFFFFFFFFFFFFFF)
    n = 0
    while off + 48 <= buf.size:
        # magic 0x656174VV little-endian: byte 0 is the version, bytes 1..3 'tae'
        if buf[off + 1] != 0x74 or buf[off + 2] != 0x61 or buf[off + 3] != 0x65:
            return np.int64(-1), off, n
        t = np.uint64(0)
        for i in range(8):
            t |= np.uint64(buf[off + 8 + i]) << np.uint64(8 * i)
        if t < best:
            best = t
        pdu = int(buf[off + 46]) | (int(buf[off + 47]) << 8)
        off += 48 + pdu
        n += 1
    return np.int64(best), off, n


def trace_zero_mono_ns(paths: list[Path]) -> int:
    """Smallest record time over per-CPU blktrace files (plain or compressed), monotonic ns."""
    best: int | None = None
    for path in paths:
        src = open_source(str(path))
        try:
            data = src.stream.read()
        finally:
            src.close()
        t, off, n = _min_time(np.frombuffer(data, dtype=np.uint8))
        if t < 0:
            raise InputFormatError(
                str(path),
                f"record {n} at byte {off} has no blktrace magic",
                hint="pass the per-CPU NAME.blktrace.N files",
            )
        if n and (best is None or int(t) < best):
            best = int(t)
    if best is None:
        raise InputFormatError(", ".join(map(str, paths)), "no blktrace records")
    return best
