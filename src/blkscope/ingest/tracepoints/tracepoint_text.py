"""Ingest tracepoint text (ftrace, trace-cmd report, perf script) into the `events` table.

The rows are the ones blkparse would print for the same kernel hooks, with `source` saying
which tool printed them. What the text cannot give is said, not invented: the tracepoints have
no sequence numbers (seq 0), block_plug/block_unplug name no device, ftrace prints
microseconds; each input's manifest entry lists these under `lacks`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from blkscope.errors import InputFormatError, ParseError
from blkscope.ingest.blkparse.event_line import LineError, check_ranges
from blkscope.ingest.tracepoints.tracepoint_line import (
    TRACEPOINTS,
    blk_tracer_row,
    classic_row,
    number,
    parse_context,
    tracepoint_row,
)
from blkscope.schemas import EVENTS

# What `source` each kind of text gives its rows (blk tracer lines are 'ftrace-blk' in any).
KINDS = {"ftrace": "ftrace", "trace-cmd": "trace-cmd", "perf": "perf"}
# Detection patterns, each tried on one line at a time (with re.M over the whole head, a
# leading \s* crosses newlines: quadratic on a head of blank lines).
_PERF_LINE = re.compile(
    r"\s*\S.*?\s\d+(?:/\d+)?\s+\[\d+\]\s+\d+(?:\.\d+)?:\s+(?:\d+\s+)?block:\w+:"
)
_TRACE_CMD = re.compile(r"(?:cpus=\d+|version = \d+)\s*")
_FTRACE_LINE = re.compile(
    r"\s*\S.*-\d+\s+(?:\(\s*[\d-]+\)\s+)?(?:\[\d+\]\s.*?|\d+[^\s\d]\S{2,5}\s+)\d+(?:\.\d+)?:\s+"
    r"(?:block_\w+:|\d+,\d+\s+[A-Z]{1,2}\s)"
)
_CLASSIC_LINE = re.compile(r"\s*\d+,\d+\s+\d+\s+\d+\.\d{9}\s+\d+\s+[A-Za-z]{1,2}\s+[A-Z]+\b")
# Real tracepoint lines are under 150 characters; longer ones are not looked at (the
# patterns' .* make one line quadratic: a 64 KiB head costs head x 512 steps at most).
_DETECT_LINE_CHARS = 512
_CLASSIC_START = re.compile(r"\s*\d+,\d+\s")
_ENTRIES = re.compile(r"#\s*entries-in-buffer/entries-written: (\d+)/(\d+)")
_HEADER = re.compile(r"#.*|cpus=\d+|version = \d+|CPU \d+ is empty|\s*")
_LOST = re.compile(r"CPU:\s*(\d+) \[LOST (\d+) EVENTS\]|CPU:(\d+) \[(\d+) EVENTS DROPPED\]")
_REQUEST_ACTIONS = ("G", "I", "D")
PLUG_WINDOW_NS = 1_000_000


def trace_text_kind(head: str) -> str | None:
    """'perf', 'trace-cmd' or 'ftrace' when the text's first lines are block tracepoint text."""
    lines = [line for line in head.split("\n") if len(line) <= _DETECT_LINE_CHARS]
    if any(_PERF_LINE.match(line) for line in lines):
        return "perf"
    if any(_FTRACE_LINE.match(line) or _CLASSIC_LINE.match(line) for line in lines):
        trace_cmd = any(_TRACE_CMD.fullmatch(line) for line in lines)
        return "trace-cmd" if trace_cmd else "ftrace"
    return None


@dataclass
class TraceTextParser:
    """Parse chunks of one tracepoint text input; keeps the counts the manifest reports."""

    path: str
    input_id: int
    kind: str
    strict: bool
    lines: int = 0
    header_lines: int = 0
    rows: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    by_tracepoint: Counter[str] = field(default_factory=Counter)
    other_events: Counter[str] = field(default_factory=Counter)
    lost_events: int = 0
    errors_written: int = 0
    digits: set[int] = field(default_factory=set)

    def feed(self, chunk: bytes, is_last: bool) -> None:
        """Parse one chunk of whole lines (the last one may lack its newline)."""
        text = chunk.decode("utf-8", "surrogateescape")
        lines = text.split("\n")
        if text.endswith("\n"):
            lines.pop()
        for k, line in enumerate(lines):
            self.lines += 1
            try:
                self._line(line)
            except LineError as exc:
                reason = str(exc)
                if is_last and k == len(lines) - 1 and not text.endswith("\n"):
                    reason = f"truncated last line (no newline at end of input): {reason}"
                self._error(line, reason)

    def _line(self, line: str) -> None:
        entries = _ENTRIES.match(line)
        if entries:  # an overwriting ring buffer lost the oldest events
            self.lost_events += number(entries[2]) - number(entries[1])
        if _HEADER.fullmatch(line):
            self.header_lines += 1
            return
        lost = _LOST.fullmatch(line.strip())
        if lost:
            self.header_lines += 1
            self.lost_events += number(lost[2] or lost[4])
            return
        ctx = parse_context(line, perf=self.kind == "perf")
        if ctx is None:
            if not _CLASSIC_START.match(line):
                raise LineError("not an ftrace line (TASK-PID [CPU] FLAGS SECONDS: EVENT: BODY)")
            row = classic_row(line)  # the blk tracer's classic lines carry their own context
            self._add(row, "block_classic", row["time_ns"], 9, "ftrace-blk")
            return
        if ctx.event is None:
            row = blk_tracer_row(ctx.body)
            row.update(pid=ctx.pid, cpu=ctx.cpu)
            self._add(row, "blk_tracer", ctx.time_ns, ctx.digits, "ftrace-blk")
        elif ctx.event in TRACEPOINTS:
            row = tracepoint_row(ctx.event, ctx.body)
            row.update(pid=ctx.pid, cpu=ctx.cpu)
            self._add(row, ctx.event, ctx.time_ns, ctx.digits, KINDS[self.kind])
        else:
            self.other_events[ctx.event] += 1

    def _add(self, row: dict[str, Any], name: str, time_ns: int, digits: int, src: str) -> None:
        row.update(time_ns=time_ns, source=src, line_no=self.lines, input_id=self.input_id)
        check_ranges(row)  # the context's pid, cpu and time too
        self.rows.append(row)
        self.by_tracepoint[name] += 1
        self.digits.add(digits)

    def _error(self, line: str, reason: str) -> None:
        if self.strict:
            raise ParseError(
                self.path,
                self.lines,
                reason,
                hint="drop --strict to record bad lines in ingest_errors and go on",
            )
        raw = line.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        self.errors.append(
            {"input_id": self.input_id, "line_no": self.lines, "raw": raw, "reason": reason}
        )

    def take_rows(self) -> pa.Table:
        """The rows parsed so far, as a table with absolute times and P/U devices unknown."""
        table = pa.Table.from_pylist(self.rows, schema=_LOOSE)
        self.rows = []
        return table


# Like EVENTS, but P and U may still lack a device until the whole input is read.
_LOOSE = pa.schema([f.with_nullable(True) if f.name.startswith("dev_") else f for f in EVENTS])


def place_plugs(table: pa.Table) -> tuple[pa.Table, int]:
    """Give each P and U the device of its task's nearest request event; drop the rest.

    A plug holds the requests its task allocated (G) and is flushed (U) right before they are
    inserted or issued (I, D), all by the same task: a U takes the device of that task's next
    G/I/D, a P that of its previous one (the other direction when there is none), within
    PLUG_WINDOW_NS. Returns the table and how many plugs and unplugs found no such request.
    """
    missing = table["dev_major"].is_null().to_numpy(zero_copy_only=False)
    if not missing.any():
        return table, 0
    n = table.num_rows
    action = table["action"].to_numpy(zero_copy_only=False)
    pid = table["pid"].to_numpy()
    major = table["dev_major"].fill_null(-1).to_numpy().copy()
    minor = table["dev_minor"].fill_null(-1).to_numpy().copy()
    # Walk each task's events in input order: the previous and the next request event.
    order = np.lexsort((np.arange(n), pid))
    spid, pos = pid[order], np.arange(n)
    is_req = np.isin(action[order], _REQUEST_ACTIONS)
    prev = np.maximum.accumulate(np.where(is_req, pos, -1))
    nxt = np.minimum.accumulate(np.where(is_req, pos, n)[::-1])[::-1]
    prev_ok = (prev >= 0) & (spid[np.maximum(prev, 0)] == spid)
    next_ok = (nxt < n) & (spid[np.minimum(nxt, n - 1)] == spid)
    first_next = np.isin(action[order], ("U", "UT"))
    pick = np.where(
        first_next,
        np.where(next_ok, nxt, np.where(prev_ok, prev, -1)),
        np.where(prev_ok, prev, np.where(next_ok, nxt, -1)),
    )
    src = np.empty(n, dtype=np.int64)
    src[order] = np.where(pick >= 0, order[np.clip(pick, 0, n - 1)], -1)
    rows = np.flatnonzero(missing)
    # a plug and its requests are microseconds apart: farther, the neighbour is another plug's
    times = table["time_ns"].to_numpy()
    far = np.abs(times[np.maximum(src[rows], 0)] - times[rows]) > PLUG_WINDOW_NS
    src[rows[far]] = -1
    major[rows] = np.where(src[rows] >= 0, major[np.maximum(src[rows], 0)], -1)
    minor[rows] = np.where(src[rows] >= 0, minor[np.maximum(src[rows], 0)], -1)
    keep = major >= 0
    table = table.set_column(0, EVENTS.field(0), pa.array(major, pa.int32()))
    table = table.set_column(1, EVENTS.field(1), pa.array(minor, pa.int32()))
    return table.filter(pa.array(keep)), int((~keep).sum())


def finish_events(tables: Iterable[pa.Table]) -> tuple[pa.Table, int, int | None]:
    """All of one input's rows on its own time line: (table, plugs left out, base time)."""
    table = pa.concat_tables(list(tables)).combine_chunks()
    table, unplaced = place_plugs(table)
    if table.num_rows == 0:
        return table.cast(EVENTS), unplaced, None
    import pyarrow.compute as pc  # (slow to import; most inputs never need it)

    base = int(pc.min(table["time_ns"]).as_py())
    times = pc.subtract(table["time_ns"], pa.scalar(base, pa.int64()))
    table = table.set_column(table.schema.get_field_index("time_ns"), "time_ns", times)
    return table.cast(EVENTS), unplaced, base


def lacks(parser: TraceTextParser, unplaced: int) -> list[str]:
    """What this input cannot say that blktrace would have, in words for the manifest."""
    seen = parser.by_tracepoint
    out = []
    tracepoints = sum(n for name, n in seen.items() if name in TRACEPOINTS)
    if tracepoints:
        out.append("seq: the tracepoints carry no per-CPU sequence number (events.seq is 0)")
    if max(parser.digits, default=9) < 9:
        out.append(
            f"time: printed with {min(parser.digits)} decimals, so every time and latency is "
            f"a multiple of {10 ** (9 - min(parser.digits))} ns"
        )
    plugs = seen["block_plug"] + seen["block_unplug"] + seen["block_unplug_timer"]
    if plugs:
        out.append(
            "P/U device: block_plug and block_unplug name no device; each took the device of "
            f"its task's nearest G/I/D within 1 ms ({plugs - unplaced} placed, {unplaced} with "
            "no such request left out)"
        )
    if seen["block_unplug"]:
        out.append("UT: block_unplug does not tell timer unplugs from explicit ones: all are U")
    if tracepoints:
        for action, names in (("G", ["block_getrq"]), ("I", ["block_rq_insert"])):
            if not any(seen[n] for n in names) and seen["block_bio_queue"]:
                out.append(
                    f"{action}: no {names[0]} lines: requests have no {action} (none happened, "
                    "e.g. no I without a scheduler, or the kernel or the recording lacks them)"
                )
    return out


def not_kept() -> list[str]:
    """Fields of the tracepoints the events table has no column for."""
    return [
        "ioprio (block_rq_insert/issue/complete/requeue, 6.10+)",
        "bytes of block_rq_insert/issue (kept as pc_bytes only for pass-through requests)",
        "nr_bios of block_rq_remap",
        "the task comm of the line's context (the bracketed comm is kept)",
    ]


def no_events_error(path: str, parser: TraceTextParser) -> InputFormatError:
    """The message for a tracepoint text with no block event in it."""
    others = ", ".join(f"{n} {e}" for e, n in parser.other_events.most_common(3))
    return InputFormatError(
        path,
        f"{parser.kind} text without block events" + (f" (only {others})" if others else ""),
        hint="record the block tracepoints (events/block/*/enable, perf record -e 'block:*') "
        "or the blk tracer (current_tracer=blk)",
    )
