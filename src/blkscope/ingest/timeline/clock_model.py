"""The clock model: put every table's rows on the trace timeline (ns since the first event)."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from blkscope.errors import InputFormatError, OptionError
from blkscope.ingest.logs.textlog import LIMIT
from blkscope.ingest.timeline.align import Alignment, align_by_sector, align_rates, align_writeback
from blkscope.ingest.timeline.align_rows import first_sector_rows, writeback_work
from blkscope.ingest.timeline.digest import TraceDigest
from blkscope.units import NS_PER_S

SECOND = NS_PER_S
DAY = 86_400 * SECOND
# iostat's window assumes its interval ends exactly at the printed second: allow some slack.
RATES_SLACK_NS = 100_000_000
_PAIR = re.compile(r"\s*(\d{1,19})\s+(\d{15,19})\s*")


@dataclass
class LogSource:
    """One recognised side log: its name in the capture, its format and its parsed tables."""

    name: str
    fmt: str
    tables: dict[str, pa.Table]


@dataclass
class ClockHints:
    """Everything that pins the trace's zero, strongest first."""

    trace_start_ns: int | None = None
    offsets_ns: dict[str, int] = field(default_factory=dict)
    pair: tuple[int, int] | None = None
    pair_source: str | None = None
    blktrace: dict[str, Any] | None = None


@dataclass
class TraceZero:
    """The trace's first event on CLOCK_MONOTONIC and on the wall clock, and how each was found."""

    mono_ns: int | None = None
    mono_how: str | None = None
    wall_ns: int | None = None
    wall_how: str | None = None
    wall_minus_mono_ns: int | None = None
    pair_how: str | None = None
    date_known: bool = True
    alignments: dict[str, dict[str, object]] = field(default_factory=dict)

    def fill(self) -> None:
        """Derive the missing one of mono/wall from the other through a known mono->wall pair."""
        if self.wall_minus_mono_ns is None:
            return
        if self.wall_ns is None and self.mono_ns is not None:
            self.wall_ns = self.mono_ns + self.wall_minus_mono_ns
            self.wall_how = f"{self.mono_how} + {self.pair_how}"
        elif self.mono_ns is None and self.wall_ns is not None:
            self.mono_ns = self.wall_ns - self.wall_minus_mono_ns
            self.mono_how = f"{self.wall_how} + {self.pair_how}"


def parse_trace_start(text: str) -> int:
    """--trace-start: an ISO-8601 wall time (UTC unless it has an offset) -> ns since the epoch."""
    m = re.fullmatch(r"(.+?T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:?\d{2})?", text.strip())
    if m is None:
        raise OptionError(
            "--trace-start", f"not an ISO time: {text!r}", hint="e.g. 2026-11-21T23:33:29.25Z"
        )
    zone = (m.group(3) or "Z").replace("Z", "+00:00")
    try:
        when = dt.datetime.fromisoformat(m.group(1) + zone)
    except ValueError as exc:
        raise OptionError("--trace-start", f"not an ISO time: {text!r} ({exc})") from None
    ns = int(when.timestamp()) * SECOND + int((m.group(2) or "0").ljust(9, "0"))
    if not 0 <= ns < LIMIT:
        raise OptionError(
            "--trace-start", f"{text!r} is outside 1970-2116, the span blkscope's clock holds"
        )
    return ns


def parse_offset(text: str) -> tuple[str, int]:
    """--offset SOURCE=+-SECONDS -> (source, ns)."""
    m = re.fullmatch(r"([^=]+)=([-+]?\d+(?:\.\d{1,9})?)", text.strip())
    if m is None:
        raise OptionError(
            "--offset", f"expected SOURCE=+-SECONDS, got {text!r}", hint="e.g. writeback=-0.25"
        )
    if (
        len(m.group(2).lstrip("+-").partition(".")[0]) > 9
    ):  # past 31 years: no clock is that far off
        raise OptionError(
            "--offset", f"{m.group(2)[:24]} s is out of range (at most 9 digits of seconds)"
        )
    sign = -1 if m.group(2).startswith("-") else 1
    whole, _, frac = m.group(2).lstrip("+-").partition(".")
    return m.group(1), sign * (int(whole) * SECOND + int(frac.ljust(9, "0")))


def read_clock_pair(text: str) -> tuple[int, int] | None:
    """A clock.txt: one line `MONO_NS WALL_NS`; None when the text is not one (or its numbers
    are past textlog.LIMIT, where clock arithmetic would leave int64)."""
    m = _PAIR.fullmatch(text)
    if m is None:
        return None
    mono, wall = int(m.group(1)), int(m.group(2))
    return (mono, wall) if mono < LIMIT and wall < LIMIT else None


def source_kind(table_name: str, table: pa.Table) -> tuple[str, int]:
    """(clock kind, stamp resolution in ns) of one parsed table."""
    times = table["time_ns"].drop_null() if "time_ns" in table.column_names else pa.array([])
    if table_name == "writeback":
        clock = table["clock"][0].as_py() if table.num_rows else "monotonic"
        return ("wall_time_of_day", SECOND) if clock == "time_of_day" else ("monotonic", 1)
    if table_name == "biosnoop":
        return "since_start", 1000
    if table_name == "series":
        header = (table["clock"][0].as_py() or "").lower() if table.num_rows else ""
        for word, kind in (
            ("mono", "monotonic"),
            ("boot", "since_boot"),
            ("epoch", "epoch"),
            ("unix", "epoch"),
            ("wall", "epoch"),
        ):
            if word in header:
                return kind, 1
        return "relative", 1
    if len(times) == 0:
        return ("sample_index", SECOND) if table_name == "vmstat" else ("untimed", 0)
    if pc.max(times).as_py() < 2 * DAY:  # a time of day without a date (HH:MM:SS)
        return "wall_time_of_day", SECOND
    return "epoch", (1 if table_name == "meminfo" else SECOND)


def _first_epoch(logs: list[LogSource]) -> int | None:
    # Any epoch-stamped row dates the capture: time-of-day logs take their date from it.
    for log in logs:
        for name, table in log.tables.items():
            if source_kind(name, table)[0] == "epoch":
                times = table["time_ns"].drop_null()
                if len(times):
                    return int(pc.min(times).as_py())
    return None


def _align_logs(
    logs: list[LogSource],
    digest: TraceDigest,
    kind: str,
    reference: int | None = None,
    window: tuple[int, int] | None = None,
) -> tuple[Alignment | None, str, int]:
    # Writeback logs on `kind`'s clock vs the trace's flusher bursts, on the traced devices.
    # Returns the best alignment, its log's name and the epoch of that log's first midnight
    # (0 for monotonic logs); `window` (epoch ns) bounds the answer.
    traced = digest.devices()
    best: tuple[Alignment | None, str, int] = (None, "", 0)
    for log in logs:
        table = log.tables.get("writeback")
        if table is None or source_kind("writeback", table)[0] != kind or not table.num_rows:
            continue
        work = writeback_work(table, traced)  # a batch at a time: a log can have millions
        if work is None:
            continue
        stamps, durations, first = work
        resolution, midnight, within = 1, 0, None
        if kind == "wall_time_of_day":
            resolution = SECOND
            midnight = round(((reference or 0) - first) / DAY) * DAY
            if window is not None:
                within = (window[0] - midnight, window[1] - midnight)
        found = align_writeback(
            stamps,
            durations,
            resolution,
            digest.flusher_bursts(traced),
            "writeback vs flusher",
            within,
        )
        if found is not None and (best[0] is None or found.matched > best[0].matched):
            best = (found, log.name, midnight)
    return best


def _align_iostat(
    logs: list[LogSource], digest: TraceDigest, reference: int | None
) -> tuple[Alignment | None, str]:
    # iostat's per-second w/s vs the trace's write completions, for the best-fitting device pair.
    best: tuple[Alignment | None, str] = (None, "")
    for log in logs:
        table = log.tables.get("iostat_log")
        if table is None:
            continue
        usable = table.filter(
            pc.and_(pc.invert(table["since_boot"]), pc.is_valid(table["time_ns"]))
        ).filter(pc.is_valid(pc.field("w_s")))
        for disk in sorted(set(usable["device"].to_pylist())):
            rows = usable.filter(pc.equal(usable["device"], disk))
            stamps = rows["time_ns"].to_numpy().astype(np.int64)
            if source_kind("iostat_log", table)[0] == "wall_time_of_day" and len(stamps):
                stamps += round(((reference or 0) - int(stamps[0])) / DAY) * DAY
            rates = np.rint(rows["w_s"].to_numpy()).astype(np.int64)
            for device in sorted(digest.devices()):
                found = align_rates(
                    stamps,
                    rates,
                    digest.write_completions(device),
                    f"iostat {disk} w/s vs write completions of {device[0]},{device[1]}",
                )
                if found is not None and (
                    best[0] is None or (found.mismatch or 0) < (best[0].mismatch or 0)
                ):
                    best = (found, log.name)
    return best


def _align_wall(
    zero: TraceZero, hints: ClockHints, logs: list[LogSource], digest: TraceDigest
) -> None:
    # iostat's rates fix the wall zero to +-0.5 s; writeback stamps, searched within that
    # window (so that the flusher's 5 s period cannot fool them), fix it to a fraction of that.
    reference = hints.pair[1] if hints.pair else _first_epoch(logs)
    rates, rates_name = _align_iostat(logs, digest, reference)
    window = None
    if rates is not None:
        window = (rates.low_ns - RATES_SLACK_NS, rates.high_ns + RATES_SLACK_NS)
    found, name, midnight = _align_logs(logs, digest, "wall_time_of_day", reference, window)
    if found is None and window is not None:
        found, name, midnight = _align_logs(logs, digest, "wall_time_of_day", reference)
        window = None
    if found is not None:
        zero.date_known = reference is not None
        zero.wall_ns = midnight + found.offset_ns
        zero.wall_how = f"automatic alignment of {name}"
        zero.alignments[name] = found.as_doc()
        if window is not None:
            zero.wall_how += f" within {rates_name}'s window"
            zero.alignments[name]["searched_within_wall_ns"] = list(window)
    if rates is not None:
        doc = rates.as_doc()
        if zero.wall_ns is None:
            zero.wall_ns, zero.wall_how = rates.offset_ns, f"automatic alignment of {rates_name}"
        else:
            doc["agrees"] = window is not None
        zero.alignments[rates_name] = doc


def resolve_trace_zero(hints: ClockHints, logs: list[LogSource], digest: TraceDigest) -> TraceZero:
    """Pin the trace's first event on the monotonic and wall clocks, by the best evidence."""
    zero = TraceZero()
    if hints.trace_start_ns is not None:
        zero.wall_ns, zero.wall_how = hints.trace_start_ns, "flag --trace-start"
    if hints.blktrace is not None:
        zero.mono_ns = hints.blktrace["base_time_ns"]
        zero.mono_how = hints.blktrace.get("how", "blktrace binary: first event's time")
        notes = hints.blktrace.get("wall_notes") or []
        if notes:
            zero.wall_minus_mono_ns = notes[0]["wall_ns"] - notes[0]["time"]
            zero.pair_how = "blktrace wall-clock note"
    if zero.wall_minus_mono_ns is None and hints.pair is not None:
        zero.wall_minus_mono_ns = hints.pair[1] - hints.pair[0]
        zero.pair_how = f"{hints.pair_source} (MONO_NS WALL_NS pair)"
    zero.fill()
    if zero.mono_ns is None:
        # Exact monotonic stamps pin the trace far better than 1 s wall stamps: try them first.
        found, name, _ = _align_logs(logs, digest, "monotonic")
        if found is not None:
            zero.mono_ns, zero.mono_how = found.offset_ns, f"automatic alignment of {name}"
            zero.alignments[name] = found.as_doc()
            zero.fill()
    if zero.wall_ns is None:
        _align_wall(zero, hints, logs, digest)
    zero.fill()
    return zero


def _biosnoop_offset(
    table: pa.Table, digest: TraceDigest
) -> tuple[int | None, str, dict[str, Any]]:
    sectors, times = digest.completions()
    found = align_by_sector(*first_sector_rows(table), sectors, times)
    if found is None:
        return None, "no completion matched: use --offset", {}
    return -found.offset_ns, "automatic alignment: " + found.method, found.as_doc()


def source_offset(
    name: str, table: pa.Table, zero: TraceZero, digest: TraceDigest, logs: list[LogSource]
) -> dict[str, Any]:
    """The clock doc of one table: kind, offset to add to time_ns, and how it was chosen."""
    kind, resolution = source_kind(name, table)
    # Truncated stamps (1 s) mean 'somewhere in this second': centre them.
    centre = resolution // 2 if resolution >= SECOND else 0
    doc: dict[str, Any] = {"kind": kind, "resolution_ns": resolution, "offset_ns": None}
    if kind == "relative":
        doc.update(offset_ns=0, method="assumed already on the trace timeline")
    elif kind in ("monotonic", "since_boot") and zero.mono_ns is not None:
        doc.update(
            offset_ns=-zero.mono_ns, method=f"trace zero on the monotonic clock: {zero.mono_how}"
        )
        if kind == "since_boot":
            doc["method"] += " (CLOCK_BOOTTIME read as CLOCK_MONOTONIC: no suspend assumed)"
    elif kind == "epoch" and zero.wall_ns is not None:
        doc.update(
            offset_ns=centre - zero.wall_ns, method=f"trace zero on the wall clock: {zero.wall_how}"
        )
    elif kind == "wall_time_of_day" and zero.wall_ns is not None and table.num_rows:
        first = int(pc.min(table["time_ns"]).as_py())
        midnight = round((zero.wall_ns - first) / DAY) * DAY
        doc.update(
            offset_ns=midnight + centre - zero.wall_ns,
            method=f"trace zero on the wall clock: {zero.wall_how}; date from the nearest day",
        )
    elif kind == "since_start" and table.num_rows:
        offset, method, evidence = _biosnoop_offset(table, digest)
        doc.update(offset_ns=offset, method=method)
        if evidence:
            doc["alignment"] = evidence
    elif kind == "sample_index":
        start = _sampler_start(logs, zero)
        found = _vmstat_alignment(table, digest)
        if found is not None:
            doc.update(
                offset_ns=-found.offset_ns,
                method="no timestamps: automatic alignment of bo (KiB written per second) "
                "with the trace's write completions",
                alignment=found.as_doc(),
            )
        elif start is not None:
            doc.update(
                offset_ns=start + centre,
                method="no timestamps: sample k at k s after "
                "iostat's first report (started together by the capture)",
            )
    if doc["offset_ns"] is None:
        doc.setdefault("method", "no clock evidence: t_ns left null (use --trace-start/--offset)")
    return doc


def _vmstat_alignment(table: pa.Table, digest: TraceDigest) -> Alignment | None:
    # Sample k (k >= 1; sample 0 averages since boot) ends k s after vmstat started.
    later = table.filter(pc.greater_equal(table["sample"], 1))
    later = later.filter(pc.is_valid(later["bo"]))
    times, kib = digest.write_kib()
    return align_rates(
        pc.multiply(pc.cast(later["sample"], pa.int64()), SECOND).to_numpy(),
        later["bo"].to_numpy().astype(np.float64),
        times,
        "vmstat bo vs write completion KiB",
        weights=kib,
        truncated=False,
    )


def _sampler_start(logs: list[LogSource], zero: TraceZero) -> int | None:
    if zero.wall_ns is None:
        return None
    for log in logs:
        table = log.tables.get("iostat_log")
        if table is not None and len(table["time_ns"].drop_null()):
            return int(pc.min(table["time_ns"]).as_py()) - zero.wall_ns
    return None


def with_t_ns(name: str, table: pa.Table, doc: dict[str, Any]) -> pa.Table:
    """The table with t_ns = time_ns + offset (sample * 1 s + offset for untimed samplers)."""
    index = table.schema.get_field_index("t_ns")
    offset = doc["offset_ns"]
    if index < 0 or offset is None:
        return table
    if doc["kind"] == "sample_index":
        base = pc.multiply(pc.cast(table["sample"], pa.int64()), SECOND)
    else:
        base = table["time_ns"]
    try:
        t_ns = pc.add_checked(base, pa.scalar(offset, pa.int64()))
    except (pa.ArrowInvalid, OverflowError):
        raise InputFormatError(
            name, f"times shifted by {offset} ns leave the clock's range (int64 ns)"
        ) from None
    return table.set_column(index, table.schema.field(index), t_ns)
