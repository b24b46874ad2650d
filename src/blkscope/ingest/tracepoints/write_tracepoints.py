"""Write one tracepoint text input (ftrace, trace-cmd report, perf script) into a dataset."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol, TypeVar

import pyarrow as pa

from blkscope.ingest.sources import Source
from blkscope.ingest.tracepoints.tracepoint_text import (
    TraceTextParser,
    finish_events,
    lacks,
    no_events_error,
    not_kept,
)

# The manifest's name of each kind of text.
FORMATS = {"ftrace": "ftrace-text", "trace-cmd": "trace-cmd-report", "perf": "perf-script"}
_SLICE = 1 << 20
T = TypeVar("T")


class EventSinks(Protocol):
    """The dataset tables a text input writes to (block_events._TextSinks)."""

    def write_events(self, table: pa.Table) -> None: ...

    def write_errors(self, errors: list[dict[str, Any]]) -> None: ...


def _with_last(items: Iterable[T]) -> Iterator[tuple[T, bool]]:
    it = iter(items)
    current = next(it, None)
    while current is not None:
        following = next(it, None)
        yield current, following is None
        current = following


def write_trace_text(
    sinks: EventSinks,
    source: Source,
    chunks: Iterator[bytes],
    input_id: int,
    kind: str,
    strict: bool,
    on_chunk: Callable[[int], None] | None,
) -> dict[str, Any]:
    """Parse a whole tracepoint text, then write its events on their own time line.

    The rows are held until the end: the time line starts at the smallest time, which a
    trace_pipe copy may not print first, and a plug's device is found from its task's later
    requests.
    """
    parser = TraceTextParser(source.path, input_id, kind, strict)
    tables = []
    for chunk, is_last in _with_last(chunks):
        parser.feed(chunk, is_last)
        tables.append(parser.take_rows())
        sinks.write_errors(parser.errors)
        parser.errors_written += len(parser.errors)
        parser.errors.clear()
        if on_chunk is not None:
            on_chunk(source.bytes_read)
    table, unplaced, base = finish_events(tables)
    if table.num_rows == 0:
        raise no_events_error(source.path, parser)
    for start in range(0, table.num_rows, _SLICE):
        sinks.write_events(table.slice(start, _SLICE))
    digits = min(parser.digits)
    return {
        "id": input_id,
        "path": source.path,
        "format": FORMATS[kind],
        "compression": source.compression,
        "bytes": source.bytes_read,
        "sha256": source.sha256(),
        "lines": parser.lines,
        "event_lines": table.num_rows + unplaced,
        "header_lines": parser.header_lines,
        "other_event_lines": sum(parser.other_events.values()),
        "error_lines": parser.errors_written,
        "events_by_tracepoint": dict(sorted(parser.by_tracepoint.items())),
        "other_events": dict(parser.other_events.most_common()),
        "lost_events": parser.lost_events,
        "time_resolution_ns": 10 ** (9 - digits),
        "clock_base_ns": base,
        "lacks": lacks(parser, unplaced),
        "not_kept": not_kept(),
    }
