"""Tables of findings: latency spikes and the periods of bursty series."""

from __future__ import annotations

import pyarrow as pa

from blkscope.schemas._declare import field, schema

SPIKES = schema(
    "spikes",
    "Time windows where one latency metric is abnormal for a device (consecutive abnormal "
    "windows merged): what spiked and how much. Why is said per episode (episodes table).",
    [
        field("dev_major", pa.int32(), "Device major number.", nullable=False),
        field("dev_minor", pa.int32(), "Device minor number.", nullable=False),
        field(
            "spike_id",
            pa.int32(),
            "1-based number of the spike on its device (block-level spikes first, then user "
            "series), in order.",
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
        field(
            "ios",
            pa.int64(),
            "Latencies (bios, or the user series' samples) inside the spike's windows.",
            nullable=False,
        ),
        field(
            "episode_id",
            pa.int32(),
            "The episode (episodes table) this spike belongs to: spikes of any metric on the "
            "device whose windows overlap or touch are one episode.",
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
            "Which series: kworker_writes (writeback writes queued), jbd2_writes (journal "
            "writes queued), writeback_events (the writeback timeline's work items), episodes "
            "(latency episodes' peaks), or user:<name> (a user series' slowest 1% of samples).",
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

_DEVICE = [
    field("dev_major", pa.int32(), "Device major number.", nullable=False),
    field("dev_minor", pa.int32(), "Device minor number.", nullable=False),
]

EPISODES = schema(
    "episodes",
    "Latency episodes: spikes of any metric on one device whose windows overlap or touch, "
    "grouped into one time window, with what was in flight and why it is attributed as it is.",
    [
        *_DEVICE,
        field(
            "episode_id",
            pa.int32(),
            "1-based number of the episode on its device, in time order.",
            nullable=False,
        ),
        field(
            "start_ns", pa.int64(), "Start of its earliest spike window (trace ns).", nullable=False
        ),
        field("end_ns", pa.int64(), "End of its latest spike window (trace ns).", nullable=False),
        field(
            "window_ns",
            pa.int64(),
            "Widest window of its spikes: attribution also looks one "
            "window back from start_ns (IO queued then can still be in flight).",
            nullable=False,
        ),
        field(
            "metrics",
            pa.string(),
            "Every metric that spiked in it, comma-separated in spike "
            "order, e.g. 'q2c, user:prober'.",
            nullable=False,
        ),
        field("spikes", pa.int32(), "How many spikes (metric windows) it groups.", nullable=False),
        field("worst_metric", pa.string(), "The metric of its slowest latency.", nullable=False),
        field(
            "peak_ns", pa.int64(), "When its slowest latency completed (trace ns).", nullable=False
        ),
        field("peak_latency_ns", pa.int64(), "Its slowest latency.", nullable=False),
        field(
            "ios_in_flight",
            pa.int64(),
            "Bios on the device in flight (queued before end_ns, "
            "completed after start_ns) during the episode.",
            nullable=False,
        ),
        field(
            "writeback_ios",
            pa.int64(),
            "Of those, writeback writes (is_writeback_write: "
            "writes by kworker/u*, flush-* threads).",
            nullable=False,
        ),
        field(
            "writeback_share",
            pa.float64(),
            "Share of the bytes in flight that writeback writes carried.",
            nullable=False,
        ),
        field(
            "jbd2_ios", pa.int64(), "Bios of the ext4 journal (jbd2/*) in flight.", nullable=False
        ),
        field(
            "writeback_events",
            pa.int64(),
            "Writeback work items (writeback_events, or "
            "flusher-write bursts without a writeback log) overlapping [start_ns - window_ns, "
            "end_ns).",
            nullable=False,
        ),
        field(
            "writeback_lag_ns",
            pa.int64(),
            "peak_ns minus the start of the last writeback wakeup that began before it "
            "(work items less than 0.5 s apart are one wakeup; null when none began before).",
        ),
        field(
            "writeback_chance",
            pa.float64(),
            "Chance that a window of this length placed at "
            "random in the trace overlaps writeback the same way.",
            nullable=False,
        ),
        field(
            "cause",
            pa.string(),
            "writeback, jbd2, writeback+jbd2 or unexplained: writeback "
            "when writeback writes carry >= 25% of the bytes in flight or writeback work "
            "overlaps; jbd2 when >= 10% of the bios in flight are the journal's.",
            nullable=False,
        ),
        field(
            "reason",
            pa.string(),
            "The evidence behind the cause, in words: writeback IOs in "
            "flight, work items overlapped, lag.",
            nullable=False,
        ),
        field(
            "processes",
            pa.string(),
            "Processes that queued IO in [start_ns - window_ns, "
            "end_ns), most bios first: 'comm (n), ...' (top 5).",
            nullable=False,
        ),
    ],
)

WRITEBACK_VERDICT = schema(
    "writeback_verdict",
    "Per device: does writeback explain the latency episodes? Coincidence against chance and "
    "the share of tail latency that completes while writeback runs.",
    [
        *_DEVICE,
        field("episodes", pa.int32(), "Latency episodes on the device.", nullable=False),
        field(
            "episodes_with_writeback",
            pa.int32(),
            "Episodes whose cause includes writeback.",
            nullable=False,
        ),
        field(
            "episodes_by_chance",
            pa.float64(),
            "How many would coincide with writeback if placed at random (sum of writeback_chance).",
            nullable=False,
        ),
        field(
            "coincidence_p_value",
            pa.float64(),
            "Chance of at least episodes_with_writeback coincidences by chance.",
            nullable=False,
        ),
        field("median_lag_ns", pa.int64(), "Median writeback_lag_ns of the writeback episodes."),
        field(
            "tail_latency_share",
            pa.float64(),
            "Share of the Q2C latency of bios above the "
            "device's p99 that completes while writeback runs.",
            nullable=False,
        ),
        field(
            "writeback_time_share",
            pa.float64(),
            "Share of the traced time writeback runs.",
            nullable=False,
        ),
        field(
            "explains",
            pa.bool_(),
            "Writeback explains the episodes: at least half coincide, "
            "and beyond chance (p <= 0.05) or writeback holds >= 20% and >= 3x more of the tail "
            "latency than of the time.",
            nullable=False,
        ),
        field(
            "sentence",
            pa.string(),
            "The verdict in one sentence, with its numbers.",
            nullable=False,
        ),
    ],
)

PERIODOGRAM = schema(
    "periodogram",
    "The Rayleigh Z² periodogram each series' periods were searched in (blind band: 1 s to a "
    "third of the span), one row per series and candidate period.",
    [
        field("dev_major", pa.int32(), "Device major; null for a user series."),
        field("dev_minor", pa.int32(), "Device minor; null for a user series."),
        field("series", pa.string(), "The series, as in periods.series.", nullable=False),
        field("period_ns", pa.int64(), "Candidate period.", nullable=False),
        field(
            "z2",
            pa.float64(),
            "Rayleigh Z² of the series' burst starts at that period.",
            nullable=False,
        ),
    ],
)

BURSTS = schema(
    "bursts",
    "The bursts of each series that periods were searched in: runs of events closer than the "
    "series' burst gap (0.5 s; 1.5 s for episodes).",
    [
        field("dev_major", pa.int32(), "Device major; null for a user series."),
        field("dev_minor", pa.int32(), "Device minor; null for a user series."),
        field("series", pa.string(), "The series, as in periods.series.", nullable=False),
        field("start_ns", pa.int64(), "First event of the burst (trace ns).", nullable=False),
        field("end_ns", pa.int64(), "Last event of the burst (trace ns).", nullable=False),
        field("events", pa.int64(), "Events in the burst.", nullable=False),
    ],
)
