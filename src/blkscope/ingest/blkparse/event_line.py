"""Reference parser and renderer for one blkparse default-format event line.

The compiled scanner (rust/src/ingest/blkparse_text/, called by `text_stream`) handles the
common shapes fast; every other line comes here, and the tests hold both to the same answers.
"""

from __future__ import annotations

import re
from typing import Any

from blkscope.concepts import MAX_SECTOR

ACTIONS: tuple[str, ...] = (
    "Q",
    "G",
    "I",
    "D",
    "C",
    "M",
    "F",
    "P",
    "U",
    "UT",
    "X",
    "A",
    "R",
    "S",
    "T",
    "B",
    "m",
)
ACTION_CODE = {a: i for i, a in enumerate(ACTIONS)}
OPS = ("R", "W", "D", "N")

# What follows the RWBS column, per action, in blkparse_fmt.c's process_default().
TAIL_FORMS = {
    "Q": "sector + count [comm]",
    "G": "sector + count [comm]",
    "I": "sector + count [comm]",
    "D": "sector + count [comm]",
    "B": "sector + count [comm]",
    "M": "sector + count [comm]",
    "F": "sector + count [comm]",
    "S": "sector + count [comm]",
    "C": "sector + count [error]",
    "R": "sector + count [error]",
    "P": "[comm]",
    "U": "[comm] depth",
    "UT": "[comm] depth",
    "T": "[comm] depth",
    "X": "sector / split_sector [comm]",
    "A": "sector + count <- (major,minor) sector",
    "m": "message text",
}


# RWBS as any kernel or blkparse printed it: a preflush F, the op (R W D N; DE secure erase,
# F flush, WZ write zeroes, ZA/ZR/ZRA/ZF/ZO/ZC zone ops from newer kernels' blk_fill_rwbs),
# then FUA F, A readahead, B barrier (kernels before 2.6.37), S sync, M meta, E secure
# (3.x kernels) and U atomic (6.11+).
_RWBS = re.compile(r"(F?)(DE|WZ|ZRA|Z[ARFOC]|[DWRNF])(F?)(A?)(B?)(S?)(M?)(E?)(U?)")
# Which of R W D N each op is: what it does to data, as the op column says.
_OP_CLASS = {"DE": "D", "WZ": "W", "ZA": "W", "F": "N"}
_CGROUP = re.compile(r"[0-9a-f]+,[0-9a-f]+")
_BLANK = " \t"
# The terminal's echo of the Ctrl-C that stopped blktrace, glued to the next line printed.
CTRL_C = "^C"
_DEV = re.compile(r"(\d+),(\d+)")
_INT = re.compile(r"\d+")
_SEQ = re.compile(r"-?\d+")
_TIME = re.compile(r"(\d+)\.(\d{9})")

_SECTORED = re.compile(r"(?:(\d+) \+ (\d+) )?(?:\((\s*\d+)\) )?\[(.*)\]", re.S)
_PC_ISSUE = re.compile(r"(\d+) (?:\((.*?)\) )?\[(.*)\]", re.S)
_MERGE_LIKE = re.compile(r"(?:(\d+) \+ (\d+) )?\[(.*)\]", re.S)
_COMPLETE = re.compile(r"(\d+)(?: \+ (\d+))?(?: \((\s*\d+)\))? \[(-?\d+)\]")
_PC_COMPLETE = re.compile(r"(?:\((.*)\) )?\[(-?\d+)\]")
_PLUG = re.compile(r"\[(.*)\]", re.S)
_UNPLUG = re.compile(r"\[(.*)\] (\d+)", re.S)
_SPLIT = re.compile(r"(\d+) / (\d+) \[(.*)\]", re.S)
_REMAP = re.compile(r"(\d+) \+ (\d+) <- \((\d+),(\d+)\) (\d+)")


class LineError(ValueError):
    """A line is not a valid blkparse event line; the message says why."""


def rwbs_flags(rwbs: str) -> dict[str, Any] | None:
    """Decompose an RWBS string into op and flags, or None when it is not valid."""
    m = _RWBS.fullmatch(rwbs)
    if m is None:
        return None
    op = m.group(2)
    return {
        "op": _OP_CLASS.get(op, "N" if op[0] == "Z" else op),
        "flush": bool(m.group(1)) or op == "F",
        "fua": bool(m.group(3)),
        "readahead": bool(m.group(4)),
        "sync": bool(m.group(6)),
        "meta": bool(m.group(7)),
    }


def render_rwbs(op: str, flush: bool, fua: bool, readahead: bool, sync: bool, meta: bool) -> str:
    """Rebuild RWBS in blkparse's letter order (fill_rwbs)."""
    return (
        ("F" if flush else "")
        + op
        + ("F" if fua else "")
        + ("A" if readahead else "")
        + ("S" if sync else "")
        + ("M" if meta else "")
    )


def empty_row() -> dict[str, Any]:
    """An events row with every optional column empty (header fields still to fill)."""
    return {
        "sector": None,
        "nsectors": None,
        "split_sector": None,
        "remap_dev_major": None,
        "remap_dev_minor": None,
        "remap_sector": None,
        "error": None,
        "comm": None,
        "comm_raw": None,
        "depth": None,
        "message": None,
        "pc_bytes": None,
        "pdu": None,
        "elapsed": None,
        "cgroup": None,
        "source": "blkparse",
        "raw_line": None,
    }


def set_comm(row: dict[str, Any], comm: str) -> None:
    """Store a comm; bytes that are not UTF-8 go to comm_raw, comm gets replacements."""
    # Lines are decoded with surrogateescape, so undecodable bytes survive to here.
    try:
        comm.encode("utf-8")
        row["comm"] = comm
    except UnicodeEncodeError:
        raw = comm.encode("utf-8", "surrogateescape")
        row["comm_raw"] = raw
        row["comm"] = raw.decode("utf-8", "replace")


def number(text: str) -> int:
    """int(text) of a field of digits: a LineError past 40 digits (no column holds a number that
    long, and int() refuses strings of over 4,300 digits with a ValueError)."""
    if len(text.lstrip("-")) > 40:
        raise LineError(f"number {text[:20]}... ({len(text)} digits) is too long for any column")
    return int(text)


def _int(s: str | None) -> int | None:
    return None if s is None else number(s)


def _valid_or_none(text: str | None) -> str | None:
    return None if text is None else valid_text(text)


def valid_text(text: str) -> str:
    """Text decoded with surrogateescape, with each undecodable byte as U+FFFD (as blkparse's
    binary path does for messages): Parquet strings must be valid UTF-8."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


_FIELDS: dict[str, tuple[re.Pattern[str] | None, str, str]] = {
    # name: (pattern, what a missing one is called, what a bad one says)
    "dev": (_DEV, "device 'major,minor'", "expected device as 'major,minor', got {!r}"),
    "cpu": (_INT, "cpu", "expected a cpu number, got {!r}"),
    "seq": (_SEQ, "sequence number", "expected a sequence number, got {!r}"),
    "time": (_TIME, "time", "expected time as seconds.nanoseconds with 9 digits, got {!r}"),
    "pid": (_INT, "pid", "expected a pid, got {!r}"),
    "action": (
        None,
        "action",
        "unknown action {!r} (expected one of " + " ".join(ACTIONS) + ")",
    ),
    "rwbs": (None, "RWBS", "invalid RWBS {!r} (expected letters like WS, RA, FWFSM, N)"),
}
# The header fields of blkparse's default format, and of the blk tracer's text lines: classic
# (options/blk_classic: no sequence number) and inside ftrace's context (device only).
BLKPARSE_LAYOUT = ("dev", "cpu", "seq", "time", "pid", "action", "rwbs")
CLASSIC_LAYOUT = ("dev", "cpu", "time", "pid", "action", "rwbs")
BLK_TEXT_LAYOUT = ("dev", "action", "rwbs")


def _next_token(line: str, i: int) -> tuple[str | None, int]:
    """The blank-separated token at or after i, and the index just past it."""
    n = len(line)
    while i < n and line[i] in _BLANK:
        i += 1
    if i >= n:
        return None, i
    j = i
    while j < n and line[j] not in _BLANK:
        j += 1
    return line[i:j], j


def _valid(name: str, tok: str) -> bool:
    if name == "action":
        return tok in ACTION_CODE
    if name == "rwbs":
        return rwbs_flags(tok) is not None
    pattern = _FIELDS[name][0]
    return pattern is not None and pattern.fullmatch(tok) is not None


def parse_header(line: str, layout: tuple[str, ...]) -> tuple[dict[str, str], str | None, str]:
    """Check the header tokens of `layout`; return them by name, the cgroup column, the tail.

    A cgroup id ('ino,gen' in hex) may stand before the action (blkparse prints it on the m
    lines of kernels with cgroup info, the blk tracer on every line with blk_cgroup).
    """
    i = 0
    while line.startswith(CTRL_C, i):
        i += len(CTRL_C)
    toks: list[str] = []
    cgroup = None
    while len(toks) < len(layout):
        tok, i = _next_token(line, i)
        if tok is None:
            break
        if layout[len(toks)] == "action" and cgroup is None and _CGROUP.fullmatch(tok):
            cgroup = tok
            continue
        toks.append(tok)
    for k, (name, tok) in enumerate(zip(layout, toks, strict=False)):
        if not _valid(name, tok):
            cut = " (line cut short?)" if k == len(toks) - 1 and i >= len(line) else ""
            raise LineError(_FIELDS[name][2].format(tok) + cut)
    if len(toks) < len(layout):
        got = "an empty line" if not toks else f"only {len(toks)} field{'s' * (len(toks) > 1)}"
        raise LineError(f"line ends early: missing {_FIELDS[layout[len(toks)]][1]} (got {got})")
    fields = dict(zip(layout, toks, strict=True))
    action = fields["action"]
    if i >= len(line) and action != "m":
        raise LineError(f"line ends after RWBS: {action} expects '{TAIL_FORMS[action]}'")
    return fields, cgroup, line[i + 1 :]


def header_row(fields: dict[str, str], cgroup: str | None) -> dict[str, Any]:
    """An events row with the header fields filled in (those the layout has)."""
    dm = _DEV.fullmatch(fields["dev"])
    flags = rwbs_flags(fields["rwbs"])
    assert dm is not None and flags is not None
    row = empty_row()
    row.update(
        dev_major=number(dm.group(1)),
        dev_minor=number(dm.group(2)),
        action=fields["action"],
        rwbs=fields["rwbs"],
        cgroup=cgroup,
        **flags,
    )
    if "time" in fields:
        tm = _TIME.fullmatch(fields["time"])
        assert tm is not None
        row["time_ns"] = number(tm.group(1)) * 1_000_000_000 + int(tm.group(2))
    for name in ("cpu", "seq", "pid"):
        if name in fields:
            row[name] = number(fields[name])
    return row


# Integer columns of events and the bits of their signed type (the schema's widths).
INT_BITS = {
    "dev_major": 31, "dev_minor": 31, "cpu": 31, "seq": 63, "time_ns": 63, "pid": 63,
    "sector": 63, "nsectors": 31, "split_sector": 63, "remap_dev_major": 31,
    "remap_dev_minor": 31, "remap_sector": 63, "error": 31, "depth": 31, "pc_bytes": 63,
    "elapsed": 63,
}  # fmt: skip


def check_ranges(row: dict[str, Any]) -> None:
    """A LineError naming the first number too big for its column, or a sector past the end of
    any block device: never wrapped, never lost."""
    for name, bits in INT_BITS.items():
        value = row.get(name)
        if value is not None and not -(2**bits) <= value < 2**bits:
            raise LineError(f"{name} {value} does not fit a {bits + 1}-bit integer")
    for name, length_column in SECTOR_COLUMNS.items():
        start = row.get(name)
        length = (row.get(length_column) or 0) if length_column else 0
        if start is not None and start + length > MAX_SECTOR:
            raise LineError(past_last_sector(name, start, length))


# Sector columns of events, and the column holding the length of the range each starts.
SECTOR_COLUMNS = {"sector": "nsectors", "split_sector": None, "remap_sector": "nsectors"}


def past_last_sector(name: str, start: int, length: int) -> str:
    """The reason a line or record whose sector range ends past MAX_SECTOR is refused."""
    what = f"{name.replace('_', ' ')} {start:,}" + (f" + {length:,}" if length else "")
    return (
        f"{what} ends past sector 2^54, the end of the largest block device Linux can "
        "address (2^63 bytes)"
    )


def parse_event_line(line: str) -> dict[str, Any]:
    """Parse one event line (no newline) into a row of the events table, minus line_no/input_id."""
    fields, cgroup, tail = parse_header(line, BLKPARSE_LAYOUT)
    row = header_row(fields, cgroup)
    parse_tail(fields["action"], tail, row)
    check_ranges(row)
    return row


def parse_tail(action: str, tail: str, row: dict[str, Any]) -> None:
    text = tail if action == "m" else tail.strip(_BLANK + "\r")  # copied text: blanks, CR
    bad = LineError(f"{action} expects '{TAIL_FORMS[action]}' after RWBS, got {tail!r}")
    if action in ("Q", "I", "D", "B"):
        m = _SECTORED.fullmatch(text)
        if m is not None:
            row["sector"], row["nsectors"] = _int(m.group(1)), _int(m.group(2))
            row["elapsed"] = _int(m.group(3))
            set_comm(row, m.group(4))
            return
        m = _PC_ISSUE.fullmatch(text)
        if m is None:
            raise bad
        # The pdu bytes as text; undecodable bytes as U+FFFD (raw_line keeps the line's bytes).
        row["pc_bytes"], row["pdu"] = number(m.group(1)), _valid_or_none(m.group(2))
        set_comm(row, m.group(3))
    elif action in ("G", "M", "F", "S"):
        m = _MERGE_LIKE.fullmatch(text)
        if m is None:
            raise bad
        row["sector"], row["nsectors"] = _int(m.group(1)), _int(m.group(2))
        set_comm(row, m.group(3))
    elif action in ("C", "R"):
        m = _COMPLETE.fullmatch(text)
        if m is not None:
            row["sector"] = number(m.group(1))
            row["nsectors"] = number(m.group(2) or "0")
            row["elapsed"] = _int(m.group(3))
            row["error"] = number(m.group(4))
            return
        m = _PC_COMPLETE.fullmatch(text)
        if m is None:
            raise bad
        row["pdu"], row["error"] = _valid_or_none(m.group(1)), number(m.group(2))
    elif action == "P":
        m = _PLUG.fullmatch(text)
        if m is None:
            raise bad
        set_comm(row, m.group(1))
    elif action in ("U", "UT", "T"):
        m = _UNPLUG.fullmatch(text)
        if m is None:
            raise bad
        set_comm(row, m.group(1))
        row["depth"] = number(m.group(2))
    elif action == "X":
        m = _SPLIT.fullmatch(text)
        if m is None:
            raise bad
        row["sector"], row["split_sector"] = number(m.group(1)), number(m.group(2))
        set_comm(row, m.group(3))
    elif action == "A":
        m = _REMAP.fullmatch(text)
        if m is None:
            raise bad
        row["sector"], row["nsectors"] = number(m.group(1)), number(m.group(2))
        row["remap_dev_major"], row["remap_dev_minor"] = number(m.group(3)), number(m.group(4))
        row["remap_sector"] = number(m.group(5))
    else:  # m: free text, kept verbatim
        row["message"] = valid_text(text)  # undecodable bytes as U+FFFD


def _comm_text(row: dict[str, Any]) -> str:
    raw = row.get("comm_raw")
    if raw is not None:
        return bytes(raw).decode("utf-8", "surrogateescape")
    return row["comm"] or ""


def render_event(row: dict[str, Any]) -> str:
    """Render an events row in blkparse's default format (process_default), without newline."""
    t = row["time_ns"]
    cgroup = row.get("cgroup")
    head = "%3d,%-3d %2d %8d %5d.%09d %5d %s%2s %3s " % (  # noqa: UP031 - mirrors blkparse's printf
        row["dev_major"],
        row["dev_minor"],
        row["cpu"],
        row["seq"],
        t // 1_000_000_000,
        t % 1_000_000_000,
        row["pid"],
        f"{cgroup} " if cgroup is not None else "",
        row["action"],
        row["rwbs"],
    )
    a = row["action"]
    sec, n = row.get("sector"), row.get("nsectors")
    elapsed = row.get("elapsed")
    el = f"({elapsed:8d}) " if elapsed is not None else ""
    if a in ("C", "R"):
        if sec is None:
            pdu = f"({row['pdu']}) " if row.get("pdu") is not None else ""
            return f"{head}{pdu}[{row['error']}]"
        size = f" + {n}" if n else ""
        el = f" ({elapsed:8d})" if elapsed is not None else ""
        return f"{head}{sec}{size}{el} [{row['error']}]"
    if a in ("Q", "I", "D", "B") and row.get("pc_bytes") is not None:
        pdu = f"({row['pdu']}) " if row.get("pdu") is not None else ""
        return f"{head}{row['pc_bytes']} {pdu}[{_comm_text(row)}]"
    if a in ("Q", "I", "D", "B", "G", "M", "F", "S"):
        pos = f"{sec} + {n} " if sec is not None else ""
        return f"{head}{pos}{el}[{_comm_text(row)}]"
    if a == "P":
        return f"{head}[{_comm_text(row)}]"
    if a in ("U", "UT", "T"):
        return f"{head}[{_comm_text(row)}] {row['depth']}"
    if a == "X":
        return f"{head}{sec} / {row['split_sector']} [{_comm_text(row)}]"
    if a == "A":
        return (
            f"{head}{sec} + {n} <- ({row['remap_dev_major']},{row['remap_dev_minor']}) "
            f"{row['remap_sector']}"
        )
    return f"{head}{row['message']}"
