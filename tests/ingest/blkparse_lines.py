"""The blkparse line each events row was read from (the round-trip oracle of the tests): its raw
bytes when ingest kept them, else blkparse's own rendering of the row (render_event)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from blkscope.ingest.blkparse.event_line import render_event


def original_line(row: dict[str, Any]) -> str:
    """The input line of a blkparse row: its raw bytes when kept, else blkparse's rendering."""
    raw = row.get("raw_line")
    if raw is not None:
        return bytes(raw).decode("utf-8", "surrogateescape")
    return render_event(row)


def render_table(table: Any) -> Iterator[str]:
    """Yield the original line of each row of an events table (pyarrow) read from blkparse."""
    for batch in table.to_batches(max_chunksize=65536):
        yield from map(original_line, batch.to_pylist())
