"""Decode blktrace payloads: big-endian u64s, remaps, messages, SCSI commands, comms by pid (the
legacy decoder's, legacy_decode.py)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from blkscope.ingest.blktrace.records import RECORD_BYTES, RecordFile
from blkscope.numba_kernels import compiled

# Low-half flag of `action`: the payload starts with an 8-byte cgroup id.
TA_CGROUP = 1 << 8


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


def be64_payload(
    files: Sequence[RecordFile], file_idx: np.ndarray, rec_idx: np.ndarray, skip: np.ndarray
) -> np.ndarray:
    """Read the big-endian u64 at the start of each selected payload (after any cgroup id)."""
    out = np.zeros(len(rec_idx), dtype=np.uint64)
    for f_i, f in enumerate(files):
        sel = np.flatnonzero(file_idx == f_i)
        if not len(sel):
            continue
        starts = f.offsets[rec_idx[sel]] + 48 + skip[sel]
        raw = f.data[starts[:, None] + np.arange(8)]
        out[sel] = raw.copy().view(">u8").reshape(-1)
    return out


def message_texts(
    files: Sequence[RecordFile], file_idx: np.ndarray, rec_idx: np.ndarray, recs: np.ndarray
) -> pa.Array:
    """The text of message notes (there can be millions, e.g. bfq's), without trailing NULs."""
    skip = np.where(recs["action"] & TA_CGROUP, 8, 0)
    pieces = []
    order = []
    for f_i, f in enumerate(files):
        sel = np.flatnonzero(file_idx == f_i)
        starts = f.offsets[rec_idx[sel]] + RECORD_BYTES + skip[sel]
        lengths = np.maximum(recs["pdu_len"][sel].astype(np.int64) - skip[sel], 0)
        offsets, data = gather_payloads(f.data, starts, lengths)
        pieces.append(_strip_nuls(offsets, data))
        order.append(sel)
    texts = pa.concat_arrays(pieces) if pieces else pa.array([], pa.string())
    return texts.take(pa.array(np.argsort(np.concatenate(order)) if order else []))


def _strip_nuls(offsets: np.ndarray, data: np.ndarray) -> pa.Array:
    binary = pa.BinaryArray.from_buffers(
        pa.binary(),
        len(offsets) - 1,
        [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)],
    )
    if np.any(data == 0):
        binary = pa.array(
            [None if b is None else b.split(b"\x00", 1)[0] for b in binary.to_pylist()], pa.binary()
        )
    try:
        return binary.cast(pa.string())
    except pa.ArrowInvalid:  # invalid UTF-8 in a message: replace, as for comms
        return pa.array([b.decode("utf-8", "replace") for b in binary.to_pylist()], pa.string())


def remap_payloads(
    files: Sequence[RecordFile],
    file_idx: np.ndarray,
    rec_idx: np.ndarray,
    is_a: np.ndarray,
    skip: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """A's payload: be32 device_from, be32 device_to, be64 sector_from (blk_io_trace_remap);
    returns (device_from, sector_from) as unsigned, zero where a row has no such payload."""
    n = len(is_a)
    rows = np.flatnonzero(is_a)
    dev_from = np.zeros(n, dtype=np.uint32)
    sector = np.zeros(n, dtype=np.uint64)
    for f_i, f in enumerate(files):
        sel = rows[file_idx[rows] == f_i]
        sel = sel[f.records["pdu_len"][rec_idx[sel]] >= skip[sel] + 16]
        starts = f.offsets[rec_idx[sel]] + RECORD_BYTES + skip[sel]
        raw = f.data[starts[:, None] + np.arange(16)]
        dev_from[sel] = raw[:, :4].copy().view(">u4").reshape(-1)
        sector[sel] = raw[:, 8:].copy().view(">u8").reshape(-1)
    return dev_from, sector


def remap_columns(
    files: Sequence[RecordFile],
    file_idx: np.ndarray,
    rec_idx: np.ndarray,
    is_a: np.ndarray,
    skip: np.ndarray,
) -> list[pa.Array]:
    """remap_dev_major, remap_dev_minor and remap_sector of the A rows (null elsewhere)."""
    dev_from, sector = remap_payloads(files, file_idx, rec_idx, is_a, skip)
    dev = dev_from.astype(np.int64)
    valid = is_a.astype(bool)
    return [
        pa.array(dev >> 20, pa.int32(), mask=~valid),
        pa.array(dev & 0xFFFFF, pa.int32(), mask=~valid),
        pa.array(sector.astype(np.int64), pa.int64(), mask=~valid),
    ]


def pc_payload_hex(
    files: Sequence[RecordFile], file_idx: np.ndarray, rec_idx: np.ndarray, rows: np.ndarray, n: int
) -> pa.Array:
    """SCSI pass-through payloads as blkparse prints them, '0a 0b 0c' (rare: a Python loop)."""
    texts: list[str | None] = [None] * n
    for i in rows.tolist():
        pdu = files[int(file_idx[i])].pdu(int(rec_idx[i]))
        if pdu:
            texts[i] = " ".join(f"{b:02x}" for b in pdu)
    return pa.array(texts, pa.string())


def comm_arrays(
    pid: np.ndarray,
    has_comm: np.ndarray,
    comms: dict[int, str],
) -> list[pa.Array]:
    """comm and comm_raw by pid, through the distinct pids so big traces stay fast."""
    uniq, inverse = np.unique(pid, return_inverse=True)
    # blkparse prints a NULL name for a pid without a process note, which glibc shows as "(null)".
    names = [comms.get(int(p), "(null)") for p in uniq]
    raws = [n.encode("utf-8", "surrogateescape") for n in names]
    text = [b.decode("utf-8", "replace") for b in raws]
    raw_or_none = [b if t != n else None for b, t, n in zip(raws, text, names, strict=True)]
    take = pa.array(inverse.reshape(-1), pa.int64(), mask=~has_comm)
    comm = pa.array(text, pa.string()).take(take)
    raw = pa.array(raw_or_none, pa.binary()).take(take)
    return [comm, raw]


def cgroup_column(
    files: Sequence[RecordFile], file_idx: np.ndarray, rec_idx: np.ndarray, rows: np.ndarray, n: int
) -> pa.Array:
    """'ino,gen' in hex, as blkparse prints before a cgroup-tagged message; null elsewhere.

    The payload's first 8 bytes are the u32 inode and generation of the cgroup (native order).
    bfq tags millions of messages with a handful of cgroups: format the distinct ones only.
    """
    ids = np.zeros(len(rows), dtype=np.uint64)
    for f_i, f in enumerate(files):
        sel = np.flatnonzero(file_idx[rows] == f_i)
        if len(sel):
            starts = f.offsets[rec_idx[rows[sel]]] + RECORD_BYTES
            ids[sel] = f.data[starts[:, None] + np.arange(8)].copy().view("<u8").reshape(-1)
    uniq, inverse = np.unique(ids, return_inverse=True)
    names = pa.array([f"{int(u) & 0xFFFFFFFF:x},{int(u) >> 32:x}" for u in uniq], pa.string())
    index = np.full(n, -1, dtype=np.int64)
    index[rows] = inverse.reshape(-1)
    return names.take(pa.array(index, mask=index < 0))
