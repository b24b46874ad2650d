"""A table's rows as the commands print them for machines (`--json`, `--csv`, `--nl`): the
columns its schema declares, exact integer ns, and beside each trace instant `<name>_utc`, the
same instant on the wall clock (ISO 8601). The frames' Datetime and Duration twins are for
notebooks and are left out: the ns columns already say the same, exactly."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from blkscope.frames import trace_instants
from blkscope.schemas import TABLES
from blkscope.wallclock import WallClock, with_wall_times

if TYPE_CHECKING:
    import polars as pl


def table_records(
    frame: pl.LazyFrame, table: str, clock: WallClock, utc: tuple[str, ...] | None = None
) -> list[dict[str, Any]]:
    """frame's rows as dicts: table's declared columns, then `<name>_utc` for each column of
    utc (default: every trace instant of the table)."""
    names = [f.name for f in TABLES[table]]
    rows = frame.select(names).collect().to_arrow().to_pylist()
    times = trace_instants(table) if utc is None else utc
    return [with_wall_times(r, clock, times) for r in rows]
