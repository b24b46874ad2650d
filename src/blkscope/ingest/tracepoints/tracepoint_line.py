"""Reference parser for one line of tracepoint text: ftrace, trace-cmd report, perf script.

Three tools print the kernel's block tracepoints, each with its own context before the
event's own text (its TP_printk, include/trace/events/block.h):

- ftrace (tracefs `trace`, `trace_pipe`, kernel/trace/trace_output.c):
  `TASK-PID [CPU] FLAGS SECONDS.USECS: block_rq_issue: 8,0 WS 4096 () 123 + 8 be,0,4 [dd]`;
  `(TGID)` after TASK-PID with options/record-tgid, no FLAGS without options/irq-info.
  The ftrace blk tracer (current_tracer=blk, options/bin=0) prints its own lines there:
  `TASK-PID [CPU] FLAGS SECONDS.USECS:   8,0    D  WS 123 + 8 [dd]` (blkparse's columns after
  the time), or, with options/blk_classic, blkparse's header minus the sequence number.
- trace-cmd report: `[INSTANCE: ]TASK-PID [CPU] SECONDS.USECS: EVENT:   BODY` (-t: 9 digits,
  -l: latency flags glued to the CPU instead of [CPU]).
- perf script: `TASK PID[/TID] [CPU] SECONDS.USECS: [PERIOD] block:EVENT: BODY` (--ns: 9
  digits).

Each tracepoint maps to the action letter blkparse prints for the same kernel hook (the blk
tracer registers on these very tracepoints, kernel/trace/blktrace.c).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from blkscope.ingest.blkparse.event_line import (
    BLK_TEXT_LAYOUT,
    CLASSIC_LAYOUT,
    LineError,
    check_ranges,
    empty_row,
    header_row,
    number,
    parse_header,
    parse_tail,
    rwbs_flags,
    set_comm,
    valid_text,
)

# The context of a line, per tool.
_FTRACE = re.compile(
    r"\s*(?:(?P<buf>[^\s:]+):\s+(?=\S.*-\d+\s+\[))?"  # trace-cmd's instance prefix
    r"(?P<comm>.*)-(?P<pid>\d+)\s+(?:\((?:\s*\d+|-+)\)\s+)?"  # TASK-PID (TGID)
    r"(?:\[(?P<cpu>\d+)\]\s+(?:(?P<flags>[^\s\d][^\s]{2,5})\s+)?"  # [CPU] FLAGS
    r"|(?P<lcpu>\d+)[^\s\d][^\s]{2,5}\s+)"  # trace-cmd -l: CPU glued to the flags
    r"(?P<sec>\d+)(?:\.(?P<frac>\d+))?:\s"
)
_PERF = re.compile(
    r"\s*(?P<comm>(?:\S.*?)?)\s+(?P<pid>\d+)(?:/(?P<tid>\d+))?\s+\[(?P<cpu>\d+)\]\s+"
    r"(?P<sec>\d+)(?:\.(?P<frac>\d+))?:\s+(?:\d+\s+)?(?P<sys>\w+):(?P<event>\w+):\s"
)
# The context (task, pid, CPU, time, event) sits in a line's first characters (real ones take
# under 150): the patterns only look there. Over a whole line their runs of .* and \s could
# split a long blank run many ways: a long perf line never finished (a fuzzing find).
CONTEXT_CHARS = 512
_EVENT = re.compile(r"(?P<event>[A-Za-z_]\w*):\s+(?P<body>.*)")

_DEV = r"(?P<major>\d+),(?P<minor>\d+) (?P<rwbs>\S+) "
_IOPRIO = r"(?: \S+?,\d+,\d+)?"  # none,0,0 / be,0,4 / 0x2,0,4 (6.10+; perf shows the class raw)
# The bodies (TP_printk) of the block tracepoints, across kernel versions.
BODIES = {
    "bio": re.compile(_DEV + r"(?P<sector>\d+) \+ (?P<n>\d+) \[(?P<comm>.*)\]"),
    "rq": re.compile(
        _DEV
        + r"(?P<bytes>\d+) \((?P<cmd>[^)]*)\) (?P<sector>\d+) \+ (?P<n>\d+)"
        + _IOPRIO
        + r" \[(?P<comm>.*)\]"
    ),
    "rq_done": re.compile(
        _DEV
        + r"\((?P<cmd>[^)]*)\) (?P<sector>\d+) \+ (?P<n>\d+)"
        + _IOPRIO
        + r" \[(?P<error>-?\d+)\]"
    ),
    "bio_done": re.compile(_DEV + r"(?P<sector>\d+) \+ (?P<n>\d+) \[(?P<error>-?\d+)\]"),
    "split": re.compile(_DEV + r"(?P<sector>\d+) / (?P<split>\d+) \[(?P<comm>.*)\]"),
    "remap": re.compile(
        _DEV + r"(?P<sector>\d+) \+ (?P<n>\d+) <- \((?P<rmajor>\d+),(?P<rminor>\d+)\) "
        r"(?P<rsector>\d+)(?: \d+)?"
    ),
    "plug": re.compile(r"\[(?P<comm>.*)\]"),
    "unplug": re.compile(r"\[(?P<comm>.*)\] (?P<depth>\d+)"),
}
_BODY_FORMS = {
    "bio": "MAJ,MIN RWBS SECTOR + N [COMM]",
    "rq": "MAJ,MIN RWBS BYTES (CMD) SECTOR + N [IOPRIO] [COMM]",
    "rq_done": "MAJ,MIN RWBS (CMD) SECTOR + N [IOPRIO] [ERROR]",
    "bio_done": "MAJ,MIN RWBS SECTOR + N [ERROR]",
    "split": "MAJ,MIN RWBS SECTOR / NEW_SECTOR [COMM]",
    "remap": "MAJ,MIN RWBS SECTOR + N <- (MAJ,MIN) OLD_SECTOR",
    "plug": "[COMM]",
    "unplug": "[COMM] NR_RQ",
}
# tracepoint -> (action blkparse prints for the blk tracer's probe on it, body shape)
TRACEPOINTS: dict[str, tuple[str, str]] = {
    "block_bio_queue": ("Q", "bio"),
    "block_getrq": ("G", "bio"),
    "block_sleeprq": ("S", "bio"),  # kernels before 5.0
    "block_bio_backmerge": ("M", "bio"),
    "block_bio_frontmerge": ("F", "bio"),
    "block_bio_bounce": ("B", "bio"),  # kernels before 5.13
    "block_rq_insert": ("I", "rq"),
    "block_rq_issue": ("D", "rq"),
    "block_rq_merge": ("M", "rq"),  # the blk tracer logs a request merge as a back merge
    "block_rq_complete": ("C", "rq_done"),
    "block_rq_requeue": ("R", "rq_done"),
    "block_bio_complete": ("C", "bio_done"),  # bio-based devices (dm, md, remapped bios)
    "block_split": ("X", "split"),
    "block_bio_remap": ("A", "remap"),
    "block_rq_remap": ("A", "remap"),
    "block_plug": ("P", "plug"),
    "block_unplug": ("U", "unplug"),
    "block_unplug_io": ("U", "unplug"),  # kernels before 3.0
    "block_unplug_timer": ("UT", "unplug"),
}
# Actions whose zero-length form blkparse prints without a sector (flush bios and requests).
_SECTOR_ONLY_IF_LENGTH = frozenset("QGIDMFSB")


@dataclass
class Context:
    """What a tool printed before the event's own text."""

    pid: int
    cpu: int | None
    time_ns: int
    digits: int  # digits after the decimal point: 6 (microseconds) or 9
    event: str | None  # tracepoint name without its `block:` group; None for blk tracer text
    body: str


def _time(sec: str, frac: str | None) -> tuple[int, int]:
    if frac is None or len(frac) > 9:
        raise LineError(
            f"timestamp {sec}{'.' + frac if frac else ''} is not seconds.fraction: a counter "
            "trace clock (counter, x86-tsc) cannot be put on a time line"
        )
    return number(sec) * 1_000_000_000 + int(frac.ljust(9, "0")), len(frac)


def parse_context(line: str, perf: bool) -> Context | None:
    """Split a line into its context and the event text (perf's layout or ftrace's).

    None when the line has not the layout at all; a LineError when its fields are wrong.
    """
    if perf:
        m = _PERF.match(line, 0, CONTEXT_CHARS)
        if m is None:
            raise LineError("not a perf script line (TASK PID [CPU] SECONDS: GROUP:EVENT: BODY)")
        ns, digits = _time(m["sec"], m["frac"])
        pid = number(m["tid"] or m["pid"])
        event = m["event"] if m["sys"] == "block" else f"{m['sys']}:{m['event']}"
        return Context(pid, number(m["cpu"]), ns, digits, event, line[m.end() :])
    m = _FTRACE.match(line, 0, CONTEXT_CHARS)
    if m is None:
        return None
    ns, digits = _time(m["sec"], m["frac"])
    cpu = number(m["cpu"] if m["cpu"] is not None else m["lcpu"])
    rest = line[m.end() :]
    e = _EVENT.fullmatch(rest)
    if e is None:  # the blk tracer prints the device straight after the time
        return Context(number(m["pid"]), cpu, ns, digits, None, rest.lstrip())
    return Context(number(m["pid"]), cpu, ns, digits, e["event"], e["body"])


NO_SECTOR = 2**64 - 1  # (sector_t)-1


def _fit(fields: dict[str, str | None], name: str, bits: int) -> int | None:
    """The named number, or a LineError when it does not fit its column (never wrapped)."""
    text = fields.get(name)
    if text is None:
        return None
    value = number(text)
    if not -(2**bits) <= value < 2**bits:
        raise LineError(f"{name} {text} does not fit a {bits + 1}-bit integer")
    return value


def tracepoint_row(event: str, body: str) -> dict[str, Any]:
    """An events row (without time, pid, cpu) from a block tracepoint's text."""
    action, shape = TRACEPOINTS[event]
    m = BODIES[shape].fullmatch(body.rstrip("\r"))
    if m is None:
        raise LineError(f"{event} expects '{_BODY_FORMS[shape]}', got {body!r}")
    row = empty_row()
    row.update(action=action, seq=0)
    fields = m.groupdict()
    if fields.get("major") is not None:
        flags = rwbs_flags(fields["rwbs"])
        if flags is None:
            raise LineError(f"{event}: invalid RWBS {fields['rwbs']!r}")
        row.update(dev_major=_fit(fields, "major", 31), dev_minor=_fit(fields, "minor", 31))
        row.update(rwbs=fields["rwbs"], **flags)
    else:  # plug and unplug name no device: the ingest finds it from the task's requests
        row.update(dev_major=None, dev_minor=None, rwbs="N", **(rwbs_flags("N") or {}))
    n = _fit(fields, "n", 31)
    if fields.get("sector") is not None:
        if number(fields["sector"]) == NO_SECTOR and shape == "rq_done":
            # blk_rq_pos() of a request that never had one (a flush): the blk tracer's
            # blk_rq_trace_sector() gives 0 for it, and blkparse prints that
            fields["sector"] = "0"
        row["sector"], row["nsectors"] = _fit(fields, "sector", 63), n
        if action in _SECTOR_ONLY_IF_LENGTH and not n:
            row["sector"] = row["nsectors"] = None
    if shape == "rq" and not n and number(fields["bytes"] or "0"):
        row["pc_bytes"] = _fit(fields, "bytes", 63)  # a pass-through request: bytes, no sector
    if fields.get("cmd"):
        row["pdu"] = valid_text(fields["cmd"])
    row["error"] = _fit(fields, "error", 31)
    if shape == "split":
        row["split_sector"], row["nsectors"] = _fit(fields, "split", 63), None
    if shape == "remap":
        row["remap_dev_major"] = _fit(fields, "rmajor", 31)
        row["remap_dev_minor"] = _fit(fields, "rminor", 31)
        row["remap_sector"] = _fit(fields, "rsector", 63)
    row["depth"] = _fit(fields, "depth", 31)
    if fields.get("comm") is not None:
        set_comm(row, fields["comm"])
    return row


def blk_tracer_row(body: str) -> dict[str, Any]:
    """An events row (without time, pid, cpu) from the blk tracer's text after ftrace's context."""
    fields, cgroup, tail = parse_header(body, BLK_TEXT_LAYOUT)
    row = header_row(fields, cgroup)
    row["seq"] = 0
    parse_tail(fields["action"], tail, row)
    check_ranges(row)
    return row


def classic_row(line: str) -> dict[str, Any]:
    """An events row from a blk tracer classic line (blkparse's header without a sequence)."""
    fields, cgroup, tail = parse_header(line, CLASSIC_LAYOUT)
    row = header_row(fields, cgroup)
    row["seq"] = 0
    parse_tail(fields["action"], tail, row)
    check_ranges(row)
    return row
