"""Tie latency spikes to kernel writeback on the dataset's one clock, and say how much of the
tail latency writeback explains (or plainly that it does not)."""

from __future__ import annotations

from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from blkscope.analyze.coincidence import at_least, overlap_chance
from blkscope.analyze.views import query_table

FLUSHER_BURST_GAP_NS = 500_000_000
CHANCE_ALPHA = 0.05  # spikes coincide with writeback beyond chance below this p-value
TAIL_SHARE_MIN = 0.2  # writeback holds a real part of the tail latency ...
TAIL_ENRICHMENT_MIN = 3.0  # ... and several times the share of the time it runs


def writeback_intervals(con: duckdb.DuckDBPyConnection) -> dict[tuple[int, int], np.ndarray]:
    """Per device, sorted [start, end] rows of writeback activity (see _writeback_windows)."""
    out: dict[tuple[int, int], list[tuple[int, int]]] = {}
    try:
        rows = con.execute(
            "SELECT dev_major, dev_minor, start_ns, end_ns FROM _writeback_windows"
        ).fetchall()
    except duckdb.Error:  # no writeback log in this capture: fall back to flusher bios
        rows = []
    if not rows:
        rows = _flusher_bursts(con)
    for major, minor, start, end in rows:
        out.setdefault((int(major), int(minor)), []).append((int(start), int(end)))
    return {k: np.array(sorted(v), dtype=np.int64).reshape(-1, 2) for k, v in out.items()}


def _flusher_bursts(con: duckdb.DuckDBPyConnection) -> list[tuple[int, int, int, int]]:
    t = query_table(
        con,
        """
        SELECT dev_major, dev_minor, q_time_ns, coalesce(c_time_ns, q_time_ns) AS c
        FROM bios WHERE op = 'W' AND (comm LIKE 'kworker/u%' OR comm LIKE 'flush-%')
        ORDER BY dev_major, dev_minor, q_time_ns""",
    )
    rows: list[tuple[int, int, int, int]] = []
    for major, minor, q, c in zip(*(t[n].to_pylist() for n in t.column_names), strict=True):
        if rows and rows[-1][:2] == (major, minor) and q - rows[-1][3] <= FLUSHER_BURST_GAP_NS:
            rows[-1] = (major, minor, rows[-1][2], max(rows[-1][3], c))
        else:
            rows.append((major, minor, q, c))
    return rows


def annotate_spikes(
    spikes: pa.Table, intervals: dict[tuple[int, int], np.ndarray], has_log: bool
) -> pa.Table:
    """Fill writeback_events / writeback_lag_ns and let an overlapping writeback decide the cause."""
    rows = spikes.to_pylist()
    for r in rows:
        iv = intervals.get((r["dev_major"], r["dev_minor"]), np.empty((0, 2), np.int64))
        overlap = (iv[:, 0] < r["end_ns"]) & (iv[:, 1] > r["start_ns"] - r["window_ns"])
        before = iv[iv[:, 0] <= r["peak_ns"]]
        if has_log:
            r["writeback_events"] = int(overlap.sum())
        r["writeback_lag_ns"] = int(r["peak_ns"] - before[-1, 0]) if len(before) else None
        if overlap.any() and "writeback" not in r["cause"]:
            r["cause"] = "writeback" if r["cause"] == "unexplained" else f"writeback+{r['cause']}"
    return pa.Table.from_pylist(rows, schema=spikes.schema)


def _spans(con: duckdb.DuckDBPyConnection) -> dict[tuple[int, int], tuple[int, int]]:
    rows = con.execute(
        "SELECT dev_major, dev_minor, min(time_ns), max(time_ns) FROM events GROUP BY ALL"
    ).fetchall()
    return {(int(a), int(b)): (int(lo), int(hi)) for a, b, lo, hi in rows}


def _chance(
    rows: list[dict[str, Any]],
    intervals: dict[tuple[int, int], np.ndarray],
    spans: dict[tuple[int, int], tuple[int, int]],
) -> np.ndarray:
    """Per spike, the chance that a window of its length placed at random overlaps writeback
    the way annotate_spikes counts it (reaching one window back)."""
    out = []
    for r in rows:
        key = (r["dev_major"], r["dev_minor"])
        iv = intervals.get(key, np.empty((0, 2), np.int64))
        length = r["end_ns"] - r["start_ns"] + r["window_ns"]
        out.append(overlap_chance(iv[:, 0], iv[:, 1], length, spans.get(key, (0, 1))))
    return np.array(out)


def writeback_verdict(
    con: duckdb.DuckDBPyConnection, spikes: pa.Table, intervals: dict[tuple[int, int], np.ndarray]
) -> dict[str, Any]:
    """Share of spikes explained by writeback, their lag, and the share of tail latency
    (bios slower than their device's p99) that completes while writeback runs.

    Writeback explains the spikes when at least half of them coincide with it, and either more
    coincide than chance allows (windows of the same lengths placed at random) or writeback
    holds several times more of the tail latency than of the time: when writeback runs often,
    every spike coincides with some of it.
    """
    rows = spikes.to_pylist()
    explained = [r for r in rows if "writeback" in r["cause"]]
    lags = [r["writeback_lag_ns"] for r in explained if r["writeback_lag_ns"] is not None]
    tail = query_table(
        con,
        """
        SELECT b.dev_major, b.dev_minor, b.c_time_ns, b.q2c_ns FROM bios b
        JOIN (SELECT dev_major, dev_minor, quantile_disc(q2c_ns, 0.99) AS p99 FROM bios
              WHERE NOT partial GROUP BY ALL) p USING (dev_major, dev_minor)
        WHERE NOT b.partial AND b.q2c_ns > p.p99""",
    )
    total = inside = 0
    for major, minor, c, lat in zip(*(tail[n].to_pylist() for n in tail.column_names), strict=True):
        total += lat
        iv = intervals.get((major, minor))
        if iv is not None and len(iv):
            k = int(np.searchsorted(iv[:, 0], c, side="right")) - 1
            inside += lat if k >= 0 and iv[: k + 1, 1].max() >= c else 0
    spans = _spans(con)
    span_ns = sum(hi - lo for lo, hi in spans.values())
    # a window of length 0 overlaps writeback exactly while writeback runs
    covered_ns = sum(
        overlap_chance(iv[:, 0], iv[:, 1], 0, spans[k]) * (spans[k][1] - spans[k][0])
        for k, iv in intervals.items()
        if k in spans
    )
    time_share = covered_ns / span_ns if span_ns else 0.0
    chance = _chance(rows, intervals, spans)
    p_value = at_least(len(explained), chance) if rows else 1.0
    share_spikes = len(explained) / len(rows) if rows else 0.0
    share_tail = inside / total if total else 0.0
    enriched = share_tail >= TAIL_SHARE_MIN and share_tail >= TAIL_ENRICHMENT_MIN * time_share
    explains = bool(rows) and share_spikes >= 0.5 and (p_value <= CHANCE_ALPHA or enriched)
    return {
        "spikes": len(rows),
        "spikes_with_writeback": len(explained),
        "spike_share": share_spikes,
        "spikes_by_chance": float(chance.sum()),
        "coincidence_p_value": p_value,
        "median_lag_ns": int(np.median(lags)) if lags else None,
        "tail_latency_share_during_writeback": share_tail,
        "time_share_of_writeback": time_share,
        "explains": explains,
        "sentence": _sentence(rows, explained, lags, (share_tail, time_share, chance), explains),
    }


def _sentence(
    rows: list[dict[str, Any]],
    explained: list[dict[str, Any]],
    lags: list[int],
    shares: tuple[float, float, np.ndarray],
    explains: bool,
) -> str:
    if not rows:
        return "no latency spikes to explain"
    share_tail, time_share, chance = shares
    lag = f", peaking {np.median(lags) / 1e9:.2f} s after writeback starts" if lags else ""
    head = (
        f"{len(explained)} of {len(rows)} spikes coincide with writeback"
        f" ({chance.sum():.1f} would by chance){lag}"
    )
    tail = (
        f"; {share_tail:.0%} of the latency above p99 falls during writeback, which runs"
        f" {time_share:.0%} of the time"
    )
    if explains:
        return f"writeback explains the spikes: {head}{tail}"
    if len(explained) * 2 >= len(rows):
        return f"writeback does NOT explain the spikes: {head}, no more than chance{tail}"
    return f"writeback does NOT explain the spikes: only {head}{tail}"
