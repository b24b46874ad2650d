"""Whose IO an application's latency log measures, and where each of its samples spent its time.

A user series (e.g. a prober's `mono_ns,latency_us`) says how long each operation took, not
which IO it issued. Its process is found from the trace: the process whose bios fall inside the
samples' intervals, nearly all of them and in nearly every sample, is the one the log measures
(another busy process has bios in many samples too, but most of its bios fall outside them).
A log may stamp a sample at its start or at its end; both are tried and the data decides.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

# Samples the process is matched on: enough to tell a periodic prober from background IO,
# few enough that the match reads only the bios of the series' first minutes.
MATCH_SAMPLES = 2000
# The match must hold for most samples and most of the process's bios to be trusted.
MIN_SAMPLE_SHARE = 0.5
MIN_INSIDE_SHARE = 0.5
# The value of a sample in ns, for the units a series header may name.
SAMPLE_NS = (
    "value * CASE unit WHEN 'ns' THEN 1 WHEN 'us' THEN 1e3 WHEN 'ms' THEN 1e6 WHEN 's' THEN 1e9 END"
)


@dataclass(frozen=True)
class SeriesProcess:
    """The process a user series measures: its pid and name, whether the log stamps a sample at
    the operation's start or end, and how well the match holds."""

    series: str
    pid: int
    comm: str
    stamp: str  # 'start' or 'end'
    sample_share: float  # share of the samples with a bio of the process inside
    inside_share: float  # share of the process's bios that fall inside a sample

    @property
    def label(self) -> str:
        return f"{self.comm} pid {self.pid}"


_MATCH = f"""
WITH s AS (
    SELECT series, t_ns, ({SAMPLE_NS})::BIGINT AS lat,
           row_number() OVER (PARTITION BY series ORDER BY t_ns) AS k
    FROM series
    WHERE t_ns IS NOT NULL AND value >= 0 AND unit IN ('ns', 'us', 'ms', 's')
), head AS (
    SELECT * FROM s WHERE k <= {MATCH_SAMPLES}
), spans AS (
    SELECT series, count(*) AS samples, min(t_ns) - max(lat) AS lo, max(t_ns) + max(lat) AS hi
    FROM head GROUP BY series
), stamped AS (
    SELECT series, k, 'start' AS stamp, t_ns AS a, t_ns + lat AS e FROM head
    UNION ALL
    SELECT series, k, 'end' AS stamp, t_ns - lat AS a, t_ns AS e FROM head
), b AS (
    SELECT s.series, st.stamp, b.pid, b.comm, b.q_time_ns AS q
    FROM bios b JOIN spans s ON b.q_time_ns BETWEEN s.lo AND s.hi,
         (VALUES ('start'), ('end')) AS st(stamp)
    WHERE b.pid IS NOT NULL
), inside AS (
    -- each bio against the last sample that began before it (a prober's samples follow each
    -- other): an as-of join, not every bio against every sample
    SELECT b.series, b.stamp, b.pid, count(DISTINCT st.k) AS hit, count(*) AS bios
    FROM b ASOF JOIN stamped st
      ON b.series = st.series AND b.stamp = st.stamp AND b.q >= st.a
    WHERE b.q <= st.e
    GROUP BY ALL
), totals AS (
    SELECT series, pid, any_value(comm) AS comm, count(*) AS bios
    FROM b WHERE stamp = 'start' GROUP BY ALL
)
SELECT i.series, i.pid, t.comm, i.stamp, i.hit / sp.samples AS sample_share,
       i.bios / t.bios AS inside_share
FROM inside i JOIN totals t USING (series, pid) JOIN spans sp USING (series)
QUALIFY row_number() OVER (
    PARTITION BY i.series ORDER BY i.hit / sp.samples * (i.bios / t.bios) DESC, i.pid) = 1
ORDER BY i.series
"""


def series_processes(con: duckdb.DuckDBPyConnection) -> dict[str, SeriesProcess]:
    """Each user series' process, for the series whose match holds (see the module doc)."""
    try:
        rows = con.execute(_MATCH).fetchall()
    except duckdb.CatalogException:  # no user series in this dataset
        return {}
    found = {}
    for series, pid, comm, stamp, sample_share, inside_share in rows:
        if sample_share >= MIN_SAMPLE_SHARE and inside_share >= MIN_INSIDE_SHARE:
            found[series] = SeriesProcess(
                series, int(pid), comm or "?", stamp, float(sample_share), float(inside_share)
            )
    return found
