"""The btt-like per-device summary that `blkscope analyze` prints (or emits as JSON)."""

from __future__ import annotations

from typing import Any

import duckdb

STAGES = ["Q2Q", "Q2G", "G2I", "Q2M", "I2D", "M2D", "D2C", "Q2C"]
_RATIO_COLS = ["queued", "dispatches", "merge_ratio", "split_ratio", "requeues", "sequential_share"]
STAT_COLUMNS = ["n", "min_ns", "mean_ns", "p50_ns", "p90_ns", "p99_ns", "p999_ns", "max_ns"]

# Sums of BIGINT are HUGEINT: cast back to plain integers.
_COUNTS = """
SELECT dev_major, dev_minor, coalesce(b.queued, 0), coalesce(b.merged_bios, 0),
       coalesce(b.split_bios, 0), coalesce(b.partial_bios, 0), coalesce(r.requests, 0),
       coalesce(r.dispatches, 0), coalesce(r.completions, 0), coalesce(r.requeues, 0),
       coalesce(r.partial_requests, 0), coalesce(r.orphan_completions, 0)
FROM (SELECT dev_major, dev_minor, sum(bios)::BIGINT AS queued,
             sum(merged)::BIGINT AS merged_bios, sum(split)::BIGINT AS split_bios,
             sum(partial)::BIGINT AS partial_bios
      FROM bio_counts GROUP BY ALL) b
FULL JOIN (SELECT dev_major, dev_minor, sum(requests)::BIGINT AS requests,
                  sum(dispatches)::BIGINT AS dispatches, sum(completions)::BIGINT AS completions,
                  sum(requeues)::BIGINT AS requeues, sum(partial)::BIGINT AS partial_requests,
                  (sum(requests) FILTER (kind = 'orphan'))::BIGINT AS orphan_completions
           FROM request_counts GROUP BY ALL) r USING (dev_major, dev_minor)
ORDER BY ALL
"""


def _by_device(rows: list[tuple[Any, ...]]) -> dict[tuple[int, int], list[tuple[Any, ...]]]:
    """Rows that start with (major, minor), grouped by device (their order kept)."""
    out: dict[tuple[int, int], list[tuple[Any, ...]]] = {}
    for major, minor, *rest in rows:
        out.setdefault((major, minor), []).append(tuple(rest))
    return out


def device_summary(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Per device: IO counts and device-level stage statistics (ns). A handful of queries for
    all devices together: one per device made a trace of 3,000 devices cost seconds."""
    stats = _by_device(
        con.execute(
            f"SELECT dev_major, dev_minor, stage, {', '.join(STAT_COLUMNS)} FROM stage_stats "
            "WHERE level = 'device'"
        ).fetchall()
    )
    depths = _by_device(
        con.execute(
            "SELECT dev_major, dev_minor, level, max(depth) FILTER (held_ns > 0), "
            "sum(depth * share) FROM depth GROUP BY ALL ORDER BY ALL"
        ).fetchall()
    )
    ratios = _by_device(
        con.execute(
            f"SELECT dev_major, dev_minor, op, {', '.join(_RATIO_COLS)} FROM io_ratios "
            "ORDER BY dev_major, dev_minor, op"
        ).fetchall()
    )
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
        "orphan_completions",  # a C with no issue (its D lost, or the C a duplicate)
    ]
    out = []
    for row in con.execute(_COUNTS).fetchall():
        major, minor, *counts = row
        dev: dict[str, Any] = {"dev": f"{major},{minor}", **dict(zip(names, counts, strict=True))}
        dev["merge_ratio"] = round(dev["queued"] / max(dev["dispatches"], 1), 3)
        by_stage = {
            s: dict(zip(STAT_COLUMNS, vals, strict=True))
            for s, *vals in stats.get((major, minor), [])
        }
        dev["stages"] = {s: by_stage[s] for s in STAGES if s in by_stage}
        # a trace of 0 ns (every event at one time) has no time-weighted mean: null
        dev["depth"] = {
            level: {"max": mx, "mean": None if mean is None else round(mean, 3)}
            for level, mx, mean in depths.get((major, minor), [])
        }
        dev["ops"] = {
            op: dict(zip(_RATIO_COLS, vals, strict=True))
            for op, *vals in ratios.get((major, minor), [])
        }
        out.append(dev)
    return out
