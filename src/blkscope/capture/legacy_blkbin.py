"""The numba kernels capture/blkbin.py used before the compiled core (blkscope._core) took over:
kept, with nothing in the package calling them, for the differential test against the core
(tests/test_ingest_differential.py) until numba leaves the package."""

from __future__ import annotations

import numpy as np

from blkscope.blk_io_trace import MAGIC as BLK_MAGIC
from blkscope.blk_io_trace import MAGIC_MASK, OFFSET, RECORD_BYTES
from blkscope.capture.blkbin import FTRACE_HEADER
from blkscope.numba_kernels import compiled

# Byte offsets the compiled indexer reads (numba freezes these module constants).
_HEAD = FTRACE_HEADER.size
_PDU_LEN, _PID, _DEVICE, _CPU, _TIME = (
    OFFSET[f] for f in ("pdu_len", "pid", "device", "cpu", "time")
)


@compiled
def _u32(buf: np.ndarray, at: int) -> int:
    return (
        np.uint32(buf[at])
        | (np.uint32(buf[at + 1]) << 8)
        | (np.uint32(buf[at + 2]) << 16)
        | (np.uint32(buf[at + 3]) << 24)
    )


@compiled
def _index(
    buf: np.ndarray, pos: int, stop: int, cap: int
) -> tuple[
    int, int, int, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]
]:
    """Find whole records in buf[pos:stop]: (count, end offset, bad-magic offset or -1, columns)."""
    start = np.empty(cap, np.int64)
    pdu_len = np.empty(cap, np.int64)
    cpu = np.empty(cap, np.uint32)
    dev = np.empty(cap, np.uint32)
    pid = np.empty(cap, np.uint32)
    time_ns = np.empty(cap, np.uint64)
    n = 0
    while pos + _HEAD + 4 <= stop:
        r = pos + _HEAD  # skip ftrace's pid/cpu/ts header
        if (_u32(buf, r) & MAGIC_MASK) != BLK_MAGIC:
            return n, pos, pos, (start, pdu_len, cpu, dev, pid, time_ns)
        if pos + _HEAD + RECORD_BYTES > stop:
            break
        plen = np.int64(buf[r + _PDU_LEN]) | (np.int64(buf[r + _PDU_LEN + 1]) << 8)
        if pos + _HEAD + RECORD_BYTES + plen > stop:
            break
        start[n] = pos
        pdu_len[n] = plen
        pid[n] = _u32(buf, r + _PID)
        dev[n] = _u32(buf, r + _DEVICE)
        cpu[n] = _u32(buf, r + _CPU)
        time_ns[n] = np.uint64(_u32(buf, r + _TIME)) | (
            np.uint64(_u32(buf, r + _TIME + 4)) << np.uint64(32)
        )
        n += 1
        pos += _HEAD + RECORD_BYTES + plen
    return n, pos, -1, (start, pdu_len, cpu, dev, pid, time_ns)


@compiled
def _gather(
    buf: np.ndarray, start: np.ndarray, pdu_len: np.ndarray, dev_idx: np.ndarray, seqs: np.ndarray
) -> np.ndarray:
    """Copy records (without ftrace's header) back to back, renumbering per-device sequences."""
    out = np.empty(int(np.sum(pdu_len)) + 48 * len(start), np.uint8)
    o = 0
    for i in range(len(start)):
        length = 48 + pdu_len[i]
        out[o : o + length] = buf[start[i] + 16 : start[i] + 16 + length]
        seqs[dev_idx[i]] += 1
        seq = seqs[dev_idx[i]]
        for b in range(4):
            out[o + 4 + b] = (seq >> (8 * b)) & 0xFF
        o += length
    return out
