"""The evidence an episode's cause is judged on: whose IO was slow (the victim) and where its
time went, stage by stage against its normal level, and what else was in flight meanwhile.

The victim's slow items are the samples (of an application's latency log) or the bios (of a
block-level spike) that crossed the spike threshold inside the episode. Each is an interval of
time. Everything else is measured over those intervals, not over the whole episode window: what
was in flight while the victim waited is the direct evidence, and a 1 s window dilutes a
200 ms burst five times.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import duckdb
import numpy as np

from blkscope.analyze.victims import SAMPLE_NS, SeriesProcess
from blkscope.analyze.views import query_table
from blkscope.units import format_bytes

# The slowest items an episode is judged on (a spike of a busy device has thousands).
MAX_ITEMS = 64
# Where a victim's latency can go: before its IO reached the block layer (throttling, page
# cache, CPU), queued in the block layer before dispatch (plugging, the IO scheduler), at the
# device (dispatch to completion), and after its own IO completed (waiting on someone else's,
# e.g. a journal commit). Block-level items have only the middle two.
STAGES = ("above", "queued", "device", "after")
STAGE_WORDS = {
    "above": "before its IO reached the block layer",
    "queued": "queued in the block layer before dispatch",
    "device": "at the device (dispatch to completion)",
    "after": "after its own IO completed",
}


@dataclass
class Load:
    """One source of IO in flight while the victim waited: the writeback, the journal, or one
    process. Bytes and IOs are time averages over the victim's slow items; `normal_*` the same
    over the whole trace."""

    kind: str  # 'writeback', 'journal' or 'process'
    label: str  # what the page calls it, e.g. "fio pid 812"
    pid: int | None
    bytes: float
    ios: float
    normal_bytes: float
    normal_ios: float
    ops: str = ""  # e.g. "read 4 KiB x 2,310"


@dataclass
class Evidence:
    """Everything the cause of one episode is decided from."""

    victim: str  # e.g. "user:prober (python3 pid 12476)" or "q2c of 12 bios"
    victim_pid: int | None
    items: int  # slow items judged
    worst_ns: int
    # per stage: summed time over the slow items, and the normal time of one item
    stage_ns: dict[str, int] = field(default_factory=dict)
    normal_ns: dict[str, int] = field(default_factory=dict)
    decomposed: bool = True  # False when the victim's own IO could not be found
    loads: list[Load] = field(default_factory=list)
    victim_bytes: float = 0.0  # the victim's own IO in flight (time average)
    victim_ios: float = 0.0
    # device busy while the victim waited: share of its queued time some IO was at the device,
    # and share of its device time another process's IO was at the device too
    busy_while_queued: float | None = None
    shared_while_at_device: float | None = None
    throttle_messages: int = 0
    throttle_sample: str = ""
    pages_written: int | None = None  # by writeback work items during the episode
    writeback_items: int = 0
    writeback_reasons: str = ""
    journal_forced_by: str = ""

    def excess(self) -> dict[str, float]:
        """Per stage, the time the slow items spent there beyond the normal, in ns."""
        n = self.items
        return {s: max(0.0, self.stage_ns.get(s, 0) - n * self.normal_ns.get(s, 0)) for s in STAGES}


def _intervals_of_samples(
    con: duckdb.DuckDBPyConnection, series: str, stamp: str | None
) -> str:
    a = "t_ns" if stamp != "end" else f"t_ns - ({SAMPLE_NS})::BIGINT"
    e = f"t_ns + ({SAMPLE_NS})::BIGINT" if stamp != "end" else "t_ns"
    return f"""
        SELECT t_ns, ({SAMPLE_NS})::BIGINT AS lat, {a} AS a, {e} AS e
        FROM series WHERE series = {_quote(series)} AND t_ns IS NOT NULL AND value >= 0
          AND unit IN ('ns', 'us', 'ms', 's')"""


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


_SAMPLE_STAGES = """
WITH s AS ({samples}), v AS (
    SELECT q_time_ns AS q, coalesce(d_time_ns, q_time_ns) AS d, c_time_ns AS c
    FROM bios WHERE pid = {pid} AND c_time_ns IS NOT NULL
), j AS (
    SELECT s.a, s.e, s.lat, s.t_ns, v.q, v.d, v.c
    FROM v ASOF JOIN s ON v.q >= s.a WHERE v.q <= s.e
), per AS (
    SELECT a, any_value(e) AS e, any_value(lat) AS lat, any_value(t_ns) AS t_ns,
           min(q) - a AS above, sum(d - q) AS queued, sum(c - d) AS device,
           greatest(any_value(e) - max(c), 0) AS after
    FROM j GROUP BY a
)
SELECT s.t_ns, s.lat, s.a, s.e, per.above, per.queued, per.device, per.after
FROM s LEFT JOIN per USING (a)
"""


def sample_stages(
    con: duckdb.DuckDBPyConnection, series: str, process: SeriesProcess | None
) -> dict[str, np.ndarray]:
    """Every sample of a user series as an interval [a, e] with its latency split into STAGES
    from its process's bios inside it (null stages when none is inside, or no process)."""
    samples = _intervals_of_samples(con, series, process.stamp if process else None)
    if process is None:
        t = query_table(con, samples)
        cols = {n: t[n].to_numpy(zero_copy_only=False) for n in t.column_names}
        for s in STAGES:
            cols[s] = np.full(t.num_rows, np.nan)
        return cols
    t = query_table(con, _SAMPLE_STAGES.format(samples=samples, pid=process.pid))
    out = {}
    for n in t.column_names:
        col = t[n]
        out[n] = col.to_numpy(zero_copy_only=False).astype(np.float64) if n in STAGES else (
            col.to_numpy(zero_copy_only=False)
        )
    return out


def _median(values: np.ndarray) -> int:
    v = values[~np.isnan(values)] if values.dtype.kind == "f" else values
    return int(np.median(v)) if len(v) else 0


def series_evidence(
    con: duckdb.DuckDBPyConnection,
    episode: dict[str, Any],
    series: str,
    threshold_ns: int,
    process: SeriesProcess | None,
    stages: dict[str, np.ndarray],
) -> Evidence:
    """The evidence of an episode whose victim is a user series' process."""
    t, lat = stages["t_ns"], stages["lat"]
    inside = (t >= episode["start_ns"]) & (t < episode["end_ns"]) & (lat > threshold_ns)
    order = np.flatnonzero(inside)
    order = order[np.argsort(-lat[order], kind="stable")][:MAX_ITEMS]
    victim = f"user:{series}" + (f" ({process.label})" if process else "")
    ev = Evidence(victim, process.pid if process else None, len(order), int(lat[order].max(initial=0)))
    decomposed = bool(process) and not np.isnan(stages["queued"][order]).any()
    ev.decomposed = decomposed
    for s in STAGES:
        vals = stages[s]
        ev.stage_ns[s] = int(np.nansum(vals[order])) if decomposed else 0
        ev.normal_ns[s] = _median(vals) if decomposed else 0
    if not decomposed:  # the whole latency, unsplit, counts as above the block layer
        ev.stage_ns["above"] = int(lat[order].sum())
        ev.normal_ns["above"] = _median(lat)
    _in_flight(con, episode, ev, stages["a"][order], stages["e"][order])
    return ev


def bio_evidence(
    con: duckdb.DuckDBPyConnection, episode: dict[str, Any], metric: str, threshold_ns: int
) -> Evidence:
    """The evidence of an episode whose victim is the device's slow bios (a q2c or d2c spike)."""
    latency = "d2c_ns" if metric == "d2c" else "q2c_ns"
    t = query_table(
        con,
        f"""
        SELECT q_time_ns AS a, c_time_ns AS e, {latency} AS lat,
               coalesce(d_time_ns, q_time_ns) - q_time_ns AS queued, c_time_ns - coalesce(
                   d_time_ns, q_time_ns) AS device, pid
        FROM bios
        WHERE dev_major = ? AND dev_minor = ? AND c_time_ns >= ? AND c_time_ns < ?
          AND {latency} > ?
        ORDER BY {latency} DESC, q_time_ns LIMIT {MAX_ITEMS}""",
        [episode["dev_major"], episode["dev_minor"], episode["start_ns"], episode["end_ns"],
         threshold_ns],
    )
    cols = {n: t[n].to_numpy(zero_copy_only=False) for n in t.column_names}
    n = t.num_rows
    ev = Evidence(f"{metric} of {n} bio{'s' * (n != 1)}", None, n, int(cols["lat"].max(initial=0)))
    normal = dict(
        con.execute(
            """SELECT stage, p50_ns FROM stage_stats WHERE level = 'device' AND dev_major = ?
               AND dev_minor = ? AND stage IN ('Q2C', 'D2C')""",
            [episode["dev_major"], episode["dev_minor"]],
        ).fetchall()
    )
    ev.stage_ns = {"above": 0, "queued": int(cols["queued"].sum()), "device": int(cols["device"].sum()), "after": 0}
    d2c = int(normal.get("D2C") or 0)
    ev.normal_ns = {"above": 0, "queued": max(0, int(normal.get("Q2C") or 0) - d2c), "device": d2c, "after": 0}
    _in_flight(con, episode, ev, cols["a"], cols["e"])
    return ev


_WINDOW_BIOS = """
SELECT pid, coalesce(comm, '?') AS comm, op, flags, q_time_ns AS q,
       coalesce(d_time_ns, q_time_ns) AS d,
       coalesce(c_time_ns, (SELECT max(time_ns) FROM events)) AS c,
       coalesce(nsectors, 0)::BIGINT * 512 AS bytes,
       is_writeback_write(comm, op, flags, sector) AS writeback,
       is_journal(comm) AS journal
FROM bios
WHERE dev_major = ? AND dev_minor = ? AND q_time_ns < ? AND coalesce(c_time_ns, ?) > ?
"""
_NORMAL_LOADS = """
SELECT CASE WHEN is_writeback_write(comm, op, flags, sector) THEN 'writeback'
            WHEN is_journal(comm) THEN 'journal' ELSE 'process' END AS kind,
       CASE WHEN is_writeback_write(comm, op, flags, sector) OR is_journal(comm) THEN -1
            ELSE pid END AS pid,
       sum((c_time_ns - q_time_ns) * coalesce(nsectors, 0)::BIGINT * 512)::DOUBLE AS byte_ns,
       sum(c_time_ns - q_time_ns)::DOUBLE AS io_ns
FROM bios
WHERE dev_major = ? AND dev_minor = ? AND c_time_ns IS NOT NULL
GROUP BY ALL
"""


def _overlap(qs: np.ndarray, cs: np.ndarray, a: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Matrix [item, bio] of the share of each item's interval each bio was in flight."""
    lo = np.maximum(qs[None, :], a[:, None])
    hi = np.minimum(cs[None, :], e[:, None])
    span = np.maximum(e - a, 1)[:, None]
    return np.clip(hi - lo, 0, None) / span


def _in_flight(
    con: duckdb.DuckDBPyConnection,
    episode: dict[str, Any],
    ev: Evidence,
    a: np.ndarray,
    e: np.ndarray,
) -> None:
    """Fill in what was in flight on the device over the items [a, e], against the normal."""
    device = (episode["dev_major"], episode["dev_minor"])
    if not len(a):
        return
    a, e = a.astype(np.int64), e.astype(np.int64)
    t = query_table(con, _WINDOW_BIOS, [*device, int(e.max()), int(e.max()) + 1, int(a.min())])
    cols = {n: t[n].to_numpy(zero_copy_only=False) for n in t.column_names}
    q, d, c, size = (cols[k].astype(np.int64) for k in ("q", "d", "c", "bytes"))
    share = _overlap(q, c, a, e)  # [items, bios]
    per_bio = share.mean(axis=0)  # time-average over the items of each bio being in flight
    pid = cols["pid"]
    victim = (pid == ev.victim_pid) if ev.victim_pid is not None else np.zeros(len(q), bool)
    wb = cols["writeback"].astype(bool) & ~victim
    jn = cols["journal"].astype(bool) & ~victim & ~wb
    other = ~victim & ~wb & ~jn
    ev.victim_bytes = float((per_bio * size)[victim].sum())
    ev.victim_ios = float(per_bio[victim].sum())
    normal = _normal_loads(con, device)
    loads = []
    for kind, mask in (("writeback", wb), ("journal", jn)):
        if mask.any():
            nb, ni = normal.get((kind, -1), (0.0, 0.0))
            loads.append(Load(kind, kind, None, float((per_bio * size)[mask].sum()),
                              float(per_bio[mask].sum()), nb, ni, _ops(cols, mask)))
    for p in np.unique(pid[other]):
        mask = other & (pid == p)
        ios = float(per_bio[mask].sum())
        if ios <= 0:
            continue
        comm = str(cols["comm"][mask][0])
        nb, ni = normal.get(("process", int(p)), (0.0, 0.0))
        loads.append(Load("process", f"{comm} pid {int(p)}", int(p), float((per_bio * size)[mask].sum()), ios, nb, ni, _ops(cols, mask)))
    ev.loads = sorted(loads, key=lambda x: (-x.bytes, -x.ios, x.label))
    ev.busy_while_queued, ev.shared_while_at_device = _device_busy(q, d, c, victim, ev, a, e)
    _episode_context(con, episode, ev)


def _normal_loads(
    con: duckdb.DuckDBPyConnection, device: tuple[int, int]
) -> dict[tuple[str, int], tuple[float, float]]:
    """Per load, its bytes and IOs in flight averaged over the whole trace (Little's law: the
    sum over its bios of size x time in flight, over the trace's span)."""
    t0, t1 = con.execute(
        "SELECT min(time_ns), max(time_ns) FROM events WHERE dev_major = ? AND dev_minor = ?",
        list(device),
    ).fetchall()[0]
    span = max(1, (t1 or 0) - (t0 or 0))
    return {
        (kind, int(pid)): (byte_ns / span, io_ns / span)
        for kind, pid, byte_ns, io_ns in con.execute(_NORMAL_LOADS, list(device)).fetchall()
        if pid is not None
    }


def _ops(cols: dict[str, np.ndarray], mask: np.ndarray) -> str:
    """'write 30 bios of 8 MiB, read 2 bios of 4 KiB': the load's bios by op, with their size
    (or their total and range when sizes differ: a median would hide one big bio)."""
    parts = []
    ops, size = cols["op"][mask], cols["bytes"][mask]
    for op in dict.fromkeys(ops.tolist()):
        sel = size[ops == op]
        word = {"R": "read", "W": "write", "D": "discard", "N": "flush"}.get(op, str(op))
        n = f"{word} {len(sel):,} bio{'s' * (len(sel) != 1)}"
        lo, hi = int(sel.min()), int(sel.max())
        if hi == 0:
            parts.append(n)
        elif lo == hi:
            parts.append(f"{n} of {format_bytes(hi)}")
        else:
            parts.append(
                f"{n}, {format_bytes(int(sel.sum()))} ({format_bytes(lo)} to {format_bytes(hi)})"
            )
    return ", ".join(parts)


def _device_busy(
    q: np.ndarray, d: np.ndarray, c: np.ndarray, victim: np.ndarray, ev: Evidence,
    a: np.ndarray, e: np.ndarray
) -> tuple[float | None, float | None]:
    """(share of the victim's queued time during which some IO was at the device, share of its
    device time during which another process's IO was at the device too). The first tells a
    scheduler holding IO back from a device kept busy by others; the second a slow device from
    a shared one."""
    if ev.victim_pid is None:
        return None, None
    mine = victim & (q >= a.min()) & (q <= e.max())
    others_at_device = _union(d[~victim], c[~victim])
    anyone_at_device = _union(d, c)
    queued = _coverage(anyone_at_device, q[mine], d[mine])
    shared = _coverage(others_at_device, d[mine], c[mine])
    return queued, shared


def _union(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Sorted disjoint [lo, hi] rows covering the given intervals."""
    keep = hi > lo
    lo, hi = lo[keep], hi[keep]
    if not len(lo):
        return np.empty((0, 2), np.int64)
    order = np.argsort(lo, kind="stable")
    lo, hi = lo[order], hi[order]
    reach = np.maximum.accumulate(hi)
    opens = np.concatenate(([True], lo[1:] > reach[:-1]))
    starts = lo[opens]
    ends = np.maximum.reduceat(hi, np.flatnonzero(opens))
    return np.stack([starts, ends], axis=1)


def _coverage(union: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> float | None:
    """Share of the total length of [lo, hi] intervals that the disjoint union covers."""
    total = float(np.clip(hi - lo, 0, None).sum())
    if total <= 0:
        return None
    if not len(union):
        return 0.0
    # covered length of [x, y]: the union's cumulative length up to y minus up to x
    starts, ends = union[:, 0], union[:, 1]
    cum = np.concatenate(([0], np.cumsum(ends - starts)))

    def upto(x: np.ndarray) -> np.ndarray:
        k = np.searchsorted(starts, x, side="right")  # intervals starting at or before x
        inside = np.clip(x - starts[np.maximum(k - 1, 0)], 0, None)
        part = np.minimum(inside, (ends - starts)[np.maximum(k - 1, 0)])
        return np.where(k > 0, cum[np.maximum(k - 1, 0)] + part, 0)

    covered = float(np.clip(upto(hi) - upto(lo), 0, None).sum())
    return covered / total


def _episode_context(con: duckdb.DuckDBPyConnection, episode: dict[str, Any], ev: Evidence) -> None:
    """Throttling messages, writeback work and the journal's trigger around the episode."""
    device = [episode["dev_major"], episode["dev_minor"]]
    lo, hi = episode["start_ns"] - episode["window_ns"], episode["end_ns"]
    n, sample = con.execute(
        """SELECT count(*), any_value(message) FROM events
           WHERE dev_major = ? AND dev_minor = ? AND time_ns >= ? AND time_ns < ?
             AND message IS NOT NULL AND (starts_with(message, 'throtl') OR message LIKE '%iocost%'
                                          OR starts_with(message, 'iocg'))""",
        [*device, lo, hi],
    ).fetchall()[0]
    ev.throttle_messages, ev.throttle_sample = int(n), sample or ""
    try:
        items, pages, reasons = con.execute(
            """SELECT count(*), sum(pages_written), string_agg(DISTINCT reason, ', ' ORDER BY reason)
               FROM writeback_events WHERE dev_major = ? AND dev_minor = ?
                 AND start_ns < ? AND end_ns > ?""",
            [*device, hi, lo],
        ).fetchall()[0]
        ev.writeback_items, ev.writeback_reasons = int(items), reasons or ""
        ev.pages_written = None if pages is None else int(pages)
    except duckdb.CatalogException:  # no writeback log
        pass
