"""Parse `iostat -x [-t] [-k|-m]` output by header name, old and new sysstat layouts alike."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from blkscope.errors import ParseError
from blkscope.ingest.detect import detect_text
from blkscope.ingest.logs.textlog import (
    SideLog,
    TableRows,
    to_float,
)
from blkscope.ingest.logs.wall_stamps import date_time_ns, time_of_day_ns
from blkscope.ingest.sources import Input
from blkscope.schemas.sysstat import IOSTAT_CPU, IOSTAT_LOG
from blkscope.units import NS_PER_S

# header name -> (column, factor to the column's unit)
COLUMNS: dict[str, tuple[str, float]] = {
    "r/s": ("r_s", 1),
    "w/s": ("w_s", 1),
    "d/s": ("d_s", 1),
    "f/s": ("f_s", 1),
    "rkB/s": ("rkib_s", 1),
    "rMB/s": ("rkib_s", 1024),
    "rsec/s": ("rkib_s", 0.5),
    "wkB/s": ("wkib_s", 1),
    "wMB/s": ("wkib_s", 1024),
    "wsec/s": ("wkib_s", 0.5),
    "dkB/s": ("dkib_s", 1),
    "dMB/s": ("dkib_s", 1024),
    "dsec/s": ("dkib_s", 0.5),
    "rrqm/s": ("rrqm_s", 1),
    "wrqm/s": ("wrqm_s", 1),
    "drqm/s": ("drqm_s", 1),
    "%rrqm": ("rrqm_pct", 1),
    "%wrqm": ("wrqm_pct", 1),
    "%drqm": ("drqm_pct", 1),
    "await": ("await_ms", 1),
    "r_await": ("r_await_ms", 1),
    "w_await": ("w_await_ms", 1),
    "d_await": ("d_await_ms", 1),
    "f_await": ("f_await_ms", 1),
    "rareq-sz": ("rareq_kib", 1),
    "wareq-sz": ("wareq_kib", 1),
    "dareq-sz": ("dareq_kib", 1),
    "areq-sz": ("areq_kib", 1),
    "avgrq-sz": ("areq_kib", 0.5),
    "aqu-sz": ("aqu_sz", 1),
    "avgqu-sz": ("aqu_sz", 1),
    "svctm": ("svctm_ms", 1),
    "%util": ("util_pct", 1),
}
CPU_COLUMNS = {
    "%user": "user_pct",
    "%nice": "nice_pct",
    "%system": "system_pct",
    "%iowait": "iowait_pct",
    "%steal": "steal_pct",
    "%idle": "idle_pct",
}

_US_TIME = re.compile(r"(\d{2})/(\d{2})/(\d{2}|\d{4}) (\d{1,2}:\d{2}:\d{2})(?: ([AP]M))?")
DAY_NS = 86_400 * 1_000_000_000
_BANNER = re.compile(r"Linux \S+ \(.*\)")
FORMATS = ("iostat",)
HINT = "record it with 'iostat -xt 1' (or -xmt) so every report has a timestamp"


def parse_time_of_day(text: str) -> int | None:
    """ns since midnight of a date-less timestamp line ("Time: 03:14:07 PM"), else None."""
    return time_of_day_ns(text.removeprefix("Time: "))


def parse_timestamp(text: str) -> int | None:
    """ns since the epoch of an iostat -t timestamp line, or None when it is not one.

    A line shaped like a timestamp that names no real moment (month 13, 25:00) is a ValueError.
    """
    when = date_time_ns(text)
    if when is not None:
        return when
    m = _US_TIME.fullmatch(text)
    if m is None:
        return None
    a, b, year = int(m.group(1)), int(m.group(2)), int(m.group(3))
    month, day = (b, a) if a > 12 else (a, b)  # a day-first locale shows itself only past the 12th
    year += 2000 if year < 100 else 0
    clock = time_of_day_ns(" ".join(g for g in (m.group(4), m.group(5)) if g))
    date = dt.datetime(year, month, day, tzinfo=dt.timezone.utc)
    return int(date.timestamp()) * NS_PER_S + (clock or 0)


@dataclass
class _State:
    path: str
    sample: int = -1
    starter: str | None = None
    time_text: str | None = None
    time_ns: int | None = None
    header: list[str] | None = None
    cpu_header: list[str] | None = None
    devices: TableRows = field(init=False)
    cpus: TableRows = field(init=False)

    def __post_init__(self) -> None:
        self.devices = TableRows(self.path, IOSTAT_LOG)
        self.cpus = TableRows(self.path, IOSTAT_CPU)

    def begin(self, kind: str) -> None:
        """A timestamp, avg-cpu or Device line opens a report, whichever the file leads with."""
        if self.starter is None:
            self.starter = kind
        if kind == self.starter:
            self.sample += 1
            if kind != "time":
                self.time_text = self.time_ns = None


def _device_row(st: _State, line_no: int, line: str) -> dict[str, Any]:
    assert st.header is not None
    values = line.split()
    if len(values) != len(st.header):
        raise ParseError(
            st.path,
            line_no,
            f"device row has {len(values)} fields but the Device header has {len(st.header)}",
        )
    row: dict[str, Any] = {
        "sample": st.sample,
        "time_text": st.time_text,
        "time_ns": st.time_ns,
        "since_boot": st.sample == 0,
        "device": values[0],
        "line_no": line_no,
    }
    extra = {}
    for name, text in zip(st.header[1:], values[1:], strict=True):
        value = to_float(st.path, line_no, text, name)
        if name in COLUMNS:
            column, factor = COLUMNS[name]
            row[column] = value * factor
        else:
            extra[name] = value
    row["extra"] = list(extra.items()) or None
    return row


def _cpu_row(st: _State, line_no: int, line: str) -> dict[str, Any]:
    assert st.cpu_header is not None
    values = line.split()
    if len(values) != len(st.cpu_header):
        raise ParseError(
            st.path,
            line_no,
            f"avg-cpu row has {len(values)} fields but its header has {len(st.cpu_header)}",
        )
    row: dict[str, Any] = {"sample": st.sample, "time_ns": st.time_ns, "line_no": line_no}
    for name, text in zip(st.cpu_header, values, strict=True):
        if name in CPU_COLUMNS:
            row[CPU_COLUMNS[name]] = to_float(st.path, line_no, text, name)
    return row


def parse_iostat(given: Input) -> dict[str, pa.Table]:
    """Parse iostat -x output into the `iostat` and `iostat_cpu` tables."""
    log = SideLog(given)
    path = log.path
    st = _State(path)
    section = None
    day = 0
    for line_no, line in log.lines():
        stripped = line.strip()
        if not stripped:
            section = None
            continue
        try:
            time_ns = parse_timestamp(stripped)
            day_time = parse_time_of_day(stripped) if time_ns is None else None
        except ValueError:
            raise ParseError(path, line_no, f"impossible date or time {stripped!r}") from None
        if day_time is not None:
            time_ns = day_time
            # No date: ns since the midnight before the first report, a day more per midnight.
            if st.time_ns is not None and time_ns + day < st.time_ns - DAY_NS // 2:
                day += DAY_NS
            time_ns += day
        if time_ns is not None:
            st.begin("time")
            st.time_text, st.time_ns, section = stripped, time_ns, None
        elif stripped.startswith("avg-cpu:"):
            st.begin("cpu")
            st.cpu_header, section = stripped.split()[1:], "cpu"
        elif re.match(r"Device:?\s", stripped):
            st.begin("device")
            st.header, section = stripped.split(), "device"
            if not any(name in COLUMNS for name in st.header[1:]) or "%util" not in st.header:
                raise ParseError(
                    path,
                    line_no,
                    f"Device header without iostat -x columns (got {' '.join(st.header[1:4])} ...)",
                    hint="run iostat with -x for extended statistics",
                )
        elif section == "device":
            st.devices.append(_device_row(st, line_no, line))
        elif section == "cpu":
            st.cpus.append(_cpu_row(st, line_no, line))
            section = None
        elif line_no == 1 and _BANNER.match(stripped):
            continue
        elif st.header is None and st.cpu_header is None:
            if detect_text(log.head) != "iostat":
                raise log.wrong_format(FORMATS, HINT)
            raise ParseError(
                path, line_no, f"unexpected line before the first report: {stripped[:60]!r}"
            )
        else:
            raise ParseError(
                path, line_no, f"unexpected line outside a report section: {stripped[:60]!r}"
            )
    if not st.devices:
        raise log.wrong_format(FORMATS, HINT)
    return {
        "iostat_log": st.devices.table(),
        "iostat_cpu": st.cpus.table(),
    }
