"""Latency episodes: the spikes of every metric on one device that share a time window, as one
row that says what was in flight and why it is attributed as it is."""

from __future__ import annotations

from typing import Any

import duckdb
import pyarrow as pa

from blkscope.analyze.coincidence import overlap_chance
from blkscope.analyze.correlation import WritebackIntervals, device_spans, wakeups
from blkscope.schemas import EPISODES
from blkscope.units import format_s, format_share

WRITEBACK_BYTES_SHARE = 0.25  # writeback writes carry this much of the bytes in flight
JOURNAL_IO_SHARE = 0.1  # the journal's share of the bios in flight


def group_episodes(spikes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Episodes of spike rows (any metric, one device) whose windows overlap or touch; each
    spike row gets its episode_id. Returns partial episode rows, in device and time order."""
    episodes: list[dict[str, Any]] = []
    order = sorted(
        range(len(spikes)),
        key=lambda i: (spikes[i]["dev_major"], spikes[i]["dev_minor"], spikes[i]["start_ns"]),
    )
    for i in order:
        s = spikes[i]
        device = (s["dev_major"], s["dev_minor"])
        last = episodes[-1] if episodes else None
        if last is None or last["device"] != device or s["start_ns"] > last["end_ns"]:
            number = 1 if last is None or last["device"] != device else last["episode_id"] + 1
            last = {"device": device, "episode_id": number, "end_ns": s["end_ns"], "members": []}
            last["start_ns"] = s["start_ns"]
            episodes.append(last)
        last["end_ns"] = max(last["end_ns"], s["end_ns"])
        last["members"].append(s)
        s["episode_id"] = last["episode_id"]
    out = []
    for e in episodes:
        members = sorted(e["members"], key=lambda s: s["spike_id"])
        worst = max(members, key=lambda s: (s["peak_latency_ns"], -s["start_ns"]))
        out.append(
            {
                "dev_major": e["device"][0],
                "dev_minor": e["device"][1],
                "episode_id": e["episode_id"],
                "start_ns": e["start_ns"],
                "end_ns": e["end_ns"],
                "window_ns": max(s["window_ns"] for s in members),
                "metrics": ", ".join(dict.fromkeys(s["metric"] for s in members)),
                "spikes": len(members),
                "worst_metric": worst["metric"],
                "peak_ns": worst["peak_ns"],
                "peak_latency_ns": worst["peak_latency_ns"],
            }
        )
    return out


def attribute_episodes(
    con: duckdb.DuckDBPyConnection, episodes: list[dict[str, Any]], wb: WritebackIntervals
) -> pa.Table:
    """The episodes table: each episode with what was in flight, the writeback it met, and
    its cause with the evidence in words."""
    spans = device_spans(con)
    for e, found in zip(episodes, _in_flight(con, episodes), strict=True):
        device = (e["dev_major"], e["dev_minor"])
        e.update(found)
        iv = wb.of(device)
        reach = e["start_ns"] - e["window_ns"]  # IO queued a window back can still be in flight
        overlap = (iv[:, 0] < e["end_ns"]) & (iv[:, 1] > reach)
        before = wakeups(iv)
        before = before[before[:, 0] <= e["peak_ns"]]
        e["writeback_events"] = int(overlap.sum())
        e["writeback_lag_ns"] = int(e["peak_ns"] - before[-1, 0]) if len(before) else None
        length = e["end_ns"] - reach
        span = spans.get(device, (0, 1))
        e["writeback_chance"] = overlap_chance(iv[:, 0], iv[:, 1], length, span)
        e["cause"], e["reason"] = _cause(e, wb.source)
    return pa.Table.from_pylist(episodes, schema=EPISODES)


# What was in flight during each episode (bios queued before its end and completed after its
# start) and who queued the most in the window before it: one scan of the bios for all
# episodes, not one per episode (a scan of a big trace's bios is not free), joined on time
# steps, not on the device alone (that pairs every bio of a device with every episode of it).
_IN_FLIGHT = """
WITH step AS (
    SELECT max(window_ns) AS w FROM _episode_spans
), keyed AS (
    -- each episode once per step of w (its widest window) that (start - w, end) touches: a bio
    -- in flight for less than w overlaps [start, end) only if queued in there, so it joins the
    -- episode on its Q's step (see _TOP_PROCESSES); the longer ones (few) on the device alone
    SELECT e.*, t.k
    FROM _episode_spans e, step,
         range((e.start_ns - step.w) // step.w, (e.end_ns - 1) // step.w + 1) AS t(k)
), pairs AS (
    SELECT e.i, b.q_time_ns, b.writeback, b.journal, b.nsectors
    FROM keyed e JOIN (
        SELECT b.*, b.q_time_ns // step.w AS k FROM internal._inflight_by_process b, step
        WHERE b.end_ns - b.q_time_ns < step.w
    ) b ON b.dev_major = e.dev_major AND b.dev_minor = e.dev_minor AND b.k = e.k
       AND b.q_time_ns < e.end_ns AND b.end_ns > e.start_ns
    UNION ALL
    SELECT e.i, b.q_time_ns, b.writeback, b.journal, b.nsectors
    FROM _episode_spans e JOIN (
        SELECT b.* FROM internal._inflight_by_process b, step
        WHERE b.end_ns - b.q_time_ns >= step.w
    ) b ON b.dev_major = e.dev_major AND b.dev_minor = e.dev_minor
       AND b.q_time_ns < e.end_ns AND b.end_ns > e.start_ns
)
SELECT e.i, count(b.q_time_ns), count(*) FILTER (b.writeback), count(*) FILTER (b.journal),
       coalesce(sum(b.nsectors), 0), coalesce(sum(b.nsectors) FILTER (b.writeback), 0)
FROM _episode_spans e LEFT JOIN pairs b USING (i)
GROUP BY e.i
"""
_TOP_PROCESSES = """
WITH step AS (
    SELECT max(window_ns) AS w FROM _episode_spans
), keyed AS (
    -- each episode once per step of w (its widest window) that [start - window, end) touches:
    -- bios join it on their Q's step, not on the device alone (every bio of a device against
    -- every episode of it). Any key that never decreases with time works, so // needs no care
    -- below zero.
    SELECT e.*, t.k
    FROM _episode_spans e, step,
         range((e.start_ns - e.window_ns) // step.w, (e.end_ns - 1) // step.w + 1) AS t(k)
)
SELECT i, comm, n FROM (
    SELECT e.i, coalesce(b.comm, '?') AS comm, count(*) AS n
    FROM keyed e JOIN (SELECT b.*, b.q_time_ns // step.w AS k FROM bios b, step) b
      ON b.dev_major = e.dev_major AND b.dev_minor = e.dev_minor AND b.k = e.k
     AND b.q_time_ns >= e.start_ns - e.window_ns AND b.q_time_ns < e.end_ns
    GROUP BY ALL
) QUALIFY row_number() OVER (PARTITION BY i ORDER BY n DESC, comm) <= 5
ORDER BY i, n DESC, comm
"""


def _in_flight(
    con: duckdb.DuckDBPyConnection, episodes: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    if not episodes:
        return []
    keys = ("dev_major", "dev_minor", "start_ns", "end_ns", "window_ns")
    spans = pa.table(
        {"i": list(range(len(episodes)))} | {k: [int(e[k]) for e in episodes] for k in keys}
    )
    with con.cursor() as cur:
        cur.register("_episode_spans", spans)
        counts = {row[0]: row[1:] for row in cur.execute(_IN_FLIGHT).fetchall()}
        procs: dict[int, list[str]] = {}
        for i, comm, n in cur.execute(_TOP_PROCESSES).fetchall():
            procs.setdefault(i, []).append(f"{comm} ({n})")
    out = []
    for i in range(len(episodes)):
        total, wb, jbd2, sectors, wb_sectors = counts[i]
        out.append(
            {
                "ios_in_flight": int(total),
                "writeback_ios": int(wb),
                # writeback bios are large: their share of the bytes in flight says more than
                # their count
                "writeback_share": int(wb_sectors) / int(sectors) if sectors else 0.0,
                "jbd2_ios": int(jbd2),
                "processes": ", ".join(procs.get(i, [])),
            }
        )
    return out


def _cause(e: dict[str, Any], source: str) -> tuple[str, str]:
    """The cause and the evidence for it, from the numbers alone."""
    share, n = e["writeback_share"], e["ios_in_flight"]
    by_bytes = share >= WRITEBACK_BYTES_SHARE
    by_overlap = e["writeback_events"] > 0
    journal = n > 0 and e["jbd2_ios"] / n >= JOURNAL_IO_SHARE
    items = "work item" if source == "writeback log" else "burst of flusher writes"
    met = (
        f"{e['writeback_events']} writeback {items}{'s' * (e['writeback_events'] != 1)} overlapped"
    )
    writes = (
        f"writeback writes: {e['writeback_ios']:,} of {n:,} bios in flight, "
        f"{format_share(share)} of their bytes"
    )
    lag = e["writeback_lag_ns"]
    after = f"peak {format_s(lag)} after the writeback wakeup began" if lag is not None else ""
    parts = []
    if by_bytes or by_overlap:
        parts = [writes, met] + ([after] if after else [])
    if journal:
        parts.append(f"journal (jbd2) bios: {e['jbd2_ios']:,} of {n:,} in flight")
    causes = [c for c, hit in (("writeback", by_bytes or by_overlap), ("jbd2", journal)) if hit]
    if causes:
        return "+".join(causes), "; ".join(parts)
    quiet = (
        f"no writeback overlapped; {writes} (under {format_share(WRITEBACK_BYTES_SHARE)}); "
        f"journal bios: {e['jbd2_ios']:,}"
    )
    return "unexplained", quiet
