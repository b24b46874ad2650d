"""Tie latency episodes to kernel writeback on the dataset's one clock, and say per device how
much of the tail latency writeback explains (or plainly that it does not)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from blkscope.analyze.coincidence import at_least, overlap_chance
from blkscope.analyze.sql_modules import in_schema
from blkscope.analyze.views import query_table
from blkscope.schemas import WRITEBACK_VERDICT
from blkscope.units import format_s, format_share

FLUSHER_BURST_GAP_NS = 500_000_000
CHANCE_ALPHA = 0.05  # episodes coincide with writeback beyond chance below this p-value
TAIL_SHARE_MIN = 0.2  # writeback holds a real part of the tail latency ...
TAIL_ENRICHMENT_MIN = 3.0  # ... and several times the share of the time it runs
EMPTY = np.empty((0, 2), np.int64)


@dataclass(frozen=True)
class WritebackIntervals:
    """Per device, sorted [start, end] rows of writeback activity, and where they come from."""

    by_device: dict[tuple[int, int], np.ndarray]
    source: str  # where they come from, in words (the work items, or flusher-write bursts)

    def of(self, device: tuple[int, int]) -> np.ndarray:
        """The device's intervals (none: an empty array)."""
        return self.by_device.get(device, EMPTY)


def writeback_intervals(con: duckdb.DuckDBPyConnection) -> WritebackIntervals:
    """When writeback wrote: the work items that wrote pages, when the writeback log tells
    (writeback_trace.txt); else the bursts of flusher writes in the trace. A wakeup that
    writes nothing is not writeback activity, however often it comes."""
    try:
        rows = con.execute(
            "SELECT dev_major, dev_minor, start_ns, end_ns FROM writeback_events "
            "WHERE pages_written > 0"
        ).fetchall()
        known = con.execute(
            "SELECT count(*) FROM writeback_events WHERE pages_written IS NOT NULL"
        ).fetchall()[0][0]
        source = "writeback work items that wrote pages"
    except duckdb.Error:  # no writeback log in this capture
        rows, known = [], 0
    if not known:
        rows, source = _flusher_bursts(con), "flusher writes"
    out: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for major, minor, start, end in rows:
        out.setdefault((int(major), int(minor)), []).append((int(start), int(end)))
    by_device = {k: np.array(sorted(v), dtype=np.int64).reshape(-1, 2) for k, v in out.items()}
    return WritebackIntervals(by_device, source)


def wakeups(intervals: np.ndarray, gap_ns: int = FLUSHER_BURST_GAP_NS) -> np.ndarray:
    """Sorted work intervals merged into wakeups: an item starting within gap_ns of the work
    before it ends belongs to the same wakeup (a flusher wakeup logs many work items)."""
    if not len(intervals):
        return EMPTY
    reach = np.maximum.accumulate(intervals[:, 1])
    opens = np.concatenate(([True], intervals[1:, 0] > reach[:-1] + gap_ns))
    starts = intervals[opens, 0]
    ends = np.maximum.reduceat(intervals[:, 1], np.flatnonzero(opens))
    return np.stack([starts, ends], axis=1)


def _flusher_bursts(con: duckdb.DuckDBPyConnection) -> list[tuple[int, int, int, int]]:
    t = query_table(
        con,
        """
        SELECT dev_major, dev_minor, q_time_ns, coalesce(c_time_ns, q_time_ns) AS c
        FROM bios WHERE is_writeback_write(comm, op, flags, sector)
        ORDER BY dev_major, dev_minor, q_time_ns""",
    )
    rows: list[tuple[int, int, int, int]] = []
    for major, minor, q, c in zip(*(t[n].to_pylist() for n in t.column_names), strict=True):
        if rows and rows[-1][:2] == (major, minor) and q - rows[-1][3] <= FLUSHER_BURST_GAP_NS:
            rows[-1] = (major, minor, rows[-1][2], max(rows[-1][3], c))
        else:
            rows.append((major, minor, q, c))
    return rows


def device_spans(
    con: duckdb.DuckDBPyConnection, known: list[tuple[int, int, int, int]] | None = None
) -> dict[tuple[int, int], tuple[int, int]]:
    """Per device (in device order), the first and last event time: the span chance is measured
    over. Kept in an internal table of the connection: the findings ask for it five times, and
    each asks for a scan of every event (a connection's events never change). known: the
    spans as the events file's statistics tell them (stream/events.py device_spans_of), which
    the first call may give instead of the scan."""
    spans = (
        "SELECT dev_major, dev_minor, min(time_ns) AS t0, max(time_ns) AS t1 FROM events "
        "GROUP BY ALL"
    )
    if known:
        values = ", ".join(
            f"({int(a)}::INTEGER, {int(b)}::INTEGER, {int(lo)}::BIGINT, {int(hi)}::BIGINT)"
            for a, b, lo, hi in known
        )
        spans = f"SELECT * FROM (VALUES {values}) v(dev_major, dev_minor, t0, t1)"
    con.execute(f"CREATE TABLE IF NOT EXISTS {in_schema('_device_spans')} AS {spans}")
    rows = con.execute(f"SELECT * FROM {in_schema('_device_spans')} ORDER BY 1, 2").fetchall()
    return {(int(a), int(b)): (int(lo), int(hi)) for a, b, lo, hi in rows}


def _tail_inside(con: duckdb.DuckDBPyConnection, wb: WritebackIntervals) -> dict[tuple, tuple]:
    """Per device: (Q2C ns of the bios above its p99, of which while writeback ran). The p99 is
    stage_stats' (device level: every complete bio, the same quantile_disc), not computed
    again: a percentile of its own would sort every bio's latency in memory."""
    tail = query_table(
        con,
        """
        SELECT b.dev_major, b.dev_minor, b.c_time_ns, b.q2c_ns FROM bios b
        JOIN (SELECT dev_major, dev_minor, p99_ns AS p99 FROM stage_stats
              WHERE level = 'device' AND stage = 'Q2C') p USING (dev_major, dev_minor)
        WHERE NOT b.partial AND b.q2c_ns > p.p99""",
    )
    cols = {n: tail[n].to_numpy() for n in tail.column_names}
    devices = np.stack([cols["dev_major"], cols["dev_minor"]], axis=1)
    out: dict[tuple[int, int], tuple[int, int]] = {}
    for major, minor in np.unique(devices, axis=0).tolist():  # sorted, each device once
        mine = (cols["dev_major"] == major) & (cols["dev_minor"] == minor)
        out[(major, minor)] = latency_inside(
            cols["c_time_ns"][mine], cols["q2c_ns"][mine], wb.of((major, minor))
        )
    return out


def latency_inside(c: np.ndarray, lat: np.ndarray, iv: np.ndarray) -> tuple[int, int]:
    """(sum of lat, sum of lat of the completions c inside an interval [start, end] of iv, sorted
    by start), exact. One searchsorted for all of a device's tail, not one per bio: an
    interval starting at or before a completion reaches it when the furthest end among those (a
    running maximum) does."""
    k = np.searchsorted(iv[:, 0], c, side="right") - 1
    reach = np.maximum.accumulate(iv[:, 1]) if len(iv) else np.zeros(1, np.int64)
    hit = (k >= 0) & (reach[np.maximum(k, 0)] >= c)
    return sum(lat.tolist()), sum(lat[hit].tolist())  # Python ints: no overflow


def writeback_verdicts(
    con: duckdb.DuckDBPyConnection, episodes: pa.Table, wb: WritebackIntervals
) -> pa.Table:
    """The writeback_verdict table: one row per device with block IO.

    Writeback explains a device's episodes when at least half of them coincide with it, and
    either more coincide than chance allows (windows of the same lengths placed at random) or
    writeback holds several times more of the tail latency than of the time: when writeback
    runs often, every episode coincides with some of it.
    """
    spans = device_spans(con)
    tails = _tail_inside(con, wb)
    written = _flusher_bytes(con)
    rows = episodes.to_pylist()
    out = []
    for device in sorted(spans):
        mine = [r for r in rows if (r["dev_major"], r["dev_minor"]) == device]
        total, inside = tails.get(device, (0, 0))
        span = spans[device]
        # a window of length 0 overlaps writeback exactly while writeback runs
        iv = wb.of(device)
        time_share = overlap_chance(iv[:, 0], iv[:, 1], 0, span) if len(iv) else 0.0
        tail_share = inside / total if total else 0.0
        out.append(verdict(device, mine, tail_share, time_share, wb.source, written.get(device, 0)))
    return pa.Table.from_pylist(out, schema=WRITEBACK_VERDICT)


def _flusher_bytes(con: duckdb.DuckDBPyConnection) -> dict[tuple[int, int], int]:
    """Per device, the bytes of the writeback writes in the trace."""
    rows = con.execute(
        """SELECT dev_major, dev_minor, sum(coalesce(nsectors, 0)::BIGINT) * 512 FROM bios
           WHERE is_writeback_write(comm, op, flags, sector) GROUP BY ALL"""
    ).fetchall()
    return {(int(a), int(b)): int(n) for a, b, n in rows}


# The rule `explains` follows, as the page and the verdict sentence state it.
VERDICT_RULE = (
    "writeback explains a device's episodes when the flusher wrote on it, at least half of "
    f"the episodes are attributed to writeback, and either they coincide with writeback beyond "
    f"chance (p <= {CHANCE_ALPHA}) or writeback holds at least {TAIL_SHARE_MIN:.0%} of the "
    f"latency above p99 and {TAIL_ENRICHMENT_MIN:g}x its share of the time"
)


def verdict(
    device: tuple[int, int],
    episodes: list[dict[str, Any]],
    tail_share: float,
    time_share: float,
    source: str,
    flusher_bytes: int,
) -> dict[str, Any]:
    """One device's writeback_verdict row from its attributed episodes (VERDICT_RULE)."""
    explained = [r for r in episodes if "writeback" in r["cause"].split("+")]
    lags = [r["writeback_lag_ns"] for r in explained if r["writeback_lag_ns"] is not None]
    chance = np.array([r["writeback_chance"] for r in episodes], dtype=np.float64)
    p_value = at_least(len(explained), chance) if episodes else 1.0
    share = len(explained) / len(episodes) if episodes else 0.0
    enriched = tail_share >= TAIL_SHARE_MIN and tail_share >= TAIL_ENRICHMENT_MIN * time_share
    explains = (
        bool(episodes)
        and flusher_bytes > 0
        and share >= 0.5
        and (p_value <= CHANCE_ALPHA or enriched)
    )
    row: dict[str, Any] = {
        "dev_major": device[0],
        "dev_minor": device[1],
        "episodes": len(episodes),
        "episodes_with_writeback": len(explained),
        "episodes_by_chance": float(chance.sum()),
        "coincidence_p_value": p_value,
        "median_lag_ns": int(np.median(lags)) if lags else None,
        "tail_latency_share": tail_share,
        "writeback_time_share": time_share,
        "flusher_bytes": flusher_bytes,
        "explains": explains,
        "rule": VERDICT_RULE,
    }
    row["sentence"] = _sentence(row, source)
    return row


def _sentence(v: dict[str, Any], source: str) -> str:
    n, hit = v["episodes"], v["episodes_with_writeback"]
    if not n:
        return "no latency episodes to explain"
    lag = v["median_lag_ns"]
    head = (
        f"{hit} of {n} latency episode{'s' * (n != 1)} {'is' if hit == 1 else 'are'} attributed "
        f"to writeback ({source}: {v['episodes_by_chance']:.1f} would coincide with it by "
        f"chance, p = {v['coincidence_p_value']:.2g})"
        + (f", peaking {format_s(lag)} after writeback starts" if lag is not None else "")
    )
    tail = (
        f"; {format_share(v['tail_latency_share'])} of the latency above p99 falls during "
        f"writeback, which runs {format_share(v['writeback_time_share'])} of the time"
    )
    if v["explains"]:
        return f"writeback explains the episodes: {head}{tail}"
    if not v["flusher_bytes"]:
        return f"writeback does NOT explain the episodes: the flusher wrote nothing on the device; {head}"
    if hit * 2 >= n:
        return f"writeback does NOT explain the episodes: {head}, no more than chance{tail}"
    return f"writeback does NOT explain the episodes: only {head}{tail}"
