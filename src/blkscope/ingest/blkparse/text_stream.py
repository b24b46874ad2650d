"""Stream blkparse default-format text into Arrow tables of events, summary rows and errors."""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from blkscope import _core
from blkscope.concepts import MAX_SECTOR
from blkscope.errors import ParseError
from blkscope.ingest.blkparse.event_line import (
    LineError,
    parse_event_line,
    past_last_sector,
    render_event,
    valid_text,
)
from blkscope.ingest.blkparse.summary_blocks import SummaryParser
from blkscope.ingest.codes import (
    events_table,
    first_sector_past_end,
    past_last_sector_rows,
    with_strings,
)
from blkscope.ingest.sources import (
    MAX_LINE_BYTES,
    Source,
    Text,
    as_core_text,
    describe_non_blkparse,
    iter_numbered_chunks,
    line_too_long,
)
from blkscope.schemas import EVENTS

# Malformed lines stored in ingest_errors per input; past this they are only counted (a flood
# of garbage or blank lines must not become one row each). Their raw text is cut too.
MAX_STORED_ERRORS = 10_000
MAX_RAW_CHARS = 4096


@dataclass
class ChunkResult:
    """What one chunk of text turned into."""

    events: pa.Table
    errors: list[dict[str, Any]] = field(default_factory=list)
    lines: int = 0
    summary_lines: int = 0
    unstored_errors: int = 0  # malformed lines past MAX_STORED_ERRORS: counted, not stored


@dataclass
class _Scanned:
    """A chunk after the bulk scan: the fast rows as a table, the other lines still to read."""

    data: Text
    table: pa.Table
    lines: int
    slow: pa.RecordBatch  # line_no, start, end of each span the scanner left alone
    largest_sector_end: int  # of the rows' sector ranges: beyond MAX_SECTOR, rows to check


def scan_chunk(data: Text, first: int, input_id: int) -> _Scanned:
    """Scan a chunk whose first line is line `first`; safe to run in several threads (the
    compiled scanner releases the GIL)."""
    rows, spans, lines, largest_end = _core.scan_blkparse_text(as_core_text(data), first, input_id)
    batch = pa.record_batch(rows)
    table = events_table(batch.num_rows, dict(zip(batch.schema.names, batch.columns, strict=True)))
    return _Scanned(data, table, lines, pa.record_batch(spans), largest_end)


def _spans(slow: pa.RecordBatch, batch: int = 4096) -> Iterator[tuple[int, int, int]]:
    # A few thousand at a time: a chunk of garbage can hold millions of them.
    for i in range(0, slow.num_rows, batch):
        part = slow.slice(i, batch)
        yield from zip(*(part.column(k).to_pylist() for k in range(3)), strict=True)


class BlkparseTextParser:
    """Finish scanned chunks in input order; keeps the summary and error state across chunks."""

    def __init__(self, path: str, input_id: int, strict: bool) -> None:
        self.path = path
        self.input_id = input_id
        self.strict = strict
        self.summary = SummaryParser()
        self.stored_errors = 0

    def finish(self, scanned: _Scanned, is_last: bool) -> ChunkResult:
        """Read the lines the scanner left alone (odd events, summary, errors) and merge."""
        result = ChunkResult(scanned.table, lines=scanned.lines)
        if scanned.largest_sector_end > MAX_SECTOR:
            result.events = self._in_range(scanned.table, result)
        rows = self._slow_lines(scanned, is_last, result) if scanned.slow.num_rows else []
        if is_last:
            self.summary.finish()
        for line, line_no in self.summary.orphans:
            # A `comm (pid):` line taken for a per-process header, with no statistics after it.
            result.summary_lines -= 1
            result.errors.append(
                self._error(line_no, line, "not an event, and no blkparse -s statistics follow it")
            )
        self.summary.orphans.clear()
        result.errors.sort(key=lambda err: int(err["line_no"]))
        if rows:
            slow = pa.Table.from_pylist(rows, schema=EVENTS)
            merged = pa.concat_tables([with_strings(result.events), slow])
            import pyarrow.compute as pc  # (slow to import; most inputs never need it)

            result.events = merged.take(pc.sort_indices(merged["line_no"]))
        return result

    def _in_range(self, table: pa.Table, result: ChunkResult) -> pa.Table:
        """The scanned rows without those whose sectors end past any device (each recorded as
        a malformed line, as the reference parser's check_ranges refuses them)."""
        bad = past_last_sector_rows(table)
        if bad is None:
            return table
        for row in table.filter(bad).to_pylist():
            name, start, length = first_sector_past_end(row)
            reason = past_last_sector(name, start, length)
            self._record(result, row["line_no"], render_event(row), reason)
        import pyarrow.compute as pc  # (slow to import; most inputs never need it)

        return table.filter(pc.invert(bad))

    def _error(self, line_no: int, line: str, reason: str) -> dict[str, Any]:
        if len(line) > MAX_RAW_CHARS:
            reason += f" (a line of {len(line):,} characters: the first {MAX_RAW_CHARS:,} kept)"
        return {
            "input_id": self.input_id,
            "line_no": line_no,
            "raw": valid_text(line[:MAX_RAW_CHARS]),
            "reason": reason,
        }

    def _record(self, result: ChunkResult, line_no: int, line: str, reason: str) -> None:
        """Store a malformed line in ingest_errors, or past the cap only count it."""
        if self.stored_errors >= MAX_STORED_ERRORS and not self.strict:
            result.unstored_errors += 1
            return
        self.stored_errors += 1
        result.errors.append(self._error(line_no, line, reason))

    def _blank_run(self, line_no: int, count: int, result: ChunkResult) -> None:
        """Blank lines belong to the summary while one is open; else each is an error."""
        if self.summary.feed("", line_no):
            result.summary_lines += count
            return
        for k in range(1 if self.strict else count):
            if self.stored_errors >= MAX_STORED_ERRORS and not self.strict:
                result.unstored_errors += count - k
                return
            self._record(result, line_no + k, "", "blank line outside blkparse's summary")

    def _slow_lines(
        self, scanned: _Scanned, is_last: bool, result: ChunkResult
    ) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        data = scanned.data
        for line_no, s, e in _spans(scanned.slow):
            span = bytes(data[s:e])  # (a view of a mapped file has no count or decode)
            blank_run = span.count(b"\n")
            if blank_run:  # a run of blank lines, one span
                self._blank_run(line_no, blank_run + 1, result)
                continue
            if e - s > MAX_LINE_BYTES:
                raise line_too_long(self.path, line_no)
            line = span.decode("utf-8", "surrogateescape")
            try:
                row = parse_event_line(line)
            except LineError as exc:
                if self.summary.feed(valid_text(line), line_no):
                    result.summary_lines += 1
                    continue
                reason = str(exc) if line.strip() else "blank line outside blkparse's summary"
                if is_last and e == len(data):
                    reason = f"truncated last line (no newline at end of input): {reason}"
                self._record(result, line_no, line, reason)
                if self.strict:
                    return rows  # the caller stops at this error
                continue
            if render_event(row) != line:  # spacing blkparse would not print: keep the bytes
                row["raw_line"] = line.encode("utf-8", "surrogateescape")
            row["line_no"] = line_no
            row["input_id"] = self.input_id
            rows.append(row)
        return rows


def _scanned_in_order(
    chunks: Iterator[tuple[int, Text]], input_id: int
) -> Iterator[tuple[_Scanned, bool]]:
    """Scan chunks (each with the number of its first line) on two threads (the scanner
    releases the GIL); yield them in input order."""
    head = list(itertools.islice(chunks, 2))
    if len(head) < 2:  # one chunk (a small input): no threads to start and join
        for first, chunk in head:
            yield scan_chunk(chunk, first, input_id), True
        return
    with ThreadPoolExecutor(max_workers=2) as pool:
        pending: deque[Future[_Scanned]] = deque()
        for first, chunk in itertools.chain(head, chunks):
            pending.append(pool.submit(scan_chunk, chunk, first, input_id))
            if len(pending) > 2:
                yield pending.popleft().result(), False
        while pending:
            scanned = pending.popleft().result()
            yield scanned, not pending


def parse_source(
    parser: BlkparseTextParser,
    source: Source,
    on_chunk: Callable[[int], None] | None = None,
    chunks: Iterator[tuple[int, Text]] | None = None,
) -> Iterator[ChunkResult]:
    """Yield parsed chunks of one input (`chunks`: its numbered chunks, when read already);
    refuse inputs that hold no blkparse events."""
    chunks = iter_numbered_chunks(source) if chunks is None else chunks
    current = next(chunks, None)
    head = bytes((b"" if current is None else current[1])[:65536])
    if current is None or b"\x00" in head[:4096]:
        raise describe_non_blkparse(source.path, head)
    events = 0
    for scanned, is_last in _scanned_in_order(itertools.chain([current], chunks), parser.input_id):
        result = parser.finish(scanned, is_last)
        events += result.events.num_rows
        # A first chunk without a single event is another kind of file, not bad lines.
        if events == 0 and (is_last or result.summary_lines == 0):
            raise describe_non_blkparse(source.path, head)
        if parser.strict and result.errors:
            first = result.errors[0]
            raise ParseError(
                source.path,
                first["line_no"],
                first["reason"],
                hint="drop --strict to record bad lines in ingest_errors and go on",
            )
        yield result
        if on_chunk:
            on_chunk(source.bytes_read)
