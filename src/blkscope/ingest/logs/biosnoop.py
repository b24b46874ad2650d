"""Parse biosnoop logs (bcc, libbpf-tools, bpftrace biosnoop.bt) by header; COMM may hold spaces."""

from __future__ import annotations

import re
from typing import Any

import pyarrow as pa

from blkscope.errors import ParseError
from blkscope.ingest.logs.textlog import (
    TRACER_CHATTER,
    SideLog,
    TableRows,
    to_int,
    to_ns,
)
from blkscope.ingest.sources import Input
from blkscope.schemas.bpf_logs import BIOSNOOP

# header name -> (column, how to read it)
COLUMNS: dict[str, tuple[str, str]] = {
    "TIME(s)": ("time_ns", "s"),
    "TIMESTAMP": ("time_ns", "s"),
    "TIME(ms)": ("time_ns", "ms"),
    "COMM": ("comm", "text"),
    "PID": ("pid", "int"),
    "DISK": ("disk", "text"),
    "T": ("rwbs", "text"),
    "SECTOR": ("sector", "int"),
    "BYTES": ("bytes", "int"),
    "QUE(ms)": ("queue_ns", "ms"),
    "LAT(ms)": ("latency_ns", "ms"),
}
REQUIRED = ("COMM", "PID", "DISK", "LAT(ms)")
FORMATS = ("biosnoop", "biosnoop_bt")
HINT = (
    "expected a header like 'TIME(s) COMM PID DISK T SECTOR BYTES LAT(ms)' (bcc) or "
    "'TIME(ms) DISK COMM PID LAT(ms)' (biosnoop.bt)"
)
# bpftrace and bcc say so when their ring buffer dropped events: the log has gaps there.
_LOST = re.compile(r"(?:Lost|lost|Possibly lost) (\d+) (?:events|samples)(?: on CPU #\d+)?")
_TOKEN = re.compile(r"\S+")
_OP = re.compile(r"F?([DWRN])")


def _header(path: str, line_no: int, names: list[str]) -> list[str]:
    unknown = [n for n in names if n not in COLUMNS]
    if (
        unknown
        or names[0] not in ("TIME(s)", "TIMESTAMP", "TIME(ms)")
        or any(r not in names for r in REQUIRED)
    ):
        raise ParseError(
            path,
            line_no,
            f"unexpected biosnoop columns {' '.join(names)!r}"
            + (f" (unknown: {' '.join(unknown)})" if unknown else ""),
            hint=HINT,
        )
    return names


def _texts(path: str, line_no: int, line: str, names: list[str]) -> list[str]:
    """Split a row into one text per column; whatever lies between the fixed columns is COMM."""
    tokens = line.split()
    if len(tokens) == len(names):
        return tokens
    c = names.index("COMM")
    left, right = c, len(names) - c - 1
    if len(tokens) == len(names) - 1:  # an empty COMM
        return [*tokens[:left], "", *tokens[left:]]
    if len(tokens) < len(names):
        raise ParseError(
            path, line_no, f"expected {len(names)} fields ({' '.join(names)}), got {len(tokens)}"
        )
    spans = [m.span() for m in _TOKEN.finditer(line)]
    ends = spans[len(spans) - right :] if right else []
    middle_start = spans[left - 1][1] if left else 0
    middle_end = ends[0][0] if ends else len(line)
    return (
        [line[s:e] for s, e in spans[:left]]
        + [line[middle_start:middle_end].strip()]
        + [line[s:e] for s, e in ends]
    )


def _row(path: str, line_no: int, line: str, names: list[str]) -> dict[str, Any]:
    texts = _texts(path, line_no, line, names)
    row: dict[str, Any] = {
        "clock": "timestamp" if names[0] == "TIMESTAMP" else "since_start",
        "line_no": line_no,
    }
    for name, text in zip(names, texts, strict=True):
        column, kind = COLUMNS[name]
        if kind == "int":
            row[column] = to_int(path, line_no, text, name)
        elif kind == "text":
            row[column] = text
        else:
            row[column] = to_ns(path, line_no, text, kind, name)
    if row.get("queue_ns") is not None and row["queue_ns"] < 0:
        row["queue_ns"] = None  # libbpf-tools prints -1 when it saw no insert for the request
    if row.get("rwbs") is not None:
        op = _OP.match(row["rwbs"])
        if op is None:
            raise ParseError(
                path, line_no, f"T: expected R, W or an RWBS string, got {row['rwbs']!r}"
            )
        row["op"] = op.group(1)
    return row


def parse_biosnoop(given: Input) -> pa.Table:
    """Parse a biosnoop log of any of the three layouts into the `biosnoop` table.

    Events the tool reported lost are summed in the schema metadata key b"lost_events".
    """
    log = SideLog(given)
    path = log.path
    names: list[str] | None = None
    # One row per IO: a busy capture has millions, made Arrow a batch at a time (TableRows).
    rows = TableRows(path, BIOSNOOP)
    lost = 0
    for line_no, line in log.lines():
        stripped = line.strip()
        if not stripped or TRACER_CHATTER.fullmatch(stripped):
            continue
        m = _LOST.fullmatch(stripped)
        if m is not None:
            lost += to_int(path, line_no, m.group(1), "lost events")
            continue
        tokens = stripped.split()
        if tokens[0] in ("TIME(s)", "TIMESTAMP", "TIME(ms)"):
            # A header again (the tool restarted into the same file) must not change layout.
            if names is not None and tokens != names:
                raise ParseError(
                    path,
                    line_no,
                    "header changed within the file: "
                    f"{' '.join(tokens)!r} after {' '.join(names)!r}",
                )
            names = _header(path, line_no, tokens)
            continue
        if names is None:
            raise log.wrong_format(FORMATS, HINT)
        rows.append(_row(path, line_no, line, names))
    if names is None:
        raise log.wrong_format(FORMATS, HINT)
    return rows.table().replace_schema_metadata(
        {**(BIOSNOOP.metadata or {}), b"lost_events": str(lost).encode()}
    )
