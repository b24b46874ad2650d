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
import pyarrow as pa

from blkscope import _core
from blkscope.blk_io_trace import (
    COMM_LEN,
    RECORD_STRUCT,
    VERSION,
    note_action,
)
from blkscope.blk_io_trace import MAGIC as BLK_MAGIC
from blkscope.blk_io_trace import TN_PROCESS as TN_PROCESS_CODE
from blkscope.blk_io_trace import TN_TIMESTAMP as TN_TIMESTAMP_CODE
from blkscope.errors import InputFormatError

# ftrace's bin output puts pid u32, cpu u32, ts u64 before each struct blk_io_trace.
FTRACE_HEADER = struct.Struct("<IIQ")
MAGIC = BLK_MAGIC | VERSION
TN_PROCESS = note_action(TN_PROCESS_CODE)
TN_TIMESTAMP = note_action(TN_TIMESTAMP_CODE)
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
                data, last = _core.renumbered_blk_records(
                    win.chunk,
                    pa.array(win.start[sel]),
                    pa.array(win.pdu_len[sel]),
                    pa.array(which[sel]),
                    seqs[int(cpu)].tolist(),
                )
                seqs[int(cpu)][:] = last
                outs[int(cpu)].write(data)
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
    chunk: bytes  # the bytes the offsets in start refer to
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
            chunk = fh.read(WINDOW)
            off = 0
            while True:
                end, bad, found = _core.index_ftrace_records(chunk, off, len(chunk))
                cols = pa.record_batch(found)
                if cols.num_rows:
                    start, pdu_len, cpu, dev, pid, time_ns = (c.to_numpy() for c in cols.columns)
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


def _not_blk(name: str, at: int, head: bytes) -> InputFormatError:
    magic = int.from_bytes(head[FTRACE_HEADER.size : FTRACE_HEADER.size + 4], "little")
    return InputFormatError(
        name,
        f"byte {at}: not a blk tracer record (magic {magic:#x})",
        "was another tracer or options/bin changed mid-capture?",
    )


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
