"""The tables a fleet adds to each capture's dataset: who, when, how it was set up, what it held.

A fleet is `FLEET/host=H/capture=C/`: each such folder is a whole blkscope dataset plus these
three tables. None of them (nor any dataset table) stores `host` or `capture`: both come from
the folder names (hive partitioning), so a partition can be moved to another host's folder
without rewriting a file, and DuckDB and Spark read the same two columns from the same place.
"""

from __future__ import annotations

import pyarrow as pa

from blkscope.schemas._declare import field, schema

_I64 = pa.int64()
_STR = pa.string()


def _knob(name: str) -> pa.Field:
    return field(
        name.replace(".", "_"),
        _I64,
        f"`{name}` as capture.json recorded it; null when it did not (or not as an integer).",
    )


DIRTY_KNOBS = [
    "vm.dirty_writeback_centisecs",
    "vm.dirty_expire_centisecs",
    "vm.dirty_ratio",
    "vm.dirty_background_ratio",
    "vm.dirty_bytes",
    "vm.dirty_background_bytes",
]

CAPTURES = schema(
    "captures",
    "One row per capture in the fleet: when it ran, on what kernel and settings, and how much "
    "it holds. host and capture come from the partition's folder names.",
    [
        field(
            "source",
            _STR,
            "The capture folder's absolute path on the machine that ran `fleet add`.",
            nullable=False,
        ),
        field(
            "start_utc",
            pa.timestamp("us"),
            "Wall-clock time, UTC (stored without a zone so that every engine reads it as the same naive time), of the trace's first block event; null when the capture did "
            "not record the wall clock.",
        ),
        field(
            "start_wall_ns",
            _I64,
            "The same instant in ns since the epoch, exact (start_utc is rounded to us); add a "
            "table's trace-relative *_ns time to put it on the wall clock.",
        ),
        field("duration_ns", _I64, "Span of the block events: last event time - first, ns."),
        field("kernel", _STR, "Kernel release from capture.json (host.kernel); null if absent."),
        field(
            "scheduler",
            _STR,
            "IO scheduler of the traced devices from capture.json, 'name:scheduler' joined "
            "with ','; null if absent.",
        ),
        *[_knob(k) for k in DIRTY_KNOBS],
        field("workload", _STR, "The `workload` label (--label workload=...), null if none."),
        field("events", _I64, "Rows of the events table.", nullable=False),
        field("requests", _I64, "Rows of the requests table (0 when the analysis made none)."),
        field("bios", _I64, "Rows of the bios table."),
        field(
            "ingest_errors",
            _I64,
            "Malformed lines counted at ingest (stored in ingest_errors, or only counted past "
            "its limit).",
            nullable=False,
        ),
        field(
            "side_logs",
            _STR,
            "The tables ingested from the capture's side logs (writeback, iostat_log, series, "
            "...), ',' joined; '' when the folder had only the block trace.",
            nullable=False,
        ),
    ],
)

CAPTURE_LABELS = schema(
    "capture_labels",
    "The labels given to a capture (`fleet add --label K=V`), one row per label.",
    [
        field("key", _STR, "Label name (letters, digits, '_', '.', '-').", nullable=False),
        field("value", _STR, "Label value as given (printable text).", nullable=False),
    ],
)

CAPTURE_TABLES = schema(
    "capture_tables",
    "The rows of every table of a capture's dataset, one row per table (from its manifest).",
    [
        field("table_name", _STR, "The table's name.", nullable=False),
        field("rows", _I64, "Its rows.", nullable=False),
    ],
)

CAPTURE_SUMMARY = schema(
    "capture_summary",
    "The headline numbers of each device of a capture (summary.json's devices), one row per "
    "device with IO.",
    [
        field("dev_major", pa.int32(), "Device major number.", nullable=False),
        field("dev_minor", pa.int32(), "Device minor number.", nullable=False),
        field("name", _STR, "Device name (vda, loop0) when known, else null."),
        field("ios", _I64, "Bios queued (Q).", nullable=False),
        field("requests", _I64, "Requests reconstructed (D..C).", nullable=False),
        field("d2c_p50_ns", _I64, "Median D2C (driver + device) latency, ns."),
        field("d2c_p99_ns", _I64, "99th percentile D2C latency, ns."),
        field("d2c_max_ns", _I64, "Largest D2C latency, ns."),
        field("q2c_p50_ns", _I64, "Median Q2C (queue to completion) latency, ns."),
        field("q2c_p99_ns", _I64, "99th percentile Q2C latency, ns."),
        field("q2c_max_ns", _I64, "Largest Q2C latency, ns."),
        field(
            "episodes", _I64, "Latency episodes (windows where any metric spiked).", nullable=False
        ),
        field("periods", _I64, "Significant periods found.", nullable=False),
        field(
            "writeback_explains",
            pa.bool_(),
            "Whether the writeback verdict says writeback explains the episodes; null without one.",
        ),
    ],
)

FLEET_TABLES: dict[str, pa.Schema] = {
    "captures": CAPTURES,
    "capture_labels": CAPTURE_LABELS,
    "capture_tables": CAPTURE_TABLES,
    "capture_summary": CAPTURE_SUMMARY,
}
