"""Read a biosnoop_tp.bt log and match its rows to reconstructed requests (test-side truth)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import duckdb
import pyarrow as pa


def read_biosnoop(path: Path, disk: str) -> pa.Table:
    """Rows of one DISK from `TIME(s) COMM PID DISK T SECTOR BYTES LAT(ms)`; times in ns."""
    text = subprocess.run(["zstd", "-dcf", str(path)], capture_output=True, check=True).stdout
    rows: dict[str, list[object]] = {
        k: [] for k in ("t_ns", "rwbs", "sector", "nsectors", "lat_ns")
    }
    for line in text.decode(errors="replace").splitlines():
        toks = line.split()
        if len(toks) < 8 or not toks[0][0].isdigit() or toks[-5] != disk:
            continue
        sec, frac = toks[0].split(".")
        ms, ms_frac = toks[-1].split(".")
        rows["t_ns"].append(int(sec) * 1_000_000_000 + int(frac) * 1000)
        rows["rwbs"].append(toks[-4])
        rows["sector"].append(int(toks[-3]))
        rows["nsectors"].append(int(toks[-2]) // 512)
        rows["lat_ns"].append(int(ms) * 1_000_000 + int(ms_frac) * 10_000)
    return pa.table(rows)


def match_biosnoop(con: duckdb.DuckDBPyConnection, snoop: pa.Table) -> dict[str, float]:
    """Match sized biosnoop rows to requests by sector, size and completion time.

    The probe's clock zero is its own start; the offset to the trace clock is the median of
    (request C - biosnoop time) over (sector, size) keys seen exactly once on both sides.
    """
    con.register("snoop", snoop)
    offset = con.execute("""
        WITH s AS (SELECT sector, nsectors, any_value(t_ns) AS t FROM snoop WHERE nsectors > 0
                   GROUP BY ALL HAVING count(*) = 1),
             r AS (SELECT sector, nsectors, any_value(c_time_ns) AS c FROM requests
                   WHERE kind = 'data' AND c_time_ns IS NOT NULL GROUP BY ALL HAVING count(*) = 1)
        SELECT median(r.c - s.t)::BIGINT FROM s JOIN r USING (sector, nsectors)""").fetchall()[0][0]
    row = con.execute(
        """
        WITH s AS (SELECT row_number() OVER () AS id, * FROM snoop WHERE nsectors > 0),
             m AS (SELECT s.id, arg_min(r.d2c_ns, abs(r.c_time_ns - (s.t_ns + $off))) AS d2c,
                          min(abs(r.c_time_ns - (s.t_ns + $off))) AS dt, any_value(s.lat_ns) AS lat
                   FROM s JOIN requests r ON r.sector = s.sector AND r.nsectors = s.nsectors
                    AND r.kind = 'data' AND r.c_time_ns IS NOT NULL
                   GROUP BY s.id)
        SELECT (SELECT count(*) FROM s),
               count(*) FILTER (dt <= 1000000),
               count(*) FILTER (dt <= 1000000 AND abs(d2c - lat) <= 50000),
               median(dt) FILTER (dt <= 1000000)
        FROM m""",
        {"off": offset},
    ).fetchall()[0]
    sized, found, agree, median_dt = row
    return {
        "offset_ns": offset,
        "sized": sized,
        "found": found,
        "agree": agree,
        "found_share": found / sized,
        "agree_share": agree / max(found, 1),
        "median_c_gap_ns": median_dt,
    }
