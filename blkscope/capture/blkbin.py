"""Rewrite the ftrace blk tracer's binary stream as the per-CPU blktrace files blkparse reads."""

from __future__ import annotations

import shutil
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from blkscope.errors import InputFormatError

# ftrace's bin output puts pid u32, cpu u32, ts u64 before each struct blk_io_trace.
FTRACE_HEADER = struct.Struct("<IIQ")
# struct blk_io_trace: magic, sequence, time, sector, bytes, action, pid, device, cpu, error,
# pdu_len
BLK_IO_TRACE = struct.Struct("<IIQQIIIIIHH")
MAGIC = 0x65617407
MAGIC_MASK = 0xFFFFFF00
TN_PROCESS = 1 << 26  # BLK_TC_NOTIFY category with action __BLK_TN_PROCESS (0)
TN_TIMESTAMP = (1 << 26) | 1
COMM_LEN = 16
CHUNK = 1 << 22


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


def iter_records(stream: BinaryIO, name: str) -> Iterator[tuple[list[int], bytes]]:
    """Yield (blk_io_trace fields, pdu) per ftrace entry; a torn tail raises InputFormatError."""
    buf = b""
    offset = 0  # file offset of buf[0], for error messages
    while True:
        chunk = stream.read(CHUNK)
        buf += chunk
        pos = 0
        need = FTRACE_HEADER.size + BLK_IO_TRACE.size
        while len(buf) - pos >= need:
            rec = list(BLK_IO_TRACE.unpack_from(buf, pos + FTRACE_HEADER.size))
            if rec[0] & MAGIC_MASK != MAGIC & MAGIC_MASK:
                raise InputFormatError(name, f"byte {offset + pos}: not a blk tracer record "
                                       f"(magic {rec[0]:#x})",
                                       "was another tracer or options/bin changed mid-capture?")
            end = pos + need + rec[10]
            if end > len(buf):
                break
            yield rec, bytes(buf[pos + need:end])
            pos = end
        offset += pos
        buf = buf[pos:]
        if not chunk:
            break
    if buf:
        raise InputFormatError(name, f"byte {offset}: {len(buf)} trailing bytes are a torn record",
                               "the trace pipe was cut mid-record")


def _note(seq: int, time_ns: int, action: int, pid: int, dev: int, cpu: int, pdu: bytes) -> bytes:
    return BLK_IO_TRACE.pack(MAGIC, seq, time_ns, 0, 0, action, pid, dev, cpu, 0,
                             len(pdu)) + pdu


def _comm_pdu(comm: str) -> bytes:
    return comm.encode(errors="replace")[:COMM_LEN - 1].ljust(COMM_LEN, b"\0")


def convert(raw: Path, out_dir: Path, name: str, comms: dict[int, str],
            clock_pair: tuple[int, int]) -> ConvertResult:
    """Split raw.bin into out_dir/NAME.blktrace.CPU with process and wall-clock notes first."""
    result = ConvertResult()
    bodies: dict[int, BinaryIO] = {}
    # Sequence numbers are per (device, cpu), like the kernel's relay path; notes take the first.
    seqs: dict[tuple[int, int], int] = {}
    pending: list[tuple[list[int], bytes]] = []
    try:
        with open(raw, "rb") as stream:
            for rec, pdu in iter_records(stream, str(raw)):
                pending.append((rec, pdu))
                _account(result, rec)
                if len(pending) >= 65536:
                    _spill(pending, bodies, out_dir, name)
            _spill(pending, bodies, out_dir, name)
        for body in bodies.values():
            body.close()
        if result.first_ns is None:
            return result
        for cpu in sorted(result.cpus):
            _write_cpu_file(out_dir, name, cpu, result, comms, clock_pair, seqs)
        # blkparse -i NAME opens NAME.blktrace.0, .1, ... and stops at the first missing one.
        for cpu in range(max(result.cpus)):
            empty = out_dir / f"{name}.blktrace.{cpu}"
            if cpu not in result.cpus:
                empty.touch()
                result.files.append(empty.name)
    finally:
        for body in bodies.values():
            body.close()
        for cpu in bodies:
            (out_dir / f".{name}.body.{cpu}").unlink(missing_ok=True)
    return result


def _account(result: ConvertResult, rec: list[int]) -> None:
    result.events += 1
    t = rec[2]
    result.first_ns = t if result.first_ns is None else min(result.first_ns, t)
    result.last_ns = t if result.last_ns is None else max(result.last_ns, t)
    result.devices.add(rec[7])
    result.cpus.add(rec[8])
    result.pids.add(rec[6])


def _spill(pending: list[tuple[list[int], bytes]], bodies: dict[int, BinaryIO],
           out_dir: Path, name: str) -> None:
    for rec, pdu in pending:
        body = bodies.get(rec[8])
        if body is None:
            body = bodies[rec[8]] = open(out_dir / f".{name}.body.{rec[8]}", "wb")  # noqa: SIM115
        body.write(BLK_IO_TRACE.pack(*rec) + pdu)
    pending.clear()


def _write_cpu_file(out_dir: Path, name: str, cpu: int, result: ConvertResult,
                    comms: dict[int, str], clock_pair: tuple[int, int],
                    seqs: dict[tuple[int, int], int]) -> None:
    assert result.first_ns is not None
    first = result.first_ns
    mono_ns, wall_ns = clock_pair
    wall_at_first = wall_ns + (first - mono_ns)
    path = out_dir / f"{name}.blktrace.{cpu}"
    with open(path, "wb") as out:
        for dev in sorted(result.devices):
            def bump(dev: int = dev) -> int:
                seqs[dev, cpu] = seqs.get((dev, cpu), 0) + 1
                return seqs[dev, cpu]
            if cpu == min(result.cpus):
                stamp = struct.pack("<II", wall_at_first // 10**9, wall_at_first % 10**9)
                out.write(_note(bump(), first, TN_TIMESTAMP, 0, dev, cpu, stamp))
            for pid in sorted(result.pids):
                if pid in comms:
                    out.write(_note(bump(), first, TN_PROCESS, pid, dev, cpu,
                                    _comm_pdu(comms[pid])))
        with open(out_dir / f".{name}.body.{cpu}", "rb") as body:
            _copy_renumbered(body, out, cpu, seqs)
    result.files.append(path.name)


def _copy_renumbered(body: BinaryIO, out: BinaryIO, cpu: int,
                     seqs: dict[tuple[int, int], int]) -> None:
    # The body holds whole records we wrote ourselves, so no magic check is needed here.
    buf = b""
    while True:
        chunk = body.read(CHUNK)
        buf += chunk
        pos = 0
        parts: list[bytes] = []
        while len(buf) - pos >= BLK_IO_TRACE.size:
            rec = list(BLK_IO_TRACE.unpack_from(buf, pos))
            end = pos + BLK_IO_TRACE.size + rec[10]
            if end > len(buf):
                break
            key = (rec[7], cpu)
            seqs[key] = rec[1] = seqs.get(key, 0) + 1
            parts.append(BLK_IO_TRACE.pack(*rec))
            parts.append(buf[pos + BLK_IO_TRACE.size:end])
            pos = end
        out.write(b"".join(parts))
        buf = buf[pos:]
        if not chunk:
            break


def read_cmdlines(path: Path) -> dict[int, str]:
    """Parse tracefs saved_cmdlines (`PID COMM` per line) into a pid -> comm map."""
    comms: dict[int, str] = {}
    for line in path.read_text(errors="replace").splitlines():
        pid, _, comm = line.strip().partition(" ")
        if pid.isdigit() and comm:
            comms[int(pid)] = comm
    return comms


def copy_cmdlines(root: Path, out: Path) -> dict[int, str]:
    """Save tracefs saved_cmdlines beside the capture and return it parsed."""
    shutil.copyfile(root / "saved_cmdlines", out)
    return read_cmdlines(out)
