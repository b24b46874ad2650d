"""Tables only the blktrace binary reader can fill: the trace's own clock anchors."""

from __future__ import annotations

import pyarrow as pa

from blkscope.schemas._declare import field, schema

TRACE_CLOCK = schema(
    "trace_clock",
    "Clock anchors of a blktrace binary capture: one row per wall-clock timestamp note "
    "(one row with null note columns when the trace has none).",
    [
        field(
            "base_time_ns",
            pa.int64(),
            "Raw `time` that events.time_ns counts from: the smallest `time` of the event "
            "records (notes excluded, as blkparse does) over all per-CPU files, in ns on the "
            "tracer's clock (CLOCK_MONOTONIC with ftrace trace_clock=mono). "
            "events.time_ns = raw time - base_time_ns.",
            nullable=False,
        ),
        field("dev_major", pa.int32(), "Device major of the timestamp note."),
        field("dev_minor", pa.int32(), "Device minor of the timestamp note."),
        field("cpu", pa.int32(), "CPU whose file held the timestamp note."),
        field(
            "note_time_ns",
            pa.int64(),
            "Raw `time` of the timestamp note record, on the same clock as base_time_ns.",
        ),
        field(
            "wall_ns",
            pa.int64(),
            "Wall-clock time the note carries (its u32 sec, u32 nsec payload) in ns since the "
            "Unix epoch: blktrace's record of the wall clock at note_time_ns.",
        ),
    ],
)
