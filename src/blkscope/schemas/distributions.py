"""Distribution tables: log2 latency histograms, in-flight depth, IO size and seek distance."""

from __future__ import annotations

import pyarrow as pa

from blkscope.schemas._declare import field, schema

_DEV = [
    field("dev_major", pa.int32(), "Device major number.", nullable=False),
    field("dev_minor", pa.int32(), "Device minor number.", nullable=False),
]

LATENCY_HIST = schema(
    "latency_hist",
    "Log2 histograms of bio stage latencies per device and op ('*' = all ops).",
    [
        *_DEV,
        field(
            "op_class", pa.string(), "read, write, discard, flush, other, or '*'.", nullable=False
        ),
        field("stage", pa.string(), "Q2G G2I I2D Q2M M2D D2C Q2C Q2Q.", nullable=False),
        field(
            "bucket",
            pa.int32(),
            "b: latencies in [2^b, 2^(b+1)) ns; -1 holds 0 ns.",
            nullable=False,
        ),
        field("lo_ns", pa.int64(), "Bucket start, ns (inclusive).", nullable=False),
        field("hi_ns", pa.int64(), "Bucket end, ns (exclusive).", nullable=False),
        field("n", pa.int64(), "Latencies in the bucket.", nullable=False),
    ],
)

LATENCY_HEATMAP = schema(
    "latency_heatmap",
    "Bios per device, time bin (view time_bins, at completion) and quarter-octave latency "
    "bucket, for D2C and Q2C: what the report's latency heat map draws.",
    [
        *_DEV,
        field("stage", pa.string(), "D2C or Q2C.", nullable=False),
        field("bin", pa.int32(), "Bin number in the device's time_bins (at C).", nullable=False),
        field(
            "bucket",
            pa.int32(),
            "4e + k: latencies in [(4 + k) 2^(e-2), (5 + k) 2^(e-2)) ns (each power of two cut "
            "in 4 equal parts); under 4 ns, the latency itself.",
            nullable=False,
        ),
        field("lo_ns", pa.int64(), "Bucket start, ns (inclusive).", nullable=False),
        field("hi_ns", pa.int64(), "Bucket end, ns (exclusive).", nullable=False),
        field("n", pa.int64(), "Bios in the cell.", nullable=False),
        field(
            "observer_n",
            pa.int64(),
            "Of which issued by the capture's own tools (is_observer).",
            nullable=False,
        ),
        field("max_ns", pa.int64(), "Slowest latency in the cell, ns.", nullable=False),
        field(
            "slowest_comm",
            pa.string(),
            "Process of the slowest bio in the cell ('?' when unknown; the first to complete "
            "on a tie).",
            nullable=False,
        ),
    ],
)

DEPTH = schema(
    "depth",
    "Exact in-flight step functions per device, as the time spent at each depth.",
    [
        *_DEV,
        field(
            "level",
            pa.string(),
            "'driver': requests between D and C (requeues step back "
            "down); 'queue': bios between Q and completion.",
            nullable=False,
        ),
        field("depth", pa.int32(), "Number in flight.", nullable=False),
        field(
            "held_ns", pa.int64(), "Time spent at this depth within the trace, ns.", nullable=False
        ),
        field(
            "share",
            pa.float64(),
            "held_ns over the traced time of the device; null when that is 0 ns (every event "
            "of the device at one time).",
        ),
    ],
)

DEPTH_BINS = schema(
    "depth_bins",
    "The in-flight step functions of the depth table per time bin (view time_bins): what the "
    "report's depth chart draws.",
    [
        *_DEV,
        field("level", pa.string(), "'driver' or 'queue', as in the depth table.", nullable=False),
        field("bin", pa.int32(), "Bin number in the device's time_bins.", nullable=False),
        field(
            "max_depth", pa.int32(), "Highest depth held for any time in the bin.", nullable=False
        ),
        field(
            "mean_depth",
            pa.float64(),
            "Time-weighted mean depth over the traced part of the bin.",
            nullable=False,
        ),
        field(
            "traced_ns",
            pa.int64(),
            "Traced time in the bin, ns (the width, except at the trace's ends).",
            nullable=False,
        ),
    ],
)

IO_DIST = schema(
    "io_dist",
    "Log2 distributions of IO sizes and seek distances (in sectors) per device and op.",
    [
        *_DEV,
        field("op", pa.string(), "Operation: R read, W write, D discard, N none.", nullable=False),
        field(
            "metric",
            pa.string(),
            "q_size (bio at Q), d_size (request at D), d2d_seek and "
            "q2q_seek (distance from the previous D/Q's end to this start; 0 = sequential).",
            nullable=False,
        ),
        field("bucket", pa.int32(), "b: values in [2^b, 2^(b+1)); -1 holds 0.", nullable=False),
        field("lo", pa.int64(), "Bucket start, sectors (inclusive).", nullable=False),
        field("hi", pa.int64(), "Bucket end, sectors (exclusive).", nullable=False),
        field("n", pa.int64(), "Values in the bucket.", nullable=False),
        field("total", pa.int64(), "Sum of the values, sectors.", nullable=False),
    ],
)
