"""Latency episodes: the spikes of every metric on one device that share a time window, as one
row that says what was in flight and why it is attributed as it is."""

from __future__ import annotations

from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from blkscope.analyze.attribution import heavy_loads, judge
from blkscope.analyze.coincidence import overlap_chance
from blkscope.analyze.correlation import WritebackIntervals, device_spans, wakeups
from blkscope.analyze.evidence import (
    STAGES,
    Evidence,
    NormalLoads,
    SlowBios,
    SlowBiosKey,
    Victim,
    WindowBios,
    bio_evidence,
    measure_in_flight,
    sample_stages,
    series_evidence,
    slow_bios_key,
)
from blkscope.analyze.victims import SeriesProcess, series_processes
from blkscope.schemas import EPISODES
from blkscope.units import format_bytes, format_share


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
                "members": members,  # attribute_episodes judges the victim from them
            }
        )
    return out


def attribute_episodes(
    con: duckdb.DuckDBPyConnection, episodes: list[dict[str, Any]], wb: WritebackIntervals
) -> pa.Table:
    """The episodes table: each episode with its victim, where the victim's time went, what
    was in flight, the writeback it met, and its cause (attribution.judge) with the reason."""
    spans = device_spans(con)
    processes = series_processes(con)
    stages: dict[str, dict[str, np.ndarray]] = {}  # per user series, computed once
    normals = NormalLoads(con, [(e["start_ns"] - e["window_ns"], e["end_ns"]) for e in episodes])
    tops = _top_processes(con, episodes)
    slow = SlowBios(con, [key for e in episodes if (key := _slow_bios_key(e)) is not None])
    victims = [_victim(con, e, processes, stages, normals, slow) for e in episodes]
    windows = WindowBios(
        con, normals.trace_end, [v.window(e) for e, v in zip(episodes, victims, strict=True)]
    )
    for k, (e, victim, top) in enumerate(zip(episodes, victims, tops, strict=True)):
        device = (e["dev_major"], e["dev_minor"])
        ev = measure_in_flight(windows, k, e, victim, normals)
        verdict = judge(ev)
        e.update(_evidence_columns(ev), cause=verdict.cause, reason=verdict.reason, processes=top)
        iv = wb.of(device)
        reach = e["start_ns"] - e["window_ns"]  # IO queued a window back can still be in flight
        overlap = (iv[:, 0] < e["end_ns"]) & (iv[:, 1] > reach)
        before = wakeups(iv)
        before = before[before[:, 0] <= e["peak_ns"]]
        e["writeback_events"] = int(overlap.sum())
        e["writeback_lag_ns"] = int(e["peak_ns"] - before[-1, 0]) if len(before) else None
        e["writeback_chance"] = overlap_chance(
            iv[:, 0], iv[:, 1], e["end_ns"] - reach, spans.get(device, (0, 1))
        )
    return pa.Table.from_pylist(episodes, schema=EPISODES)


def _victim(
    con: duckdb.DuckDBPyConnection,
    e: dict[str, Any],
    processes: dict[str, SeriesProcess],
    stages: dict[str, dict[str, np.ndarray]],
    normals: NormalLoads,
    slow: SlowBios,
) -> Victim:
    """The victim is the application when one of its latency logs spiked (what users feel),
    else the device's slow bios; of several user series, the one with the slowest sample."""
    members: list[dict[str, Any]] = e.pop("members")
    user = [m for m in members if m["metric"].startswith("user:")]
    if user:
        worst = _worst(user)
        name = worst["metric"].removeprefix("user:")
        if name not in stages:
            stages[name] = sample_stages(con, name, processes.get(name))
        return series_evidence(e, name, worst["threshold_ns"], processes.get(name), stages[name])
    worst = _worst(members)
    return bio_evidence(e, worst["metric"], worst["threshold_ns"], normals, slow)


def _worst(members: list[dict[str, Any]]) -> dict[str, Any]:
    return max(members, key=lambda m: (m["peak_latency_ns"], m["metric"]))


def _slow_bios_key(e: dict[str, Any]) -> SlowBiosKey | None:
    """The key of the slow bios _evidence judges an episode on, when its victim is bios (no
    user series spiked in it)."""
    if any(m["metric"].startswith("user:") for m in e["members"]):
        return None
    worst = _worst(e["members"])
    return slow_bios_key(e, worst["metric"], worst["threshold_ns"])


def _evidence_columns(ev: Evidence) -> dict[str, Any]:
    """The episodes table's evidence columns of one episode."""
    total_bytes = ev.victim_bytes + sum(x.bytes for x in ev.loads)

    def share(b: float) -> float:
        return b / total_bytes if total_bytes else 0.0

    procs = [x for x in ev.loads if x.kind == "process"]
    row: dict[str, Any] = {
        "victim": ev.victim,
        "victim_pid": ev.victim_pid,
        "slow_ios": ev.items,
        "writeback_share": share(sum(x.bytes for x in ev.loads if x.kind == "writeback")),
        "journal_share": share(sum(x.bytes for x in ev.loads if x.kind == "journal")),
        "competing_share": share(procs[0].bytes) if procs else 0.0,
        "competing": "; ".join(
            f"{x.label} ({x.ops}), {format_share(share(x.bytes))} of the bytes {ev.load_basis}"
            for x in heavy_loads(ev)
            if x.kind == "process"
        ),
        "pages_written": ev.pages_written,
        "writeback_reasons": ev.writeback_reasons,
        "throttle_messages": ev.throttle_messages,
        "busy_while_queued": ev.busy_while_queued,
        "others_at_device": ev.others_at_device,
    }
    for s in STAGES:
        row[f"{s}_ns"] = ev.stage_ns[s] // ev.items if ev.decomposed and ev.items else None
        row[f"normal_{s}_ns"] = ev.normal_ns[s] if ev.decomposed else None
    return row


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
SELECT i, comm, pid, bytes, n FROM (
    SELECT e.i, coalesce(b.comm, '?') AS comm, b.pid, count(*) AS n,
           coalesce(sum(b.nsectors), 0)::BIGINT * 512 AS bytes
    FROM keyed e JOIN (SELECT b.*, b.q_time_ns // step.w AS k FROM bios b, step) b
      ON b.dev_major = e.dev_major AND b.dev_minor = e.dev_minor AND b.k = e.k
     AND b.q_time_ns >= e.start_ns - e.window_ns AND b.q_time_ns < e.end_ns
    GROUP BY ALL
) QUALIFY row_number() OVER (PARTITION BY i ORDER BY bytes DESC, n DESC, comm, pid) <= 5
ORDER BY i, bytes DESC, n DESC, comm, pid
"""


def _top_processes(con: duckdb.DuckDBPyConnection, episodes: list[dict[str, Any]]) -> list[str]:
    """Per episode, the processes that queued the most bytes in [start - window, end): 'comm
    pid N: bytes (IOs)', top 5. Bytes, not IO counts: one writer of 8 MiB bios hides among a
    prober's 4 KiB ones when counted."""
    if not episodes:
        return []
    keys = ("dev_major", "dev_minor", "start_ns", "end_ns", "window_ns")
    spans = pa.table(
        {"i": list(range(len(episodes)))} | {k: [int(e[k]) for e in episodes] for k in keys}
    )
    procs: dict[int, list[str]] = {}
    with con.cursor() as cur:
        cur.register("_episode_spans", spans)
        for i, comm, pid, size, n in cur.execute(_TOP_PROCESSES).fetchall():
            who = f"{comm} pid {pid}" if pid is not None else comm
            procs.setdefault(i, []).append(f"{who}: {format_bytes(size)} ({n:,} IOs)")
    return [", ".join(procs.get(i, [])) for i in range(len(episodes))]
