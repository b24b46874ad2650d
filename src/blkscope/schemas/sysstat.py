"""Tables from sysstat and procfs samplers: iostat -x, vmstat, /proc/meminfo samples."""

from __future__ import annotations

import pyarrow as pa

from blkscope.schemas._declare import field, schema

T_NS_DOC = (
    "Sample time on the capture timeline: ns since the trace's first block event "
    "(events.time_ns), set by folder ingest's clock model (manifest clock.sources); null "
    "when the source could not be placed or was parsed alone."
)
LINE_DOC = "1-based line number of the row in its input file."
SAMPLE_DOC = (
    "0-based number of the report/sample in the file, in print order (iostat and "
    "vmstat print one per interval)."
)


def _f64(name: str, doc: str) -> pa.Field:
    return field(name, pa.float64(), doc)


IOSTAT_LOG = schema(
    "iostat_log",
    "One row per device per `iostat -x` report. Columns are matched by header name, so old "
    "(rrqm/s ... avgrq-sz avgqu-sz svctm) and new (r/s rMB/s ... aqu-sz) sysstat layouts land "
    "in the same columns; sizes and throughputs are converted to KiB. A column the header did "
    "not have is null.",
    [
        field("sample", pa.int32(), SAMPLE_DOC, nullable=False),
        field(
            "time_text",
            pa.string(),
            "The report's timestamp line as printed (iostat -t); null without -t.",
        ),
        field(
            "time_ns",
            pa.int64(),
            "That timestamp as ns since the Unix epoch. iostat prints "
            "local time without a zone, so it is read as if it were UTC unless it carries an "
            "offset (S_TIME_FORMAT=ISO); null without -t. A time without a date (old sysstat's "
            "'Time: HH:MM:SS') gives ns since the midnight before the first report instead "
            "(less than two days), which the clock model dates.",
        ),
        field("t_ns", pa.int64(), T_NS_DOC),
        field(
            "since_boot",
            pa.bool_(),
            "True for the first report, which iostat computes "
            "over the time since boot rather than over the interval (unless run with -y).",
            nullable=False,
        ),
        field(
            "device",
            pa.string(),
            "Device name as printed, e.g. vda, sda, loop0, dm-0.",
            nullable=False,
        ),
        _f64("r_s", "Read requests completed per second (r/s)."),
        _f64("w_s", "Write requests completed per second (w/s)."),
        _f64("d_s", "Discard requests completed per second (d/s)."),
        _f64("f_s", "Flush requests completed per second (f/s)."),
        _f64("rkib_s", "KiB read per second (rkB/s, rMB/s x 1024 or rsec/s / 2)."),
        _f64("wkib_s", "KiB written per second (wkB/s, wMB/s x 1024 or wsec/s / 2)."),
        _f64("dkib_s", "KiB discarded per second (dkB/s or dMB/s x 1024)."),
        _f64("rrqm_s", "Read requests merged per second (rrqm/s)."),
        _f64("wrqm_s", "Write requests merged per second (wrqm/s)."),
        _f64("drqm_s", "Discard requests merged per second (drqm/s)."),
        _f64("rrqm_pct", "Percent of read requests merged (%rrqm)."),
        _f64("wrqm_pct", "Percent of write requests merged (%wrqm)."),
        _f64("drqm_pct", "Percent of discard requests merged (%drqm)."),
        _f64("await_ms", "Average time of all requests, queue plus service, in ms (old await)."),
        _f64("r_await_ms", "Average read request time, queue plus service, in ms (r_await)."),
        _f64("w_await_ms", "Average write request time, queue plus service, in ms (w_await)."),
        _f64("d_await_ms", "Average discard request time in ms (d_await)."),
        _f64("f_await_ms", "Average flush request time in ms (f_await)."),
        _f64("rareq_kib", "Average read request size in KiB (rareq-sz)."),
        _f64("wareq_kib", "Average write request size in KiB (wareq-sz)."),
        _f64("dareq_kib", "Average discard request size in KiB (dareq-sz)."),
        _f64("areq_kib", "Average request size in KiB: areq-sz, or old avgrq-sz (sectors) / 2."),
        _f64("aqu_sz", "Average queue length (aqu-sz, old avgqu-sz)."),
        _f64("svctm_ms", "Average service time in ms (svctm; old sysstat only, unreliable)."),
        _f64("util_pct", "Percent of time the device had IO in flight (%util)."),
        field(
            "extra",
            pa.map_(pa.string(), pa.float64()),
            "Columns not listed above, by "
            "header name as printed, with their values; null when there are none.",
        ),
        field("line_no", pa.int64(), LINE_DOC, nullable=False),
    ],
)

IOSTAT_CPU = schema(
    "iostat_cpu",
    "One row per `avg-cpu` block of an iostat report: percentages of CPU time.",
    [
        field("sample", pa.int32(), SAMPLE_DOC, nullable=False),
        field("time_ns", pa.int64(), "The report's timestamp, as iostat.time_ns; null without -t."),
        field("t_ns", pa.int64(), T_NS_DOC),
        _f64("user_pct", "%user: CPU time in user mode."),
        _f64("nice_pct", "%nice: CPU time in user mode at low priority."),
        _f64("system_pct", "%system: CPU time in the kernel."),
        _f64("iowait_pct", "%iowait: idle with IO outstanding."),
        _f64("steal_pct", "%steal: time the hypervisor ran another guest."),
        _f64("idle_pct", "%idle: idle without IO outstanding."),
        field("line_no", pa.int64(), LINE_DOC, nullable=False),
    ],
)

VMSTAT_COLUMNS: dict[str, str] = {
    "r": "Runnable processes (running or waiting for a CPU).",
    "b": "Processes in uninterruptible sleep (usually waiting for IO).",
    "swpd": "Swap used, KiB.",
    "free": "Free memory, KiB.",
    "buff": "Buffer memory, KiB.",
    "cache": "Page cache memory, KiB.",
    "inact": "Inactive memory, KiB (vmstat -a).",
    "active": "Active memory, KiB (vmstat -a).",
    "si": "KiB/s swapped in.",
    "so": "KiB/s swapped out.",
    "bi": "Blocks/s read from block devices (1 KiB blocks).",
    "bo": "Blocks/s written to block devices (1 KiB blocks).",
    "in": "Interrupts per second.",
    "cs": "Context switches per second.",
    "us": "Percent CPU in user code.",
    "sy": "Percent CPU in the kernel.",
    "id": "Percent CPU idle.",
    "wa": "Percent CPU waiting for IO.",
    "st": "Percent CPU stolen by the hypervisor.",
    "gu": "Percent CPU running guests (procps 4+).",
}

VMSTAT = schema(
    "vmstat",
    "One row per `vmstat` sample line, columns matched by header name (a column the header "
    "lacks is null). The first line averages since boot.",
    [
        field("sample", pa.int32(), SAMPLE_DOC, nullable=False),
        field(
            "time_ns",
            pa.int64(),
            "The sample's timestamp column (vmstat -t) as ns since the "
            "epoch, read as UTC when the header says UTC or names no zone; null without -t.",
        ),
        field("t_ns", pa.int64(), T_NS_DOC),
        *[field(name, pa.int64(), doc) for name, doc in VMSTAT_COLUMNS.items()],
        field("line_no", pa.int64(), LINE_DOC, nullable=False),
    ],
)

MEMINFO = schema(
    "meminfo",
    "One row per field per /proc/meminfo sample: either `EPOCH Key: N kB Key: N kB ...` lines "
    "or whole /proc/meminfo snapshots (optionally preceded by an epoch-seconds line).",
    [
        field("sample", pa.int32(), SAMPLE_DOC, nullable=False),
        field(
            "time_ns",
            pa.int64(),
            "The sample's epoch timestamp as printed, exact, in ns "
            "since the Unix epoch; null when the sample carries none.",
        ),
        field("t_ns", pa.int64(), T_NS_DOC),
        field(
            "key",
            pa.string(),
            "Field name without the colon, e.g. Dirty, Writeback.",
            nullable=False,
        ),
        field("value", pa.int64(), "The value as printed (KiB when unit is kB).", nullable=False),
        field("unit", pa.string(), "Unit as printed ('kB'), null for counts like HugePages_Total."),
        field("line_no", pa.int64(), LINE_DOC, nullable=False),
    ],
)
