"""The `bios` and `requests` tables counted per device and op class: what the per-device
summary and `io_ratios` read, so that neither scans the two big tables again."""

from __future__ import annotations

import pyarrow as pa

from blkscope.schemas._declare import field, schema

_KEY = [
    field("dev_major", pa.int32(), "Device major number.", nullable=False),
    field("dev_minor", pa.int32(), "Device minor number.", nullable=False),
    field(
        "op",
        pa.string(),
        "Op class (macro op_class): read, write, discard, flush or other.",
        nullable=False,
    ),
]

BIO_COUNTS = schema(
    "bio_counts",
    "The bios table counted per device and op class.",
    [
        *_KEY,
        field("bios", pa.int64(), "Bios: their Q events.", nullable=False),
        field("merged", pa.int64(), "Of them merged into a request (bios.merged).", nullable=False),
        field("split", pa.int64(), "Of them split by X (bios.split).", nullable=False),
        field("splits", pa.int64(), "X events they took: sum of pieces - 1.", nullable=False),
        field("partial", pa.int64(), "Of them cut by the trace (bios.partial).", nullable=False),
    ],
)

REQUEST_COUNTS = schema(
    "request_counts",
    "The requests table counted per device, op class and kind.",
    [
        *_KEY,
        field(
            "kind",
            pa.string(),
            "requests.kind: data, flush, flush_end, bio, orphan.",
            nullable=False,
        ),
        field("requests", pa.int64(), "Requests of the kind.", nullable=False),
        field(
            "dispatches", pa.int64(), "Their D events: sum of requests.dispatches.", nullable=False
        ),
        field("completions", pa.int64(), "Of them with a C.", nullable=False),
        field("requeues", pa.int64(), "Their R events: sum of requests.requeues.", nullable=False),
        field(
            "partial", pa.int64(), "Of them cut by the trace (requests.partial).", nullable=False
        ),
    ],
)
