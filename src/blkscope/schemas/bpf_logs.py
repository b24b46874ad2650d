"""Tables from bcc / bpftrace tool logs: writeback.bt, biosnoop, latency and size histograms."""

from __future__ import annotations

import pyarrow as pa

from blkscope.schemas._declare import field, schema

T_NS_DOC = (
    "Event time on the capture timeline: ns since the trace's first block event "
    "(events.time_ns), set by folder ingest's clock model (manifest clock.sources); null "
    "when the source could not be placed or was parsed alone."
)
LINE_DOC = "1-based line number of the row in its input file."

WRITEBACK = schema(
    "writeback",
    "One row per writeback work item logged by writeback.bt (`TIME DEVICE PAGES REASON ms`, "
    "wall-clock time of day), its monotonic variant (`MONO_NS DEVICE PAGES REASON us`) or the "
    "raw writeback_start/writeback_written tracepoint text blkscope capture keeps "
    "(writeback_trace.txt).",
    [
        field(
            "clock",
            pa.string(),
            "What time_ns counts: 'time_of_day' (writeback.bt's "
            "HH:MM:SS wall clock, date unknown) or 'monotonic' (CLOCK_MONOTONIC ns).",
            nullable=False,
        ),
        field(
            "time_ns",
            pa.int64(),
            "Time as printed, in ns. time_of_day: ns since the "
            "midnight before the first line, plus 24 h for every midnight the log crosses "
            "(1 s resolution). monotonic: the MONO_NS value.",
            nullable=False,
        ),
        field("t_ns", pa.int64(), T_NS_DOC),
        field(
            "device", pa.string(), "DEVICE as printed: the bdi name, 'major:minor'.", nullable=False
        ),
        field("dev_major", pa.int32(), "Major number when DEVICE is 'major:minor', else null."),
        field("dev_minor", pa.int32(), "Minor number when DEVICE is 'major:minor', else null."),
        field(
            "pages_left",
            pa.int64(),
            "The work item's nr_pages when it ended, as the log printed it: what it still had "
            "to write (nr_pages counts down from what it was asked to write), not what it "
            "wrote. writeback.bt prints it whole; writeback_ns.bt and earlier versions of "
            "blkscope capture printed it cut to 16 bits (nr_pages & 0xffff). Null for a work "
            "item with no page limit (sync, background: it counts down from LONG_MAX).",
        ),
        field(
            "pages_written",
            pa.int64(),
            "Pages the work item wrote: nr_pages at its writeback_start minus nr_pages at its "
            "writeback_written. Exact, from the raw tracepoint text (writeback_trace.txt); null "
            "for logs that print only the end (writeback.bt, writeback_ns.bt).",
        ),
        field(
            "reason",
            pa.string(),
            "REASON: background, vmscan, sync, periodic, laptop_timer, "
            "free_more_memory, fs_free_space, forker_thread.",
            nullable=False,
        ),
        field(
            "duration_ns",
            pa.int64(),
            "How long the work item ran (ms or us column), exact integer ns.",
            nullable=False,
        ),
        field("line_no", pa.int64(), LINE_DOC, nullable=False),
    ],
)

BIOSNOOP = schema(
    "biosnoop",
    "One row per completed IO logged by biosnoop: bcc (`TIME(s) COMM PID DISK T SECTOR BYTES "
    "[QUE(ms)] LAT(ms)`, T = R/W), libbpf-tools (T = full RWBS; TIMESTAMP instead of TIME(s)) "
    "or bpftrace biosnoop.bt (`TIME(ms) DISK COMM PID LAT(ms)`).",
    [
        field(
            "clock",
            pa.string(),
            "What time_ns counts: 'since_start' (TIME(s)/TIME(ms): "
            "time since the tool started) or 'timestamp' (TIMESTAMP column, as printed).",
            nullable=False,
        ),
        field(
            "time_ns",
            pa.int64(),
            "The time column as printed, exact, in ns (at the "
            "column's printed resolution: us for TIME(s), ms for TIME(ms)).",
            nullable=False,
        ),
        field("t_ns", pa.int64(), T_NS_DOC),
        field(
            "comm",
            pa.string(),
            "COMM: process name, may hold spaces; '' when the tool printed none.",
            nullable=False,
        ),
        field("pid", pa.int64(), "Process id biosnoop attributed the IO to.", nullable=False),
        field("disk", pa.string(), "DISK name as printed, e.g. vda, sda, nvme0n1.", nullable=False),
        field(
            "rwbs",
            pa.string(),
            "T column as printed: R/W in bcc, the full RWBS string in "
            "libbpf-tools; null for biosnoop.bt, which has no T.",
        ),
        field(
            "op",
            pa.string(),
            "R, W, D (discard) or N (other) from T's op letter; null when there is no T column.",
        ),
        field("sector", pa.int64(), "SECTOR (512-byte units); null when not printed."),
        field("bytes", pa.int64(), "BYTES; null when not printed."),
        field(
            "queue_ns",
            pa.int64(),
            "QUE(ms): time queued in the OS before issue, exact ns; "
            "null unless biosnoop ran with -Q, and null where it printed -1 (not seen).",
        ),
        field(
            "latency_ns",
            pa.int64(),
            "LAT(ms): issue to completion, exact ns at the printed resolution.",
            nullable=False,
        ),
        field("line_no", pa.int64(), LINE_DOC, nullable=False),
    ],
)

HISTOGRAM = schema(
    "histogram",
    "One row per bucket of a power-of-2 or linear histogram printed by bcc (biolatency, "
    "bitesize: `lo -> hi : count`), bpftrace (`[lo, hi)  count |@@|`) or their JSON output.",
    [
        field(
            "snapshot",
            pa.int32(),
            "0-based number of the histogram print in the file "
            "(interval tools print one per interval).",
            nullable=False,
        ),
        field(
            "time_text",
            pa.string(),
            "Timestamp line printed before the snapshot "
            "(biolatency -T), as printed; null when none.",
        ),
        field(
            "time_ns",
            pa.int64(),
            "time_text as ns since midnight (HH:MM:SS) or since the "
            "epoch (JSON 'ts' as epoch); null when none.",
        ),
        field("t_ns", pa.int64(), T_NS_DOC),
        field(
            "name",
            pa.string(),
            "What is counted: the bcc value column (usecs, msecs, "
            "Kbytes) or the bpftrace map name (@usecs).",
            nullable=False,
        ),
        field(
            "key",
            pa.string(),
            "Section key: bcc's `disk = 'sda'` label value, or a "
            "bpftrace map key like [8, 0]; null for a single histogram.",
        ),
        field(
            "low",
            pa.int64(),
            "Bucket's lowest value (K/M/G suffixes resolved as powers of "
            "1024); null for bpftrace's '(..., lo)' underflow bucket.",
        ),
        field(
            "high",
            pa.int64(),
            "Bucket's highest value, EXCLUSIVE (bcc's inclusive 'hi' + "
            "1); null for an overflow bucket '[hi, ...)'.",
        ),
        field("count", pa.int64(), "Number of samples in the bucket.", nullable=False),
        field("line_no", pa.int64(), LINE_DOC, nullable=False),
    ],
)
