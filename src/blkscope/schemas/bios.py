"""The `bios` table: one row per queued bio (Q), followed through splits and merges."""

from __future__ import annotations

import pyarrow as pa

from blkscope.schemas._declare import field, schema

BIOS = schema(
    "bios",
    "One row per Q event: the bio's life through split (X), new request (G) or merge (M/F), "
    "dispatch and completion of the request(s) its pieces rode in.",
    [
        field("dev_major", pa.int32(), "Device major number.", nullable=False),
        field("dev_minor", pa.int32(), "Device minor number.", nullable=False),
        field(
            "op",
            pa.string(),
            "R read, W write, D discard, N no data (from the Q's RWBS).",
            nullable=False,
        ),
        field("flags", pa.string(), "The Q's RWBS as printed, e.g. WS, FWFSM.", nullable=False),
        field("sector", pa.int64(), "Start sector; null for a data-less flush (Q FWS)."),
        field("nsectors", pa.int32(), "Length in 512-byte sectors."),
        field("pid", pa.int64(), "Submitting process id.", nullable=False),
        field("comm", pa.string(), "Submitting process name."),
        field("q_time_ns", pa.int64(), "Q time, ns since the trace's first event.", nullable=False),
        field(
            "g_time_ns",
            pa.int64(),
            "Earliest G (request allocated) among its pieces; null if all merged.",
        ),
        field(
            "m_time_ns",
            pa.int64(),
            "Earliest M/F (merged into an existing request) among its pieces.",
        ),
        field(
            "i_time_ns",
            pa.int64(),
            "Earliest I (inserted into the scheduler) among its pieces; null on "
            "blk-mq paths that dispatch without I.",
        ),
        field(
            "d_time_ns",
            pa.int64(),
            "Earliest last-D among the requests its pieces rode in (a bio "
            "inherits its request's D; after a requeue the last D counts).",
        ),
        field(
            "c_time_ns",
            pa.int64(),
            "Completion: the last C among its requests, or the end of its flush "
            "sequence for a preflush bio; null when partial.",
        ),
        field("q2c_ns", pa.int64(), "c_time_ns - q_time_ns; null when partial."),
        field("d2c_ns", pa.int64(), "Last C of its requests minus d_time_ns; null when partial."),
        field(
            "merged",
            pa.bool_(),
            "Some piece was merged into an existing request (M or F).",
            nullable=False,
        ),
        field("split", pa.bool_(), "The bio was split (X) into several pieces.", nullable=False),
        field("pieces", pa.int32(), "Number of pieces: 1 + number of splits.", nullable=False),
        field("requeues", pa.int32(), "Sum of requeues of the requests it rode in."),
        field(
            "status",
            pa.string(),
            "'completed' (own request), 'merged' (merged and completed) or 'partial' "
            "(cut by the trace start/end or a piece lost).",
            nullable=False,
        ),
        field("partial", pa.bool_(), "status = 'partial'.", nullable=False),
        field(
            "remap_dev_major",
            pa.int32(),
            "When an A (remap) on this device and sector came "
            "just before the Q: the major of the device it was remapped from.",
        ),
        field("remap_dev_minor", pa.int32(), "Minor of the device it was remapped from."),
        field("remap_sector", pa.int64(), "Sector on the device it was remapped from."),
        field("q_eid", pa.int64(), "Event id (input_id << 40 | line_no) of the Q.", nullable=False),
        field(
            "d_eid",
            pa.int64(),
            "Event id of the first D of the request its first piece rode in "
            "(links to requests.d_eid).",
        ),
    ],
)
