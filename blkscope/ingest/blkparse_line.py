"""Reference parser and renderer for one blkparse default-format event line.

The numba scanner in `_scan` handles the common shapes fast; every other line
comes here, and the tests hold both to the same answers.
"""

from __future__ import annotations

import re
from typing import Any

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

HEADER_FIELDS = ("device 'major,minor'", "cpu", "sequence number", "time", "pid", "action", "RWBS")

_RWBS = re.compile(r"(F?)([DWRN])(F?)(A?)(S?)(M?)")
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
    return {
        "op": m.group(2),
        "flush": bool(m.group(1)),
        "fua": bool(m.group(3)),
        "readahead": bool(m.group(4)),
        "sync": bool(m.group(5)),
        "meta": bool(m.group(6)),
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


def _empty_row() -> dict[str, Any]:
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
    }


def _set_comm(row: dict[str, Any], comm: str) -> None:
    # Lines are decoded with surrogateescape, so undecodable bytes survive to here.
    try:
        comm.encode("utf-8")
        row["comm"] = comm
    except UnicodeEncodeError:
        raw = comm.encode("utf-8", "surrogateescape")
        row["comm_raw"] = raw
        row["comm"] = raw.decode("utf-8", "replace")


def _int(s: str | None) -> int | None:
    return None if s is None else int(s)


def _header(line: str) -> tuple[list[str], int]:
    """Split up to seven header tokens; return them and the index just past the last one."""
    toks: list[str] = []
    i, n = 0, len(line)
    while len(toks) < 7:
        while i < n and line[i] == " ":
            i += 1
        if i >= n:
            break
        j = line.find(" ", i)
        if j < 0:
            j = n
        toks.append(line[i:j])
        i = j
    return toks, i


_CHECKS: tuple[tuple[re.Pattern[str] | None, str], ...] = (
    (_DEV, "expected device as 'major,minor', got {!r}"),
    (_INT, "expected a cpu number, got {!r}"),
    (_SEQ, "expected a sequence number, got {!r}"),
    (_TIME, "expected time as seconds.nanoseconds with 9 digits, got {!r}"),
    (_INT, "expected a pid, got {!r}"),
    (None, "unknown action {!r} (expected one of " + " ".join(ACTIONS) + ")"),
    (None, "invalid RWBS {!r} (expected letters like WS, RA, FWFSM, N)"),
)


def parse_event_line(line: str) -> dict[str, Any]:
    """Parse one event line (no newline) into a row of the events table, minus line_no/input_id."""
    toks, i = _header(line)
    for k, tok in enumerate(toks):
        pattern, message = _CHECKS[k]
        ok = (
            pattern.fullmatch(tok) is not None
            if pattern is not None
            else tok in ACTION_CODE
            if k == 5
            else rwbs_flags(tok) is not None
        )
        if not ok:
            cut = " (line cut short?)" if k == len(toks) - 1 and i >= len(line) else ""
            raise LineError(message.format(tok) + cut)
    if len(toks) < 7:
        got = "an empty line" if not toks else f"only {len(toks)} field{'s' * (len(toks) > 1)}"
        raise LineError(f"line ends early: missing {HEADER_FIELDS[len(toks)]} (got {got})")
    dev, cpu, seq, tim, pid, action, rwbs = toks
    dm = _DEV.fullmatch(dev)
    tm = _TIME.fullmatch(tim)
    flags = rwbs_flags(rwbs)
    assert dm is not None and tm is not None and flags is not None
    row = _empty_row()
    row.update(
        dev_major=int(dm.group(1)),
        dev_minor=int(dm.group(2)),
        cpu=int(cpu),
        seq=int(seq),
        time_ns=int(tm.group(1)) * 1_000_000_000 + int(tm.group(2)),
        pid=int(pid),
        action=action,
        rwbs=rwbs,
        **flags,
    )
    tail = line[i + 1 :] if i < len(line) else ""
    if i >= len(line) and action != "m":
        raise LineError(f"line ends after RWBS: {action} expects '{TAIL_FORMS[action]}'")
    _parse_tail(action, tail, row)
    return row


def _parse_tail(action: str, tail: str, row: dict[str, Any]) -> None:
    bad = LineError(f"{action} expects '{TAIL_FORMS[action]}' after RWBS, got {tail!r}")
    if action in ("Q", "I", "D", "B"):
        m = _SECTORED.fullmatch(tail)
        if m is not None:
            row["sector"], row["nsectors"] = _int(m.group(1)), _int(m.group(2))
            row["elapsed"] = _int(m.group(3))
            _set_comm(row, m.group(4))
            return
        m = _PC_ISSUE.fullmatch(tail)
        if m is None:
            raise bad
        row["pc_bytes"], row["pdu"] = int(m.group(1)), m.group(2)
        _set_comm(row, m.group(3))
    elif action in ("G", "M", "F", "S"):
        m = _MERGE_LIKE.fullmatch(tail)
        if m is None:
            raise bad
        row["sector"], row["nsectors"] = _int(m.group(1)), _int(m.group(2))
        _set_comm(row, m.group(3))
    elif action in ("C", "R"):
        m = _COMPLETE.fullmatch(tail)
        if m is not None:
            row["sector"] = int(m.group(1))
            row["nsectors"] = int(m.group(2) or 0)
            row["elapsed"] = _int(m.group(3))
            row["error"] = int(m.group(4))
            return
        m = _PC_COMPLETE.fullmatch(tail)
        if m is None:
            raise bad
        row["pdu"], row["error"] = m.group(1), int(m.group(2))
    elif action == "P":
        m = _PLUG.fullmatch(tail)
        if m is None:
            raise bad
        _set_comm(row, m.group(1))
    elif action in ("U", "UT", "T"):
        m = _UNPLUG.fullmatch(tail)
        if m is None:
            raise bad
        _set_comm(row, m.group(1))
        row["depth"] = int(m.group(2))
    elif action == "X":
        m = _SPLIT.fullmatch(tail)
        if m is None:
            raise bad
        row["sector"], row["split_sector"] = int(m.group(1)), int(m.group(2))
        _set_comm(row, m.group(3))
    elif action == "A":
        m = _REMAP.fullmatch(tail)
        if m is None:
            raise bad
        row["sector"], row["nsectors"] = int(m.group(1)), int(m.group(2))
        row["remap_dev_major"], row["remap_dev_minor"] = int(m.group(3)), int(m.group(4))
        row["remap_sector"] = int(m.group(5))
    else:  # m: free text, kept verbatim
        row["message"] = tail


def _comm_text(row: dict[str, Any]) -> str:
    raw = row.get("comm_raw")
    if raw is not None:
        return bytes(raw).decode("utf-8", "surrogateescape")
    return row["comm"] or ""


def render_event(row: dict[str, Any]) -> str:
    """Render an events row in blkparse's default format (process_default), without newline."""
    t = row["time_ns"]
    head = "%3d,%-3d %2d %8d %5d.%09d %5d %2s %3s " % (  # noqa: UP031 - mirrors blkparse's printf
        row["dev_major"],
        row["dev_minor"],
        row["cpu"],
        row["seq"],
        t // 1_000_000_000,
        t % 1_000_000_000,
        row["pid"],
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


def render_table(table: Any) -> Any:
    """Yield each row of an events table (pyarrow) rendered as a blkparse line."""
    for batch in table.to_batches(max_chunksize=65536):
        yield from map(render_event, batch.to_pylist())
