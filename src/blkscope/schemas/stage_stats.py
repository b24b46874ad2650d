"""The `stage_stats` table: latency statistics per IO stage, device, op class and process."""

from __future__ import annotations

import pyarrow as pa

from blkscope.schemas._declare import field, schema

_I64 = pa.int64()

STAGE_STATS = schema(
    "stage_stats",
    "Per-stage latency statistics over the bios table (btt's stages plus percentiles), at four "
    "levels of detail; '*' means all.",
    [
        field("dev_major", pa.int32(), "Device major number.", nullable=False),
        field("dev_minor", pa.int32(), "Device minor number.", nullable=False),
        field(
            "level",
            pa.string(),
            "'process' (op class x process), 'class' (op class), 'op' "
            "(read/write/discard/flush) or 'device' (everything).",
            nullable=False,
        ),
        field(
            "op_class",
            pa.string(),
            "read, write, discard, flush or other, with /sync and /meta "
            "appended at level process/class; '*' at level device.",
            nullable=False,
        ),
        field(
            "process",
            pa.string(),
            "Submitting comm at level process; '*' otherwise.",
            nullable=False,
        ),
        field(
            "stage",
            pa.string(),
            "Q2G G2I I2D Q2M M2D D2C Q2C Q2Q (btt's meanings; D2C and Q2C of "
            "a bio use its request's last D and its last completion).",
            nullable=False,
        ),
        field("n", _I64, "Number of latencies.", nullable=False),
        field("min_ns", _I64, "Minimum, ns.", nullable=False),
        field("mean_ns", pa.float64(), "Mean, ns (not an integer).", nullable=False),
        field("p50_ns", _I64, "Median, ns: an observed value (discrete quantile).", nullable=False),
        field("p90_ns", _I64, "90th percentile, ns (discrete).", nullable=False),
        field("p99_ns", _I64, "99th percentile, ns (discrete).", nullable=False),
        field("p999_ns", _I64, "99.9th percentile, ns (discrete).", nullable=False),
        field("max_ns", _I64, "Maximum, ns.", nullable=False),
    ],
)
