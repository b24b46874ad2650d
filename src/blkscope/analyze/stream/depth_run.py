"""What the depth walk (rust/src/pass/depth.rs) needs to know of each device before the pass,
and where its sums are left, once the orphan verdict is in: the two small tables the `depth`
and `depth_bins` views group (sql/_depth_build.sql, sql/_depth_bins_build.sql)."""

from __future__ import annotations

import duckdb

from blkscope.analyze.correlation import device_spans
from blkscope.analyze.views import modules

# the tables of the analysis connection the sums are left in (this view exists only while
# `analyze` runs)
DEPTH_TIME = "internal._depth_time"
DEPTH_BIN_SUMS = "internal._depth_bin_sums"


def device_bounds(con: duckdb.DuckDBPyConnection) -> list[tuple[int, ...]]:
    """Per device of the events: (major, minor, first and last event time, time_bins' start,
    width and number of bins). time_bins reads only each device's first and last event time:
    it runs here over those two times (the connection's cached spans, which the findings read
    too) instead of scanning the events once more."""
    device_spans(con)
    spans = "internal._device_spans"
    rows = con.execute(f"""
        WITH events AS (SELECT dev_major, dev_minor, t0 AS time_ns FROM {spans}
                        UNION ALL SELECT dev_major, dev_minor, t1 FROM {spans})
        SELECT s.dev_major, s.dev_minor, s.t0, s.t1, b.start_ns, b.width_ns, b.bins
        FROM {spans} s JOIN ({modules()["time_bins"].main.body}) b USING (dev_major, dev_minor)
    """).fetchall()  # fmt: skip
    return [tuple(r) for r in rows]
