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
            "Kernel settings whose interval matches and that started the bursts, "
            "comma-separated ('' when none): the vm.dirty_* knobs only for flusher bursts that "
            "its timer started (writeback reason 'periodic'; by interval alone without a "
            "writeback log), the jbd2 commit interval only for journal writes; episodes and user "
            "series take the knobs of a writeback or journal period of the same length.",
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
            "victim",
            pa.string(),
            "Whose latency spiked: 'user:NAME (comm pid N)' when an application's latency log "
            "spiked (its process found from the trace: victims.py), else 'q2c of N bios' / "
            "'d2c of N bios' for the device's slow bios.",
            nullable=False,
        ),
        field("victim_pid", pa.int64(), "The victim's process id; null for block-level victims."),
        field(
            "slow_ios",
            pa.int32(),
            "The victim's samples or bios above the spike threshold inside the episode that "
            "it was judged on (the slowest 64 at most).",
            nullable=False,
        ),
        *[
            f
            for stage, words in (
                ("above", "before its IO reached the block layer (until its first Q)"),
                ("queued", "queued in the block layer (Q to D of its bios)"),
                ("device", "at the device (D to C of its bios)"),
                ("after", "after its own IO completed (until the sample ended)"),
            )
            for f in (
                field(
                    f"{stage}_ns",
                    pa.int64(),
                    f"Mean time a slow sample or bio of the victim spent {words}; null when its "
                    "own IO could not be found.",
                ),
                field(
                    f"normal_{stage}_ns",
                    pa.int64(),
                    f"The victim's normal (median) time {words}, over the whole trace.",
                ),
            )
        ],
        field(
            "writeback_share",
            pa.float64(),
            "Share of the bytes in flight on the device while the victim's slow IOs waited "
            "(time-averaged over them) that were writeback writes (is_writeback_write).",
            nullable=False,
        ),
        field(
            "journal_share",
            pa.float64(),
            "Share of those bytes that were the journal's (jbd2).",
            nullable=False,
        ),
        field(
            "competing_share",
            pa.float64(),
            "Share of those bytes that the busiest other process carried.",
            nullable=False,
        ),
        field(
            "competing",
            pa.string(),
            "The other processes whose IO explains the wait (competing_io), each with its ops, "
            "IO size and share: 'fio pid 812 (read 4 KiB x 2,310), 91% of the bytes in "
            "flight'; '' when none.",
            nullable=False,
        ),
        field(
            "pages_written",
            pa.int64(),
            "Pages written by the writeback work items running in [start_ns - window_ns, "
            "end_ns) (writeback_events.pages_written); null when the log does not tell.",
        ),
        field(
            "writeback_reasons",
            pa.string(),
            "Why the kernel started those work items (periodic, background, sync, ...).",
            nullable=False,
        ),
        field(
            "throttle_messages",
            pa.int64(),
            "blk-throttle and iocost messages (throtl ..., iocost ...) the trace holds for the "
            "device in [start_ns - window_ns, end_ns).",
            nullable=False,
        ),
        field(
            "busy_while_queued",
            pa.float64(),
            "Share of the time the victim's bios were queued (Q to D) during which some IO was "
            "at the device: low means the scheduler held them back from an idle device.",
        ),
        field(
            "others_at_device",
            pa.float64(),
            "Other IOs at the device (dispatched, not completed) while the victim's bios were "
            "there, on average: under 1 means the device was slow with a light queue.",
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
            "What caused the episode: one of writeback, journal, competing_io, throttling, "
            "scheduler, device, unexplained (concepts.CAUSES), or several joined by '+', "
            "strongest first (attribution.py says how each is decided).",
            nullable=False,
        ),
        field(
            "reason",
            pa.string(),
            "Why, in words: where the victim's extra time went against its normal, what was "
            "in flight, and why each other cause was rejected.",
            nullable=False,
        ),
        field(
            "processes",
            pa.string(),
            "Processes that queued the most bytes in [start_ns - window_ns, end_ns): "
            "'comm pid N: bytes (IOs)', top 5.",
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
            "Episodes whose cause includes writeback (episodes.cause).",
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
            "flusher_bytes",
            pa.int64(),
            "Bytes the flusher threads wrote on the device over the trace (writeback writes).",
            nullable=False,
        ),
        field(
            "explains",
            pa.bool_(),
            "Writeback explains the episodes, by `rule`: the flusher wrote on the device, at "
            "least half the episodes are attributed to writeback, and they coincide with it "
            "beyond chance (p <= 0.05) or writeback holds >= 20% and >= 3x more of the tail "
            "latency than of the time.",
            nullable=False,
        ),
        field("rule", pa.string(), "The rule `explains` follows, in words.", nullable=False),
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
