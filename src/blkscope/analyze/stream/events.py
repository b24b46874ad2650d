"""Events into the streaming pass: events.parquet's rows in time order, a row group at a time, as
the Arrow record batches the pass reads (its strings as Parquet stores them: one dictionary per
row group, so that only the dictionary is looked up). A file of the core's own writer is read
by the core (rust/src/ingest/parquet/read.rs), without Arrow's Parquet reader; others by
pyarrow."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from blkscope._core import ParquetTableReader, StreamPass
from blkscope.analyze.memory import bound_memory
from blkscope.interrupts import track
from blkscope.schemas import EVENTS

COLUMNS = StreamPass.columns()  # the columns of events the pass reads
STRING_COLUMNS = ["action", "op", "rwbs", "comm"]
# The columns as the pass reads them: the declared types, strings as dictionaries.
READ_SCHEMA = pa.schema([
    EVENTS.field(name).with_type(pa.dictionary(pa.int32(), pa.string()))
    if name in STRING_COLUMNS else EVENTS.field(name)
    for name in COLUMNS
])  # fmt: skip
BATCH_ROWS = 1 << 17
# Row groups read by one Arrow reader: a reader over the whole file keeps ~3.6 MB per million
# events it has handed out until it ends (measured on the 10x fio capture's events.parquet:
# 160 MB at 44 M events), one per 16 groups (~1 M events) stays flat.
GROUPS_PER_READER = 16


def device_spans_of(events: Path) -> list[tuple[int, int, int, int]] | None:
    """(major, minor, first and last event time) per device, from the row groups' statistics
    (Parquet keeps each column's exact min and max per row group), without reading a row; None
    when a row group holds more than one device or lacks the statistics (then a scan tells)."""
    meta = pq.ParquetFile(events).metadata
    names = meta.schema.names
    columns = [names.index(name) for name in ("dev_major", "dev_minor", "time_ns")]
    spans: dict[tuple[int, int], tuple[int, int]] = {}
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        if group.num_rows == 0:
            continue
        stats = [group.column(i).statistics for i in columns]
        if any(s is None or not s.has_min_max or s.null_count != 0 for s in stats):
            return None
        major, minor, time = stats
        if major.min != major.max or minor.min != minor.max:
            return None
        first, last = spans.get((major.min, minor.min), (time.min, time.max))
        spans[(major.min, minor.min)] = (min(first, time.min), max(last, time.max))
    return [(major, minor, *span) for (major, minor), span in sorted(spans.items())]


class OutOfOrder(Exception):
    """events.parquet is not in (time, input, line) order: read it through a sort instead."""


def batches(events: Path, in_order: bool) -> Iterator[pa.RecordBatch]:
    """events.parquet's rows in (time_ns, input_id, line_no) order, a row group at a time: as
    stored when in_order (one blkparse input is in time order), else through DuckDB's sort
    (which spills to disk rather than hold the trace)."""
    if in_order:
        try:
            reader = ParquetTableReader(str(events), READ_SCHEMA)
        except ValueError:  # not the core's file (an older dataset's): pyarrow reads it
            pass
        else:
            for group in range(reader.row_groups):
                yield pa.record_batch(reader.read(group))
            return
        file = pq.ParquetFile(events, read_dictionary=STRING_COLUMNS)
        for first in range(0, file.num_row_groups, GROUPS_PER_READER):
            groups = range(first, min(first + GROUPS_PER_READER, file.num_row_groups))
            yield from file.iter_batches(
                batch_size=BATCH_ROWS, columns=COLUMNS, row_groups=groups, use_threads=False
            )
        return
    con = track(duckdb.connect())
    bound_memory(con, events.parent)  # the analysis removes the spill folder when it is done
    path = events.as_posix().replace("'", "''")
    cols = ", ".join(COLUMNS)
    rel = con.sql(f"SELECT {cols} FROM read_parquet('{path}') ORDER BY time_ns, input_id, line_no")
    yield from rel.to_arrow_reader(BATCH_ROWS)
