"""The btt-like per-device summary that `blkscope analyze` prints (or emits as JSON)."""

from __future__ import annotations

from typing import Any

import duckdb

STAGES = ["Q2Q", "Q2G", "G2I", "Q2M", "I2D", "M2D", "D2C", "Q2C"]
_RATIO_COLS = ["queued", "dispatches", "merge_ratio", "split_ratio", "requeues", "sequential_share"]
STAT_COLUMNS = ["n", "min_ns", "mean_ns", "p50_ns", "p90_ns", "p99_ns", "p999_ns", "max_ns"]

_COUNTS = """
SELECT dev_major, dev_minor, coalesce(b.queued, 0), coalesce(b.merged_bios, 0),
       coalesce(b.split_bios, 0), coalesce(b.partial_bios, 0), coalesce(r.requests, 0),
       coalesce(r.dispatches, 0), coalesce(r.completions, 0), coalesce(r.requeues, 0),
       coalesce(r.partial_requests, 0)
FROM (SELECT dev_major, dev_minor, count(*) AS queued, count(*) FILTER (merged) AS merged_bios,
             count(*) FILTER (split) AS split_bios, count(*) FILTER (partial) AS partial_bios
      FROM bios GROUP BY ALL) b
FULL JOIN (SELECT dev_major, dev_minor, count(*) AS requests, sum(dispatches)::BIGINT AS dispatches,
             count(c_time_ns) AS completions, sum(requeues)::BIGINT AS requeues,
             count(*) FILTER (partial) AS partial_requests
      FROM requests GROUP BY ALL) r USING (dev_major, dev_minor)
ORDER BY ALL
"""


def device_summary(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Per device: IO counts and device-level stage statistics (ns)."""
    out = []
    for row in con.execute(_COUNTS).fetchall():
        major, minor, *counts = row
        names = [
            "queued",
            "merged_bios",
            "split_bios",
            "partial_bios",
            "requests",
            "dispatches",
            "completions",
            "requeues",
            "partial_requests",
        ]
        dev: dict[str, Any] = {"dev": f"{major},{minor}", **dict(zip(names, counts, strict=True))}
        dev["merge_ratio"] = round(dev["queued"] / max(dev["dispatches"], 1), 3)
        stats = con.execute(
            f"SELECT stage, {', '.join(STAT_COLUMNS)} FROM stage_stats WHERE level = 'device' "
            "AND dev_major = $1 AND dev_minor = $2",
            [major, minor],
        ).fetchall()
        by_stage = {s: dict(zip(STAT_COLUMNS, vals, strict=True)) for s, *vals in stats}
        dev["stages"] = {s: by_stage[s] for s in STAGES if s in by_stage}
        depth = con.execute(
            "SELECT level, max(depth) FILTER (held_ns > 0), sum(depth * share) FROM depth "
            "WHERE dev_major = $1 AND dev_minor = $2 GROUP BY level ORDER BY level",
            [major, minor],
        ).fetchall()
        # a trace of 0 ns (every event at one time) has no time-weighted mean: null
        dev["depth"] = {
            level: {"max": mx, "mean": None if mean is None else round(mean, 3)}
            for level, mx, mean in depth
        }
        dev["ops"] = {
            op: dict(zip(_RATIO_COLS, vals, strict=True))
            for op, *vals in con.execute(
                f"SELECT op, {', '.join(_RATIO_COLS)} FROM io_ratios "
                "WHERE dev_major = $1 AND dev_minor = $2 ORDER BY op",
                [major, minor],
            ).fetchall()
        }
        out.append(dev)
    return out
