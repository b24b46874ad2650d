"""Parse `vmstat` output by header name, and /proc/meminfo samples (one-line or whole snapshots)."""

from __future__ import annotations

import re
from typing import Any

import pyarrow as pa

from blkscope.errors import ParseError
from blkscope.ingest.logs.textlog import (
    SideLog,
    TableRows,
    decimal_to_ns,
    to_int,
)
from blkscope.ingest.logs.wall_stamps import date_time_ns
from blkscope.ingest.sources import Input
from blkscope.schemas.sysstat import MEMINFO, VMSTAT, VMSTAT_COLUMNS

VMSTAT_HINT = "record it with 'vmstat 1' (add -t for a timestamp per line)"
MEMINFO_HINT = (
    "expected lines 'EPOCH Dirty: N kB Writeback: N kB' or /proc/meminfo snapshots ('Key:  N kB')"
)
_TIMESTAMP = re.compile(r"(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2})")
_MEMINFO_PAIR = re.compile(r"([\w()]+):\s+(\d+)(?:\s+(kB))?")
_EPOCH = re.compile(r"\d{9,}(?:\.\d+)?")
# The longest /proc/meminfo key is 16 characters (HugePages_Total), a kB value 20 digits.
_MAX_FIELD = 64


def _vmstat_time(path: str, line_no: int, fields: list[str]) -> int:
    text = " ".join(fields)
    try:
        when = date_time_ns(text) if _TIMESTAMP.fullmatch(text) else None
    except ValueError:
        raise ParseError(path, line_no, f"impossible date or time {text!r}") from None
    if when is None:
        raise ParseError(path, line_no, f"timestamp: expected YYYY-MM-DD HH:MM:SS, got {text!r}")
    return when


def parse_vmstat(given: Input) -> pa.Table:
    """Parse `vmstat [-a] [-t] N` output into the `vmstat` table (header may repeat)."""
    log = SideLog(given)
    path = log.path
    names: list[str] | None = None
    rows = TableRows(path, VMSTAT)
    for line_no, line in log.lines():
        fields = line.split()
        if not fields or line.startswith("procs"):
            continue
        if fields[0] == "r" and len(fields) > 1 and fields[1] == "b":
            # With -t the timestamp column's header is the zone name (e.g. UTC) at the end.
            names = fields
            if names[-1] not in VMSTAT_COLUMNS:
                names = [*names[:-1], "timestamp"]
            unknown = [n for n in names if n not in VMSTAT_COLUMNS and n != "timestamp"]
            if unknown:
                raise ParseError(path, line_no, f"unknown vmstat column(s) {' '.join(unknown)}")
            continue
        if names is None:
            raise log.wrong_format(("vmstat",), VMSTAT_HINT)
        width = len(names) + (1 if names[-1] == "timestamp" else 0)
        if len(fields) != width:
            raise ParseError(
                path, line_no, f"expected {width} fields as in the header, got {len(fields)}"
            )
        row: dict[str, Any] = {"sample": len(rows), "line_no": line_no}
        for name, value in zip(names, fields, strict=False):
            if name != "timestamp":
                row[name] = to_int(path, line_no, value, name)
        if names[-1] == "timestamp":
            row["time_ns"] = _vmstat_time(path, line_no, fields[-2:])
        rows.append(row)
    if names is None:
        raise log.wrong_format(("vmstat",), VMSTAT_HINT)
    return rows.table()


def parse_meminfo(given: Input) -> pa.Table:
    """Parse meminfo samples into the long `meminfo` table (one row per field per sample)."""
    log = SideLog(given)
    path = log.path
    rows = TableRows(path, MEMINFO)
    sample = -1
    pending_time: int | None = None
    time_ns: int | None = None
    seen: set[str] = set()
    for line_no, line in log.lines():
        fields = line.split(None, 1)
        if not fields:
            continue
        if _EPOCH.fullmatch(fields[0]):
            when = decimal_to_ns(fields[0], "s")
            if len(fields) == 1:  # a timestamp line before a whole snapshot
                pending_time = when
                continue
            sample, time_ns, rest = sample + 1, when, fields[1]
            longest = max(rest.split(), key=len)
            if len(longest) > _MAX_FIELD:  # searching pairs in one long word is quadratic
                raise ParseError(
                    path,
                    line_no,
                    f"a field of {len(longest):,} characters ({longest[:20]!r}...): no meminfo "
                    "key or value is that long",
                    hint=MEMINFO_HINT,
                )
            pairs = list(_MEMINFO_PAIR.finditer(rest))
            if not pairs or "".join(m.group(0) for m in pairs).replace(" ", "") != rest.replace(
                " ", ""
            ):
                raise ParseError(
                    path,
                    line_no,
                    f"expected 'Key: N kB' pairs after the epoch, got {rest[:60]!r}",
                    hint=MEMINFO_HINT,
                )
        else:
            m = _MEMINFO_PAIR.fullmatch(line.strip())
            if m is None:
                if not rows:
                    raise log.wrong_format(("meminfo",), MEMINFO_HINT)
                raise ParseError(
                    path, line_no, f"expected 'Key: N kB', got {line[:60]!r}", hint=MEMINFO_HINT
                )
            pairs = [m]
            if m.group(1) in seen or sample < 0 or pending_time is not None:
                # A key seen again (MemTotal) starts the next whole snapshot.
                sample, time_ns, pending_time, seen = sample + 1, pending_time, None, set()
            seen.add(m.group(1))
        for pair in pairs:
            rows.append(
                {
                    "sample": sample,
                    "time_ns": time_ns,
                    "key": pair.group(1),
                    "value": to_int(path, line_no, pair.group(2), pair.group(1)),
                    "unit": pair.group(3),
                    "line_no": line_no,
                }
            )
    if not rows:
        raise log.wrong_format(("meminfo",), MEMINFO_HINT)
    return rows.table()
