"""Parse writeback logs into the `writeback` table: writeback.bt's `TIME DEVICE PAGES REASON ms`,
the monotonic `MONO_NS DEVICE PAGES REASON us`, and the raw ftrace text of the
writeback_start/writeback_written tracepoints that `blkscope capture` keeps
(`writeback_trace.txt`), the only one of the three that tells how many pages a work item wrote."""

from __future__ import annotations

import re

import pyarrow as pa

from blkscope.errors import ParseError
from blkscope.ingest.logs.textlog import (
    LIMIT,
    MAX_DIGITS,
    TRACER_CHATTER,
    SideLog,
    TableRows,
    to_int,
    to_ns,
    within,
)
from blkscope.ingest.logs.wall_stamps import time_of_day_ns
from blkscope.ingest.sources import Input
from blkscope.schemas.bpf_logs import WRITEBACK

HEADERS: dict[tuple[str, ...], tuple[str, str]] = {
    ("TIME", "DEVICE", "PAGES", "REASON", "ms"): ("time_of_day", "ms"),
    ("MONO_NS", "DEVICE", "PAGES", "REASON", "us"): ("monotonic", "us"),
}
FORMATS = ("writeback", "writeback_ns")
HINT = (
    "expected a header 'TIME DEVICE PAGES REASON ms' (writeback.bt) or "
    "'MONO_NS DEVICE PAGES REASON us'"
)
_DEV = re.compile(r"(\d{1,10}):(\d{1,10})")  # longer: a bdi name, not major:minor
DAY_NS = 86_400 * 1_000_000_000


def _time_of_day(path: str, line_no: int, text: str) -> int:
    try:
        ns = time_of_day_ns(text)
    except ValueError:
        ns = None
    if ns is None:
        raise ParseError(path, line_no, f"TIME: expected HH:MM:SS, got {text!r}")
    return ns


def parse_writeback(given: Input) -> pa.Table:
    """Parse a writeback.bt log (either clock) into the `writeback` table."""
    log = SideLog(given)
    path = log.path
    layout: tuple[str, str] | None = None
    rows = TableRows(path, WRITEBACK)
    day = 0
    previous = None
    for line_no, line in log.lines():
        fields = line.split()
        if not fields or (layout is None and TRACER_CHATTER.fullmatch(line.strip())):
            continue
        if layout is None:
            if tuple(fields) not in HEADERS:
                if fields[0] in ("TIME", "MONO_NS") and "DEVICE" in fields:
                    raise ParseError(
                        path, line_no, f"unexpected columns {' '.join(fields)!r}", hint=HINT
                    )
                raise log.wrong_format(FORMATS, HINT)
            layout = HEADERS[tuple(fields)]
            continue
        if line.startswith("@"):
            continue  # maps bpftrace prints at exit
        if len(fields) != 5:
            raise ParseError(
                path,
                line_no,
                f"expected 5 fields (TIME DEVICE PAGES REASON DURATION), got {len(fields)}",
            )
        clock, unit = layout
        if clock == "time_of_day":
            time_ns = _time_of_day(path, line_no, fields[0])
            if previous is not None and time_ns + day < previous - DAY_NS // 2:
                day += DAY_NS  # the log crossed midnight
            time_ns += day
        else:
            time_ns = to_int(path, line_no, fields[0], "MONO_NS")
        previous = time_ns
        dev = _DEV.fullmatch(fields[1])
        rows.append(
            {
                "clock": clock,
                "time_ns": time_ns,
                "device": fields[1],
                "dev_major": int(dev.group(1)) if dev else None,
                "dev_minor": int(dev.group(2)) if dev else None,
                "pages_left": _pages_left(path, line_no, fields[2]),
                "pages_written": None,
                "reason": fields[3],
                "duration_ns": to_ns(path, line_no, fields[4], unit, unit),
                "line_no": line_no,
            }
        )
    if layout is None:
        raise log.wrong_format(FORMATS, HINT)
    return rows.table()


# "  kworker/u8:0-12  [000] ...1.  952.644116: writeback_written: bdi 254:0: sb_dev 0:0
#  nr_pages=62327 ... reason=periodic ..."  (the irq-info column is optional)
TRACE_LINE = re.compile(
    r"\[\d+\]\s+(?:\S+\s+)?(?P<sec>\d+)\.(?P<usec>\d{6}):\s+"
    r"(?P<event>writeback_start|writeback_written):\s+bdi (?P<bdi>\S+):\s+sb_dev"
    r".*?nr_pages=(?P<pages>-?\d+).*?reason=(?P<reason>\w+)"
)
TRACE_HINT = "expected ftrace text lines of writeback_start / writeback_written events"
# A work item with no page limit (sync, background, fs_free_space) asks for LONG_MAX pages and
# counts down from there: what it wrote is still the difference, what is left is no number.
NO_PAGE_LIMIT = (1 << 63) - 1


def _nr_pages(path: str, line_no: int, text: str) -> int:
    """A tracepoint's nr_pages: any long (the pattern holds only a sign and digits)."""
    # more digits than any long: never given to int(), which refuses over 4,300 of them
    digits = len(text.lstrip("-"))
    if digits > MAX_DIGITS:
        raise ParseError(path, line_no, f"nr_pages: {digits:,} digits, out of range for a long")
    value = int(text)
    if not -NO_PAGE_LIMIT - 1 <= value <= NO_PAGE_LIMIT:
        raise ParseError(path, line_no, f"nr_pages: {value} is out of range for a long")
    return value


def _pages_left(path: str, line_no: int, text: str) -> int | None:
    """A log's PAGES: nr_pages left at the end; None when counting down from LONG_MAX (no
    page limit)."""
    digits = text.lstrip("+-")
    if (
        digits.isascii()
        and digits.isdigit()
        and len(digits) <= MAX_DIGITS  # a longer one is out of range (to_int says so)
        and LIMIT <= int(text) <= NO_PAGE_LIMIT
    ):
        return None
    return to_int(path, line_no, text, "PAGES")


def parse_writeback_trace(given: Input) -> pa.Table:
    """Parse the ftrace text of writeback_start/writeback_written (trace_clock=mono, as
    `blkscope capture` records it) into the `writeback` table: one row per work item, at its
    writeback_written. A work item's nr_pages counts down as it writes, so what it wrote is
    nr_pages at its start minus nr_pages at its end; an end without a start (the trace began
    mid-item) leaves pages_written null."""
    log = SideLog(given)
    path = log.path
    rows = TableRows(path, WRITEBACK)
    started: dict[str, tuple[int, int]] = {}  # bdi -> (start ns, nr_pages at start)
    seen = False
    for line_no, line in log.lines():
        m = TRACE_LINE.search(line)
        if m is None:
            continue
        seen = True
        # ftrace's text output prints the mono clock with microsecond resolution
        ns = int(m["sec"]) * 1_000_000_000 + int(m["usec"]) * 1000
        pages = _nr_pages(path, line_no, m["pages"])
        bdi = m["bdi"]
        if m["event"] == "writeback_start":
            started[bdi] = (ns, pages)
            continue
        start = started.pop(bdi, None)
        dev = _DEV.fullmatch(bdi)
        rows.append(
            {
                "clock": "monotonic",
                "time_ns": ns,
                "device": bdi,
                "dev_major": int(dev.group(1)) if dev else None,
                "dev_minor": int(dev.group(2)) if dev else None,
                "pages_left": pages if -LIMIT < pages < LIMIT else None,
                "pages_written": within(path, line_no, start[1] - pages, "pages written")
                if start
                else None,
                "reason": m["reason"],
                "duration_ns": ns - start[0] if start else 0,
                "line_no": line_no,
            }
        )
    if not seen:
        raise log.wrong_format(("writeback_trace",), TRACE_HINT)
    return rows.table()
