"""Read blktrace per-CPU binary files into a structured numpy array of `struct blk_io_trace`."""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from blkscope.blk_io_trace import (
    MAGIC,
    MAGIC_BYTES_BE,
    MAGIC_BYTES_LE,
    MAGIC_MASK,
    RECORD,
    RECORD_BYTES,
    VERSION,
)
from blkscope.errors import InputFormatError
from blkscope.ingest.sources import open_source
from blkscope.numba_kernels import compiled


@dataclass
class RecordFile:
    """All records of one per-CPU file: fixed parts, where each payload starts, the raw bytes."""

    path: str
    records: np.ndarray
    offsets: np.ndarray
    data: np.ndarray
    compression: str
    raw_bytes: int
    sha256: str

    def pdu(self, i: int) -> bytes:
        """Payload bytes of record i."""
        start = int(self.offsets[i]) + RECORD_BYTES
        return self.data[start : start + int(self.records["pdu_len"][i])].tobytes()


@compiled
def _walk(buf, offsets, packed):  # type: ignore[no-untyped-def]
    """Follow pdu_len from record to record; copy each 48-byte header; return (count, end)."""
    n = len(buf)
    k = 0
    o = 0
    while o + 48 <= n:
        plen = buf[o + 46] | (buf[o + 47] << 8)
        if o + 48 + plen > n:
            return k, o
        offsets[k] = o
        for j in range(48):
            packed[k, j] = buf[o + j]
        k += 1
        o += 48 + plen
    return k, o


@compiled
def _gather(data, starts, lengths, offsets, out):  # type: ignore[no-untyped-def]
    pos = 0
    for i in range(len(starts)):
        offsets[i] = pos
        for j in range(lengths[i]):
            out[pos + j] = data[starts[i] + j]
        pos += lengths[i]
    offsets[len(starts)] = pos


def gather_payloads(
    data: np.ndarray,
    starts: np.ndarray,
    lengths: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate byte spans of `data`; return (offsets with a final end, bytes)."""
    offsets = np.empty(len(starts) + 1, dtype=np.int64)
    out = np.empty(int(lengths.sum()), dtype=np.uint8)
    _gather(data, starts.astype(np.int64), lengths.astype(np.int64), offsets, out)
    return offsets, out


def _check_magic(path: str, records: np.ndarray, offsets: np.ndarray, first_index: int = 0) -> None:
    magic = records["magic"]
    bad = np.flatnonzero((magic & MAGIC_MASK) != MAGIC)
    if len(bad):
        raw = int(magic[int(bad[0])])
        offset = int(offsets[int(bad[0])])
        i = int(bad[0]) + first_index
        swapped = int.from_bytes(raw.to_bytes(4, "little"), "big")
        if i == 0 and (swapped & MAGIC_MASK) == MAGIC:
            raise InputFormatError(
                path,
                "big-endian blktrace file: only little-endian (x86, arm64) traces are supported",
                hint="run blkparse on the machine type that recorded it and ingest its text output",
            )
        what = "not a blktrace file" if i == 0 else "corrupted blktrace file"
        raise InputFormatError(
            path,
            f"{what}: bad magic 0x{raw:08x} in record {i + 1} at "
            f"byte offset {offset} (expected 0x{MAGIC | VERSION:08x})",
            hint="pass the per-CPU files NAME.blktrace.N that blktrace wrote",
        )
    bad = np.flatnonzero((magic & ~np.uint32(MAGIC_MASK)) != VERSION)
    if len(bad):
        i = int(bad[0])
        raise InputFormatError(
            path,
            f"unsupported blktrace version {int(magic[i]) & ~MAGIC_MASK & 0xFFFFFFFF} in "
            f"record {i + first_index + 1} (only version {VERSION} is "
            "supported)",
        )


def read_records(path: str) -> RecordFile:
    """Load one per-CPU blktrace file (plain or compressed) and split it into records."""
    source = open_source(path)
    try:
        try:
            blob = source.stream.read()
        except Exception as exc:  # any decompressor failure means a damaged input
            raise InputFormatError(
                path, f"{source.compression} stream is corrupt or truncated: {exc}"
            ) from None
        buf = np.frombuffer(blob, dtype=np.uint8)
        if len(buf) == 0:
            raise InputFormatError(
                path,
                "empty blktrace file (no records)",
                hint="was the trace stopped before any IO happened?",
            )
        cap = len(buf) // RECORD_BYTES + 1
        offsets = np.empty(cap, dtype=np.int64)
        packed = np.empty((cap, RECORD_BYTES), dtype=np.uint8)
        count, end = _walk(buf, offsets, packed)
        records = packed[:count].reshape(-1).view(RECORD)
        offsets = offsets[:count]
        _check_magic(path, records, offsets)
        if len(buf) - end >= 4:
            # The record that did not fit may be garbage rather than cut short: say so first.
            stub = np.frombuffer(blob[end : end + 4] + bytes(RECORD_BYTES - 4), dtype=RECORD)
            _check_magic(path, stub, np.array([end]), first_index=count)
        if end != len(buf):
            raise InputFormatError(
                path,
                f"truncated blktrace file: record {count + 1} at byte "
                f"offset {end} is cut short ({len(buf) - end} of its bytes "
                f"present)",
                hint="copy the file again, or cut it at a record boundary",
            )
        return RecordFile(
            path, records, offsets, buf, source.compression, source.bytes_read, source.sha256()
        )
    finally:
        source.close()


_CPU_SUFFIX = re.compile(r"\.blktrace\.(\d+)(?:\.[A-Za-z0-9]+)?$")


def _is_blktrace(path: str) -> bool:
    source = open_source(path)
    try:
        head = source.stream.read(4)
    except Exception:  # undecodable input: let the text reader explain it
        return False
    finally:
        source.close()
    return head in (MAGIC_BYTES_LE, MAGIC_BYTES_BE)


def blktrace_inputs(inputs: Sequence[str]) -> list[str] | None:
    """The per-CPU files the inputs name (files, or a NAME prefix), or None for text inputs."""
    found: list[str] = []
    text: list[str] = []
    for path in inputs:
        if path != "-" and not os.path.exists(path):
            per_cpu = glob.glob(glob.escape(path) + ".blktrace.*")
            if not per_cpu:
                text.append(path)
                continue
            found.extend(sorted(per_cpu, key=_cpu_number))
        elif path != "-" and os.path.isfile(path) and _is_blktrace(path):
            found.append(path)
        else:
            text.append(path)
    if found and text:
        raise InputFormatError(
            text[0],
            f"cannot mix blkparse text with blktrace binaries ({found[0]}) in one ingest",
            hint="ingest them into separate datasets",
        )
    return found or None


def _cpu_number(path: str) -> tuple[int, str]:
    m = _CPU_SUFFIX.search(path)
    return (int(m.group(1)) if m else -1, path)
