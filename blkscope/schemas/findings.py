"""Tables of findings: latency spikes and the periods of bursty series."""

from __future__ import annotations

import pyarrow as pa

from blkscope.schemas._declare import field, schema

SPIKES = schema(
    "spikes",
    "Time windows where IO latency is abnormal for a device, merged into spikes, with attribution.",
    [
        field("dev_major", pa.int32(), "Device major number.", nullable=False),
        field("dev_minor", pa.int32(), "Device minor number.", nullable=False),
        field(
            "spike_id",
            pa.int32(),
            "1-based number of the spike on its device (block-level spikes first, then user series), in order.",
            nullable=False,
        ),
        field(
            "metric",
            pa.string(),
            "Latency judged: q2c (bio queue to completion), d2c (driver time), or user:<series> for an application's own latency log.",
            nullable=False,
        ),
        field(
            "window_ns", pa.int64(), "Width of the windows the spike was found in.", nullable=False
        ),
        field(
            "start_ns", pa.int64(), "Start of the first abnormal window (trace ns).", nullable=False
        ),
        field("end_ns", pa.int64(), "End of the last abnormal window (trace ns).", nullable=False),
        field(
            "peak_ns", pa.int64(), "Completion time of the slowest IO in the spike.", nullable=False
        ),
        field(
            "peak_latency_ns", pa.int64(), "Latency of the slowest IO in the spike.", nullable=False
        ),
        field(
            "p99_ns",
            pa.int64(),
            "99th percentile latency of the IOs completing in the spike.",
            nullable=False,
        ),
        field(
            "baseline_p99_ns",
            pa.int64(),
            "Median over all windows of the per-window p99: the normal level.",
            nullable=False,
        ),
        field(
            "threshold_ns",
            pa.int64(),
            "p99 above which a window counts as abnormal (median + k*MAD, or the user's).",
            nullable=False,
        ),
        field("ios", pa.int64(), "IOs completing inside the spike.", nullable=False),
        field(
            "writeback_ios",
            pa.int64(),
            "Of those in flight during the spike, IOs issued by writeback threads (kworker/u*, flush-*).",
            nullable=False,
        ),
        field(
            "writeback_share",
            pa.float64(),
            "Share of the bytes in flight during the spike that writeback threads issued.",
            nullable=False,
        ),
        field(
            "jbd2_ios",
            pa.int64(),
            "IOs issued by the ext4 journal (jbd2/*) in flight during the spike.",
            nullable=False,
        ),
        field(
            "writeback_events",
            pa.int64(),
            "writeback.bt events overlapping the spike (null when no writeback log was ingested).",
        ),
        field(
            "writeback_lag_ns",
            pa.int64(),
            "Peak time minus the start of the nearest writeback before it (null when none).",
        ),
        field(
            "cause",
            pa.string(),
            "Short attribution: 'writeback', 'jbd2', 'writeback+jbd2' or 'unexplained'.",
            nullable=False,
        ),
        field(
            "processes",
            pa.string(),
            "Processes that issued IO in and just before the spike, most IOs first: 'comm (n), ...'.",
            nullable=False,
        ),
    ],
)

PERIODS = schema(
    "periods",
    "Significant periods found in bursty series (spikes, writeback IO, journal IO, writeback events, user series).",
    [
        field(
            "dev_major", pa.int32(), "Device major number; null for series not tied to one device."
        ),
        field(
            "dev_minor", pa.int32(), "Device minor number; null for series not tied to one device."
        ),
        field(
            "series",
            pa.string(),
            "Which series: spikes, kworker_writes, jbd2_writes, writeback_events, or user:<name>.",
            nullable=False,
        ),
        field("period_ns", pa.int64(), "Period in nanoseconds.", nullable=False),
        field(
            "strength",
            pa.float64(),
            "Mean resultant length of burst phases: 0 none, 1 perfectly periodic.",
            nullable=False,
        ),
        field(
            "p_value",
            pa.float64(),
            "Chance of a peak this strong from aperiodic (Poisson) bursts, corrected for all periods tried.",
            nullable=False,
        ),
        field(
            "phase_ns",
            pa.int64(),
            "Offset of the bursts within each cycle, from the trace's time zero.",
            nullable=False,
        ),
        field("cycles", pa.float64(), "How many periods fit in the series' span.", nullable=False),
        field("bursts", pa.int64(), "Bursts the period was found in.", nullable=False),
        field(
            "knobs",
            pa.string(),
            "Kernel settings whose interval matches, comma-separated ('' when none).",
            nullable=False,
        ),
        field(
            "method",
            pa.string(),
            "How it was found: 'periodogram' (the series' own bursts), or 'writeback_events' "
            "(too few bursts for that, but they overlap the writeback log's events beyond "
            "chance, so they share those events' period; p_value is then the chance of that "
            "many overlaps for bursts placed at random, strength the share that overlap).",
            nullable=False,
        ),
    ],
)
