"""Tables as Polars frames: every integer-ns time also as a Datetime or Duration column.

The stored tables keep exact integer ns (lossless, and what the SQL works in). Next to each
such column a frame gets one Polars can plot and filter as a time: `q_time_ns` gains `q_time`,
`d2c_ns` gains `d2c`. Which columns are instants on the trace clock and which are durations
is decided here, once, from the column names the schemas declare.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from blkscope.schemas import TABLES

if TYPE_CHECKING:
    import polars as pl

    from blkscope.wallclock import WallClock

# Columns counting ns since the trace's first event (events.time_ns), besides every
# `*_time_ns` of the reconstruction tables and every side log's `t_ns`.
_TRACE_INSTANTS = {"start_ns", "end_ns", "peak_ns", "acct_start_ns"}
# ns columns that are neither: raw clock readings and side-log times as printed (the side logs'
# `t_ns` carries them on the trace clock).
_NOT_TRACE_TIMES = {"base_time_ns", "note_time_ns", "wall_ns"}
_SIDE_LOG_TIME = "time_ns"  # as printed in a side log; only events.time_ns is on the trace clock


def time_kind(table: str, column: str) -> str | None:
    """'instant' (ns on the trace clock), 'duration' (ns) or None for a column of a table."""
    if not column.endswith("_ns") or column in _NOT_TRACE_TIMES:
        return None
    if column == _SIDE_LOG_TIME:
        return "instant" if table == "events" else None
    if column == "t_ns" or column.endswith("_time_ns") or column in _TRACE_INSTANTS:
        return "instant"
    return "duration"


def time_columns(table: str) -> dict[str, str]:
    """The integer ns columns of a stored table that get a time twin: column -> kind."""
    import pyarrow as pa

    return {
        f.name: kind
        for f in TABLES[table]
        if pa.types.is_integer(f.type) and (kind := time_kind(table, f.name))
    }


def trace_instants(table: str) -> tuple[str, ...]:
    """The integer ns columns of a stored table that are instants on the trace clock."""
    return tuple(c for c, kind in time_columns(table).items() if kind == "instant")


def twin_name(column: str) -> str:
    """The name of a ns column's time twin: `q_time_ns` -> `q_time`."""
    return column.removesuffix("_ns")


def with_times(frame: pl.LazyFrame, table: str, clock: WallClock) -> pl.LazyFrame:
    """frame with a Datetime (UTC) twin for each trace instant when the wall clock is known
    (else a Duration since the trace's first event), and a Duration twin for each duration."""
    import polars as pl

    names = set(frame.collect_schema().names())
    twins = []
    for column, kind in time_columns(table).items():
        if column not in names or twin_name(column) in names:
            continue
        ns = pl.col(column)
        if kind == "instant" and clock.zero_ns is not None:
            twin = (ns + clock.zero_ns).cast(pl.Datetime("ns", "UTC"))
        else:
            twin = ns.cast(pl.Duration("ns"))
        twins.append(twin.alias(twin_name(column)))
    return frame.with_columns(twins) if twins else frame
