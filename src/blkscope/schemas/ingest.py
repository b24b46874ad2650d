"""Tables written by ingest besides `events`: blkparse's own summary, the ingest errors and
each task's last plug."""

from __future__ import annotations

import pyarrow as pa

from blkscope.schemas._declare import field, schema

BLKPARSE_SUMMARY = schema(
    "blkparse_summary",
    "blkparse's trailing statistics blocks (per CPU, Total, per process), one row per printed number.",
    [
        field(
            "input_id",
            pa.int16(),
            "Index of the input file in manifest.json 'inputs'.",
            nullable=False,
        ),
        field(
            "device",
            pa.string(),
            "Device name as blkparse printed it in the block header, e.g. 'trace' or '8,0'; '' for blkparse -s per-process blocks, which count all devices together.",
            nullable=False,
        ),
        field(
            "dev_major",
            pa.int32(),
            "Device major, when it can be told from the name or the events; else null.",
        ),
        field("dev_minor", pa.int32(), "Device minor, when known; else null."),
        field(
            "block",
            pa.string(),
            "Which block: 'CPU<n>', 'Total', 'process <comm (pid)>', or 'device' for the trailing lines.",
            nullable=False,
        ),
        field("cpu", pa.int32(), "CPU number for CPU<n> blocks; null otherwise."),
        field(
            "metric",
            pa.string(),
            "What the number counts, e.g. writes_queued, writes_queued_kib, read_depth, events, throughput_read_kib_s.",
            nullable=False,
        ),
        field(
            "value",
            pa.int64(),
            "The number with blkparse's K/M/G suffix resolved (x1000 each, as blkparse divides), so the true value lies in [value, value + scale); null when it does not fit int64 (a wrapped-around counter).",
            nullable=True,
        ),
        field(
            "scale",
            pa.int64(),
            "Resolution of value implied by the suffix: 1, 1000, 1000000, ...",
            nullable=False,
        ),
        field(
            "text", pa.string(), "The number exactly as printed, suffix included.", nullable=False
        ),
        field("line_no", pa.int64(), "Line the number was printed on.", nullable=False),
    ],
)

INGEST_ERRORS = schema(
    "ingest_errors",
    "Lines of the inputs that are neither events nor part of blkparse's summary, with why.",
    [
        field(
            "input_id",
            pa.int16(),
            "Index of the input file in manifest.json 'inputs'.",
            nullable=False,
        ),
        field("line_no", pa.int64(), "1-based line number in that input.", nullable=False),
        field(
            "raw",
            pa.string(),
            "The line as read (invalid UTF-8 replaced, no newline).",
            nullable=False,
        ),
        field("reason", pa.string(), "Why the line was not taken as an event.", nullable=False),
    ],
)

LAST_PLUGS = schema(
    "last_plugs",
    "Per task that plugged, the time of its last plug (P) event, counted by ingest as it wrote "
    "the events: what the streaming pass must know before it starts (after a task's last P no "
    "P can join its open plug session).",
    [
        field("pid", pa.int64(), "Process id of the task (events.pid).", nullable=False),
        field(
            "last_plug_ns",
            pa.int64(),
            "The largest events.time_ns of the task's P events.",
            nullable=False,
        ),
    ],
)
