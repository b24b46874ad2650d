"""Rewrite the ftrace blk tracer's binary stream as the per-CPU blktrace files blkparse reads."""

from __future__ import annotations

import re
import shutil
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import numpy as np

from blkscope.blk_io_trace import (
    COMM_LEN,
    MAGIC_MASK,
    OFFSET,
    RECORD_BYTES,
    RECORD_STRUCT,
    VERSION,
    note_action,
)
from blkscope.blk_io_trace import MAGIC as BLK_MAGIC
from blkscope.blk_io_trace import TN_PROCESS as TN_PROCESS_CODE
from blkscope.blk_io_trace import TN_TIMESTAMP as TN_TIMESTAMP_CODE
from blkscope.errors import InputFormatError
from blkscope.numba_kernels import compiled

# ftrace's bin output puts pid u32, cpu u32, ts u64 before each struct blk_io_trace.
FTRACE_HEADER = struct.Struct("<IIQ")
MAGIC = BLK_MAGIC | VERSION
TN_PROCESS = note_action(TN_PROCESS_CODE)
TN_TIMESTAMP = note_action(TN_TIMESTAMP_CODE)
# Byte offsets the compiled indexer reads (numba freezes these module constants).
_HEAD = FTRACE_HEADER.size
_PDU_LEN, _PID, _DEVICE, _CPU, _TIME = (
    OFFSET[f] for f in ("pdu_len", "pid", "device", "cpu", "time")
)
CHUNK = 1 << 22
WINDOW = 16 << 20  # bytes of raw.bin read and indexed at a time
LOST_MARKER = re.compile(rb"CPU:(\d+) \[LOST (\d+) EVENTS\]\n")


@dataclass
class ConvertResult:
    """What the conversion found: counts, time span and the devices and CPUs seen."""

    events: int = 0
    first_ns: int | None = None
    last_ns: int | None = None
    devices: set[int] = field(default_factory=set)
    cpus: set[int] = field(default_factory=set)
    pids: set[int] = field(default_factory=set)
    files: list[str] = field(default_factory=list)
    comms: dict[int, str] = field(default_factory=dict)
    lost: dict[int, int] = field(default_factory=dict)  # cpu -> events the ring buffer lost


def _note(seq: int, time_ns: int, action: int, pid: int, dev: int, cpu: int, pdu: bytes) -> bytes:
    return RECORD_STRUCT.pack(MAGIC, seq, time_ns, 0, 0, action, pid, dev, cpu, 0, len(pdu)) + pdu


def _comm_pdu(comm: str) -> bytes:
    return comm.encode(errors="replace")[: COMM_LEN - 1].ljust(COMM_LEN, b"\0")


def convert(
    raw: Path,
    out_dir: Path,
    name: str,
    comms: dict[int, str],
    clock_pair: tuple[int, int],
    lookup: Callable[[int], str | None] = lambda pid: None,
) -> ConvertResult:
    """Split raw.bin into out_dir/NAME.blktrace.CPU with process and wall-clock notes first."""
    result = ConvertResult()
    size = raw.stat().st_size
    if size == 0:
        return result
    # Pass 1 learns the CPUs, devices, pids and first time that the leading notes need.
    for win in _windows(raw, result.lost):
        result.events += len(win.cpu)
        lo, hi = int(win.time.min()), int(win.time.max())
        result.first_ns = lo if result.first_ns is None else min(result.first_ns, lo)
        result.last_ns = hi if result.last_ns is None else max(result.last_ns, hi)
        result.devices.update(int(d) for d in np.unique(win.dev))
        result.cpus.update(int(c) for c in np.unique(win.cpu))
        result.pids.update(int(p) for p in np.unique(win.pid))
    # saved_cmdlines is a small ring: ask `lookup` (e.g. /proc) for the pids it forgot.
    comms = dict(comms)
    for pid in result.pids - comms.keys():
        found = lookup(pid)
        if found:
            comms[pid] = found
    result.comms = comms
    devs = sorted(result.devices)
    dev_index = np.zeros(len(devs), dtype=np.uint32)
    dev_index[:] = devs
    # Sequence numbers are per (device, cpu), like the kernel's relay path; notes take the first.
    seqs = {cpu: np.zeros(len(devs), dtype=np.int64) for cpu in result.cpus}
    outs: dict[int, BinaryIO] = {}
    try:
        for cpu in sorted(result.cpus):
            outs[cpu] = open(out_dir / f"{name}.blktrace.{cpu}", "wb")  # noqa: SIM115
            outs[cpu].write(_notes(cpu, result, comms, clock_pair, seqs[cpu], devs))
        # Pass 2 copies each record to its CPU's file with the sequence rewritten.
        for win in _windows(raw, {}):
            which = np.searchsorted(dev_index, win.dev).astype(np.int64)
            for cpu in np.unique(win.cpu):
                sel = win.cpu == cpu
                data = _gather(
                    win.chunk, win.start[sel], win.pdu_len[sel], which[sel], seqs[int(cpu)]
                )
                data.tofile(outs[int(cpu)])
    finally:
        for fh in outs.values():
            fh.close()
    result.files = [f"{name}.blktrace.{cpu}" for cpu in sorted(result.cpus)]
    # blkparse -i NAME opens NAME.blktrace.0, .1, ... and stops at the first missing one.
    for cpu in range(max(result.cpus)):
        if cpu not in result.cpus:
            (out_dir / f"{name}.blktrace.{cpu}").touch()
            result.files.append(f"{name}.blktrace.{cpu}")
    return result


def _notes(
    cpu: int,
    result: ConvertResult,
    comms: dict[int, str],
    clock_pair: tuple[int, int],
    seqs: np.ndarray,
    devs: list[int],
) -> bytes:
    assert result.first_ns is not None
    first = result.first_ns
    mono_ns, wall_ns = clock_pair
    wall_at_first = wall_ns + (first - mono_ns)
    notes = []
    for i, dev in enumerate(devs):
        if cpu == min(result.cpus):
            seqs[i] += 1
            stamp = struct.pack("<II", wall_at_first // 10**9, wall_at_first % 10**9)
            notes.append(_note(int(seqs[i]), first, TN_TIMESTAMP, 0, dev, cpu, stamp))
        for pid in sorted(result.pids):
            if pid in comms:
                seqs[i] += 1
                notes.append(
                    _note(int(seqs[i]), first, TN_PROCESS, pid, dev, cpu, _comm_pdu(comms[pid]))
                )
    return b"".join(notes)


@dataclass
class _Window:
    chunk: np.ndarray  # the bytes the offsets in start refer to
    start: np.ndarray
    pdu_len: np.ndarray
    cpu: np.ndarray
    dev: np.ndarray
    pid: np.ndarray
    time: np.ndarray


def _windows(raw: Path, lost: dict[int, int]) -> Iterator[_Window]:
    """Read and index raw.bin one window at a time, so memory stays bounded for any size.

    trace_pipe puts a text line `CPU:N [LOST M EVENTS]` into the binary stream where the ring
    buffer overflowed; those are skipped and counted into `lost` (cpu -> events).
    """
    size, pos, name = raw.stat().st_size, 0, str(raw)
    with open(raw, "rb") as fh:
        while pos < size:
            fh.seek(pos)
            chunk = np.fromfile(fh, dtype=np.uint8, count=WINDOW)
            off = 0
            while True:
                n, end, bad, cols = _index(
                    chunk, off, len(chunk), (len(chunk) - off) // (_HEAD + RECORD_BYTES) + 1
                )
                if n:
                    start, pdu_len, cpu, dev, pid, time_ns = (c[:n] for c in cols)
                    yield _Window(chunk, start, pdu_len, cpu, dev, pid, time_ns)
                if bad < 0:
                    break
                marker = LOST_MARKER.match(bytes(chunk[bad : bad + 64]))
                if marker is None:
                    if bad + 64 > len(chunk) and pos + len(chunk) < size:
                        end = bad  # may be a marker cut by the window edge: read it again
                        break
                    raise _not_blk(name, pos + bad, chunk[bad : bad + 20])
                lost[int(marker[1])] = lost.get(int(marker[1]), 0) + int(marker[2])
                off = end = bad + len(marker[0])
            if end == 0:  # a record never exceeds a window (pdu_len is u16), so this is the tail
                raise InputFormatError(
                    name,
                    f"byte {pos}: {size - pos} trailing bytes are a torn record",
                    "the trace pipe was cut mid-record",
                )
            pos += end


def _not_blk(name: str, at: int, head: np.ndarray) -> InputFormatError:
    magic = int.from_bytes(bytes(head[FTRACE_HEADER.size : FTRACE_HEADER.size + 4]), "little")
    return InputFormatError(
        name,
        f"byte {at}: not a blk tracer record (magic {magic:#x})",
        "was another tracer or options/bin changed mid-capture?",
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


def read_cmdlines(path: Path) -> dict[int, str]:
    """Parse tracefs saved_cmdlines (`PID COMM` per line) into a pid -> comm map."""
    comms: dict[int, str] = {}
    for line in path.read_text(errors="replace").splitlines():
        pid, _, comm = line.strip().partition(" ")
        if pid.isdigit() and comm:
            comms[int(pid)] = comm
    return comms


def proc_comm(pid: int) -> str | None:
    """The comm of a still-running process (kernel threads and daemons outlive the capture)."""
    if pid == 0:
        return None
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip() or None
    except OSError:
        return None


def copy_cmdlines(root: Path, out: Path) -> dict[int, str]:
    """Save tracefs saved_cmdlines beside the capture and return it parsed."""
    shutil.copyfile(root / "saved_cmdlines", out)
    return read_cmdlines(out)
