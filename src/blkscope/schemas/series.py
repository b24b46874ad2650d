"""Generic user time series: an application's own measurements, e.g. a latency prober CSV."""

from __future__ import annotations

import pyarrow as pa

from blkscope.schemas._declare import field, schema

T_NS_DOC = (
    "Row time on the capture timeline: ns since the trace's first block event "
    "(events.time_ns), set by folder ingest's clock model (manifest clock.sources); null "
    "when the source could not be placed or was parsed alone."
)
LINE_DOC = "1-based line number of the row in its input file."

SERIES = schema(
    "series",
    "A user-named time series from a CSV with a time column and one or more value columns "
    "(e.g. an application's latency probe), one row per CSV row and value column.",
    [
        field(
            "series",
            pa.string(),
            "The user's name for the series (default: the file name "
            "without extension), plus '.column' when the CSV has several value columns.",
            nullable=False,
        ),
        field(
            "clock",
            pa.string(),
            "The time column's header as printed, e.g. mono_ns, "
            "epoch_s: which clock the times are on.",
            nullable=False,
        ),
        field(
            "time_ns",
            pa.int64(),
            "The time column as printed, converted exactly to ns by "
            "its unit suffix (_ns, _us, _ms, _s); without one, times with a decimal point "
            "are read as seconds and integers as ns.",
            nullable=False,
        ),
        field("t_ns", pa.int64(), T_NS_DOC),
        field("value", pa.float64(), "The value as printed; null when the cell is empty."),
        field(
            "unit",
            pa.string(),
            "Value unit from the value header's suffix (latency_us -> us); null when none.",
        ),
        field("line_no", pa.int64(), LINE_DOC, nullable=False),
    ],
)
