"""Turn blktrace records of all CPUs into `events` rows exactly as blkparse would print them
(the compiled core does it: rust/src/ingest/blktrace/)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import pyarrow as pa

from blkscope import _core
from blkscope.ingest.blktrace.records import RecordFile, records_error
from blkscope.ingest.codes import events_table


@dataclass
class TraceClock:
    """What a later clock model needs: the trace's time zero and its wall-clock notes."""

    base_time_ns: int
    smallest_time_ns: int = 0
    wall_notes: list[dict[str, int]] = field(default_factory=list)


@dataclass
class DecodedTrace:
    """The events of a set of per-CPU files, merged by time, and what the notes said."""

    num_rows: int
    build: Callable[[int, int], pa.Table]
    clock: TraceClock
    skipped_by_code: dict[int, int]
    other_notes: int
    messages: int
    comms: dict[int, str]

    def slices(self, rows: int = 1 << 20) -> Iterator[pa.Table]:
        """The events table in print order, `rows` at a time (bounded memory on big traces)."""
        for start in range(0, self.num_rows, rows):
            yield self.build(start, min(start + rows, self.num_rows))

    @property
    def events(self) -> pa.Table:
        """The whole events table."""
        return self.build(0, self.num_rows)


_NOTE_FIELDS = ("dev_major", "dev_minor", "cpu", "time", "wall_ns")


def decode(files: Sequence[RecordFile], input_ids: Sequence[int]) -> DecodedTrace:
    """Merge the per-CPU files by blkparse's print order and build the events table; every row
    carries input_ids[0] (the analysis orders ties by input id then line, blkparse's order)."""
    paths = [f.path for f in files]
    try:
        trace = _core.BlktraceTrace([f.blob for f in files], input_ids[0])
    except _core.RecordsError as exc:
        raise records_error(paths, exc) from None

    def build(start: int, stop: int) -> pa.Table:
        try:
            batch = pa.record_batch(trace.rows(start, stop))
        except _core.RecordsError as exc:
            raise records_error(paths, exc) from None
        return events_table(
            batch.num_rows, dict(zip(batch.schema.names, batch.columns, strict=True))
        )

    clock = TraceClock(
        base_time_ns=trace.base_time_ns,
        smallest_time_ns=trace.smallest_time_ns,
        wall_notes=[dict(zip(_NOTE_FIELDS, note, strict=True)) for note in trace.wall_notes],
    )
    return DecodedTrace(
        num_rows=trace.num_rows,
        build=build,
        clock=clock,
        skipped_by_code=dict(trace.skipped_by_code),
        other_notes=trace.other_notes,
        messages=trace.messages,
        comms={pid: name.decode("utf-8", "surrogateescape") for pid, name in trace.comms},
    )
