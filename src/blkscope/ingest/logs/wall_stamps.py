"""Wall-clock stamps as the side logs print them, into integer ns: the one parser every log uses.

Two shapes occur: a time of day, `HH:MM:SS` (writeback.bt and bpftrace's time(), old iostat's
`Time: 03:14:07 PM`), read as ns since midnight; and a date with a time, `YYYY-MM-DD HH:MM:SS`
(vmstat -t, bcc's -j `ts`, iostat -t in ISO form, with an optional +HHMM or Z zone), read as ns
since the epoch, UTC unless a zone is printed. Text not shaped like a stamp is None (the caller
tries its other line shapes); a stamp that names no real moment (25:00:00, month 13) is a
ValueError, which each parser reports at its line.
"""

from __future__ import annotations

import datetime as dt
import re

from blkscope.units import NS_PER_S

_TIME_OF_DAY = re.compile(r"(\d{1,2}):(\d{2}):(\d{2})(?: ([AP]M))?")
_DATE_TIME = re.compile(r"(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})([+-]\d{4}|Z)?")


def time_of_day_ns(text: str) -> int | None:
    """ns since midnight of `H:MM:SS` or `HH:MM:SS` (with ` AM`/` PM`, a 12-hour clock); None
    when text is not shaped like one. Second 60 (a leap second) is allowed, as the kernel's and
    date's clocks may print it."""
    m = _TIME_OF_DAY.fullmatch(text)
    if m is None:
        return None
    hour, minute, second, half = int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4)
    if hour > (12 if half else 23) or minute > 59 or second > 60:
        raise ValueError(f"no such time of day: {text!r}")
    if half:
        hour = hour % 12 + (12 if half == "PM" else 0)
    return ((hour * 60 + minute) * 60 + second) * NS_PER_S


def date_time_ns(text: str) -> int | None:
    """ns since the epoch of `YYYY-MM-DD HH:MM:SS` (or with a T, and a +HHMM / Z zone; UTC when
    none is printed); None when text is not shaped like one."""
    m = _DATE_TIME.fullmatch(text)
    if m is None:
        return None
    zone = dt.timezone.utc
    if m.group(7) and m.group(7) != "Z":
        sign = -1 if m.group(7)[0] == "-" else 1
        hours, minutes = int(m.group(7)[1:3]), int(m.group(7)[3:5])
        if hours > 23 or minutes > 59:
            raise ValueError(f"no such time zone: {m.group(7)!r}")
        zone = dt.timezone(sign * dt.timedelta(hours=hours, minutes=minutes))
    try:
        year, month, day, hour, minute, second = (int(m.group(i)) for i in range(1, 7))
        when = dt.datetime(year, month, day, hour, minute, second, tzinfo=zone)
    except ValueError:
        raise ValueError(f"no such date or time: {text!r}") from None
    return int(when.timestamp()) * NS_PER_S
