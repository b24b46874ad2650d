"""The `requests` table: one row per block request's dispatch-to-completion life."""

from __future__ import annotations

import pyarrow as pa

from blkscope.schemas._declare import field, schema

REQUESTS = schema(
    "requests",
    "One row per request reconstructed from D/R/C events, paired per (device, sector, length) in "
    "time order; flushes (D FN / C FN 0) pair on their own key.",
    [
        field("dev_major", pa.int32(), "Device major number.", nullable=False),
        field("dev_minor", pa.int32(), "Device minor number.", nullable=False),
        field(
            "op",
            pa.string(),
            "R read, W write, D discard, N no data, F flush (D FN / C FN).",
            nullable=False,
        ),
        field("sector", pa.int64(), "Start sector at dispatch; null for a flush."),
        field(
            "nsectors",
            pa.int32(),
            "Length in 512-byte sectors (0 for flushes and flush-sequence ends).",
        ),
        field(
            "kind",
            pa.string(),
            "'data' (sized or zero-length D..C), 'flush' (D FN..C FN), or 'flush_end': "
            "the zero-length C that ends a flush sequence (C WS 0 [0], C WSM 524656 [0]), "
            "which has no D; or 'bio': a completion on a bio-based device (device mapper, md), "
            "which traces Q and C but never D; or 'orphan': a C without D that follows an earlier "
            "C on its key mid-trace (a lost D or a duplicate C), always partial.",
            nullable=False,
        ),
        field(
            "flags",
            pa.string(),
            "RWBS of the request's first event (its D, or its C when no D was traced).",
            nullable=False,
        ),
        field(
            "q_time_ns",
            pa.int64(),
            "Earliest Q among the bios that rode in the request (for a flush_end, the Q of its "
            "preflush bio); the kernel's await starts about here. Null when none was traced.",
        ),
        field(
            "g_time_ns",
            pa.int64(),
            "Time of the G that allocated the request (the kernel's start of its await); null "
            "for flushes and requests allocated before the trace.",
        ),
        field(
            "acct_start_ns",
            pa.int64(),
            "Where the kernel's disk statistics (iostat await, aqu-sz) start this request's "
            "clock: since Linux 6.9 every request of one plug takes the time first read in that "
            "plug, so a flusher's whole batch starts at its first Q. Estimated from the "
            "submitter's Q/P/U/UT events (rust/src/pass/plug.rs). Kernels before 6.9 (as "
            "capture.json records them) read it at allocation: g_time_ns.",
        ),
        field(
            "first_d_time_ns",
            pa.int64(),
            "Time of the first D (ns since the trace's first event); null if none.",
        ),
        field(
            "d_time_ns",
            pa.int64(),
            "Time of the last D: after a requeue the request is dispatched again and "
            "D2C starts from this one.",
        ),
        field("c_time_ns", pa.int64(), "Completion time; null when the trace ended first."),
        field(
            "d2c_ns",
            pa.int64(),
            "c_time_ns - d_time_ns: driver and device time in ns; null when partial.",
        ),
        field(
            "requeues", pa.int32(), "Number of R (requeue) events of this request.", nullable=False
        ),
        field(
            "dispatches",
            pa.int32(),
            "Number of D events (1 + requeues for a whole request).",
            nullable=False,
        ),
        field("error", pa.int32(), "Error code of the C (0 = success)."),
        field(
            "partial",
            pa.bool_(),
            "True when the trace cut the request: C without any D (began before the "
            "trace) or D without C (in flight at the end).",
            nullable=False,
        ),
        field(
            "pid",
            pa.int64(),
            "Pid of the process that allocated the request (its G); null if not traced.",
        ),
        field(
            "process",
            pa.string(),
            "Comm of the process that allocated the request (its G); for a request "
            "allocated before the trace, the comm on its D.",
        ),
        field(
            "d_eid",
            pa.int64(),
            "Event id (input_id << 40 | line_no) of the first D; bios link here.",
        ),
        field("c_eid", pa.int64(), "Event id of the C."),
    ],
)
