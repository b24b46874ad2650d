"""The `iostat` table: `iostat -x` columns recomputed from the trace per interval."""

from __future__ import annotations

import pyarrow as pa

from blkscope.schemas._declare import field, schema

_F = pa.float64()

IOSTAT = schema(
    "iostat",
    "Per device and interval (1 s unless set otherwise), what `iostat -x` would have printed, "
    "from the requests: counted at completion, await from the first Q to completion.",
    [
        field("dev_major", pa.int32(), "Device major number.", nullable=False),
        field("dev_minor", pa.int32(), "Device minor number.", nullable=False),
        field("start_ns", pa.int64(), "Interval start, ns on the trace clock.", nullable=False),
        field("interval_ns", pa.int64(), "Interval length, ns.", nullable=False),
        field("r_s", _F, "Read requests completed per second.", nullable=False),
        field(
            "w_s",
            _F,
            "Write requests completed per second, including the zero-length "
            "completions that end flush sequences (the kernel counts those as writes).",
            nullable=False,
        ),
        field("rkb_s", _F, "KiB read per second.", nullable=False),
        field("wkb_s", _F, "KiB written per second.", nullable=False),
        field("rrqm_s", _F, "Read merges (M/F events) per second.", nullable=False),
        field("wrqm_s", _F, "Write merges (M/F events) per second.", nullable=False),
        field("r_await_ms", _F, "Mean Q-to-C time of the reads completed, ms; null if none."),
        field("w_await_ms", _F, "Mean Q-to-C time of the writes completed, ms; null if none."),
        field(
            "aqu_sz",
            _F,
            "Average queue size: summed Q-to-C times of the requests completed in "
            "the interval divided by its length (the kernel's time_in_queue).",
            nullable=False,
        ),
        field(
            "util_pct",
            _F,
            "Percent of the interval with at least one request between its Q and C.",
            nullable=False,
        ),
        field("reads", pa.int64(), "Read requests completed in the interval.", nullable=False),
        field("writes", pa.int64(), "Write requests completed in the interval.", nullable=False),
    ],
)
