"""The `events` table: one row per blkparse event line, lossless."""

from __future__ import annotations

import pyarrow as pa

from blkscope.schemas._declare import field, schema

# Every value of events.source and what it means, declared once.
EVENT_SOURCES: dict[str, str] = {
    "blkparse": "blkparse default-format text",
    "blktrace": "blktrace per-CPU binary files (or the ftrace blk tracer's binary records)",
    "ftrace-blk": "text of the ftrace blk tracer (current_tracer=blk, options/bin=0), with or without blk_classic",
    "ftrace": "block:* tracepoint lines of ftrace text (tracefs trace or trace_pipe)",
    "trace-cmd": "block:* tracepoint lines of `trace-cmd report`",
    "perf": "block:* tracepoint lines of `perf script`",
}

EVENTS = schema(
    "events",
    "One row per block-layer event line, in input order, keeping every field blkparse printed.",
    [
        field(
            "dev_major",
            pa.int32(),
            "Device major number (the device the event is on; for A, the target device). Tracepoint P and U carry no device: they take the device of the same task's neighbouring request event (manifest inputs[].lacks).",
            nullable=False,
        ),
        field("dev_minor", pa.int32(), "Device minor number.", nullable=False),
        field("cpu", pa.int32(), "CPU that logged the event.", nullable=False),
        field(
            "seq",
            pa.int64(),
            "Per-CPU sequence number as printed (0 for m messages, and for tracepoint text, which carries none).",
            nullable=False,
        ),
        field(
            "time_ns",
            pa.int64(),
            "Event time in integer nanoseconds since the trace's first event (blkparse's clock); tracepoint text printed in microseconds keeps that resolution (manifest inputs[].time_resolution_ns).",
            nullable=False,
        ),
        field(
            "pid",
            pa.int64(),
            "Process id that was current when the event was logged (often 0 or an irq thread for C).",
            nullable=False,
        ),
        field(
            "action",
            pa.string(),
            "blkparse action letters: Q G I D C M F P U UT X A R S T B m.",
            nullable=False,
        ),
        field(
            "rwbs",
            pa.string(),
            "RWBS string exactly as printed, e.g. WS, RA, FWFSM, FN; also the letters of old and new kernels (B barrier, E secure, U atomic, DE secure erase, F flush op, WZ write zeroes, ZA/ZR/ZF/ZO/ZC zone ops).",
            nullable=False,
        ),
        field(
            "op",
            pa.string(),
            "Operation from RWBS: R read, W write (also WZ write zeroes and ZA zone append), D discard (also DE secure erase), N none (no data: also a flush op F and zone management).",
            nullable=False,
        ),
        field(
            "flush",
            pa.bool_(),
            "RWBS has a leading F (preflush requested) or is a flush op (F, FF in tracepoint text).",
            nullable=False,
        ),
        field("fua", pa.bool_(), "RWBS has F after the op: forced unit access.", nullable=False),
        field("readahead", pa.bool_(), "RWBS has A: readahead.", nullable=False),
        field("sync", pa.bool_(), "RWBS has S: synchronous.", nullable=False),
        field("meta", pa.bool_(), "RWBS has M: filesystem metadata.", nullable=False),
        field(
            "sector",
            pa.int64(),
            "Start sector (512-byte units); null when blkparse printed none (zero-length Q/G/I/D, P, U, m).",
        ),
        field(
            "nsectors",
            pa.int32(),
            "Length in 512-byte sectors; 0 when blkparse omitted '+ n' after a sector; null when no sector.",
        ),
        field(
            "split_sector",
            pa.int64(),
            "For X: the sector where the bio was split (the number after '/').",
        ),
        field(
            "remap_dev_major", pa.int32(), "For A: major of the device the IO was remapped from."
        ),
        field(
            "remap_dev_minor", pa.int32(), "For A: minor of the device the IO was remapped from."
        ),
        field("remap_sector", pa.int64(), "For A: sector on the device the IO was remapped from."),
        field("error", pa.int32(), "For C and R: the error code in brackets (0 = success)."),
        field(
            "comm",
            pa.string(),
            "Process name in brackets; null for C, R, A and m, which print none. Invalid UTF-8 bytes are replaced here and kept in comm_raw.",
        ),
        field(
            "comm_raw",
            pa.binary(),
            "Original comm bytes, only when they are not valid UTF-8; null otherwise.",
        ),
        field("depth", pa.int32(), "For U, UT and T: the number of requests unplugged."),
        field(
            "message",
            pa.string(),
            "For m: the message text exactly as printed after the RWBS column.",
        ),
        field(
            "pc_bytes",
            pa.int64(),
            "For SCSI pass-through (PC) Q/I/D/B: the byte count printed instead of a sector.",
        ),
        field(
            "pdu", pa.string(), "For PC events: the hex payload printed in parentheses, as printed."
        ),
        field(
            "elapsed",
            pa.int64(),
            "The '(elapsed)' value blkparse -t prints on D/I/Q/C, in nanoseconds; null otherwise.",
        ),
        field(
            "cgroup",
            pa.string(),
            "The cgroup printed between pid and action, as printed: 'ino,gen' in hex on blkparse m lines of kernels with cgroup info, 'low32,high32' on blk-tracer text with the blk_cgroup option; null otherwise.",
        ),
        field(
            "source",
            pa.string(),
            "Which kind of input the row was read from: "
            + "; ".join(f"'{name}' {what}" for name, what in EVENT_SOURCES.items())
            + ". What each tracepoint source lacks is in manifest.json inputs[].lacks.",
            nullable=False,
        ),
        field(
            "raw_line",
            pa.binary(),
            "The input line's exact bytes, kept only when re-rendering the row in blkparse's format would not give it back (spacing copied from a terminal or mail, tabs, a leading ^C): null on every line blkparse printed itself, and on tracepoint text.",
        ),
        field(
            "line_no",
            pa.int64(),
            "1-based line number of the event in its input file; for blktrace binaries, the line blkparse prints it on (its position in blkparse's print order).",
            nullable=False,
        ),
        field(
            "input_id",
            pa.int16(),
            "Index of the input file in manifest.json 'inputs'; for blktrace binaries, the trace's first per-CPU file.",
            nullable=False,
        ),
    ],
)
