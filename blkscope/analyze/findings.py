"""Latency spikes per device (robust baseline) with attribution, and periods of bursty series."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from blkscope.analyze.coincidence import coincident_period
from blkscope.analyze.correlation import annotate_spikes, writeback_intervals
from blkscope.analyze.periodicity import KNOBS, Period, find_periods, matching_knobs
from blkscope.analyze.views import connect, query_table
from blkscope.ingest.dataset import read_manifest
from blkscope.schemas import PERIODS, SPIKES

MAD_TO_SIGMA = 1.4826


def compute_findings(
    dataset: Path,
    *,
    window_ns: int = 1_000_000_000,
    metric: str = "q2c",
    k: float = 5.0,
    threshold_ns: int | None = None,
    min_ios: int = 5,
) -> tuple[pa.Table, pa.Table]:
    """Return (spikes, periods) for an analysed dataset."""
    con = connect(dataset)
    spikes = find_spikes(
        con, window_ns=window_ns, metric=metric, k=k, threshold_ns=threshold_ns, min_ios=min_ios
    )
    periods = find_dataset_periods(con, spikes, knobs_from_manifest(read_manifest(dataset)))
    return spikes, periods


def has_writeback_log(con: duckdb.DuckDBPyConnection) -> bool:
    """True when the dataset holds writeback.bt events placed on the trace timeline."""
    try:
        row = con.execute("SELECT count(t_ns) FROM writeback").fetchall()[0]
    except duckdb.Error:
        return False
    return bool(row and row[0])


def knobs_from_manifest(manifest: dict[str, Any]) -> dict[str, float]:
    """Knob intervals in seconds: the capture's sysctls when recorded, else kernel defaults."""
    knobs = dict(KNOBS)
    sysctl = manifest.get("capture", {}).get("sysctl", {})
    for name in ("vm.dirty_writeback_centisecs", "vm.dirty_expire_centisecs"):
        if str(sysctl.get(name, "")).strip().isdigit():
            knobs[name] = int(sysctl[name]) / 100
    return knobs


def find_spikes(
    con: duckdb.DuckDBPyConnection,
    *,
    window_ns: int,
    metric: str,
    k: float,
    threshold_ns: int | None,
    min_ios: int,
) -> pa.Table:
    """Windows whose p99 exceeds median + k*MAD of all windows (or threshold_ns), merged, per
    device; then the same for every user series (an application's own latency log)."""
    con.execute(f"SET VARIABLE blkscope_spike_window_ns = {int(window_ns)}")
    con.execute(f"SET VARIABLE blkscope_spike_metric = '{'d2c' if metric == 'd2c' else 'q2c'}'")
    windows = query_table(con, "SELECT * FROM _spike_windows ORDER BY dev_major, dev_minor, win")
    rows: list[dict[str, Any]] = []
    for (major, minor), w in _by_device(windows):
        for row in _abnormal(w, window_ns, k, threshold_ns, min_ios):
            row.update(dev_major=major, dev_minor=minor, metric=metric)
            rows.append(row)
    for name, w in _user_series_windows(con):
        for row in _abnormal(w, window_ns, k, threshold_ns, min_ios):
            major, minor = _busiest_device(con, row["start_ns"], row["end_ns"])
            row.update(dev_major=major, dev_minor=minor, metric=f"user:{name}")
            rows.append(row)
    for row in rows:
        row.update(
            _attribution(
                con, row["dev_major"], row["dev_minor"], row["start_ns"], row["end_ns"], window_ns
            )
        )
    for device_rank, row in _numbered(rows):
        row["spike_id"] = device_rank
    spikes = pa.Table.from_pylist(rows, schema=SPIKES)
    return annotate_spikes(spikes, writeback_intervals(con), has_writeback_log(con))


def _abnormal(
    w: dict[str, np.ndarray], window_ns: int, k: float, threshold_ns: int | None, min_ios: int
) -> list[dict[str, Any]]:
    """Runs of consecutive windows whose p99 is abnormal, as partial spike rows."""
    busy = w["ios"] >= min_ios
    if not busy.any():
        return []
    p99 = w["p99_ns"].astype(np.float64)
    median = float(np.median(p99[busy]))
    mad = float(np.median(np.abs(p99[busy] - median)))
    limit = threshold_ns or int(max(median + k * MAD_TO_SIGMA * mad, 2 * median))
    out = []
    for first, last in _runs(w["win"], busy & (p99 > limit)):
        sel = slice(first, last + 1)
        worst = first + int(np.argmax(w["max_ns"][sel]))
        out.append(
            {
                "window_ns": window_ns,
                "start_ns": int(w["win"][first]) * window_ns,
                "end_ns": (int(w["win"][last]) + 1) * window_ns,
                "peak_ns": int(w["peak_ns"][worst]),
                "peak_latency_ns": int(w["max_ns"][worst]),
                "p99_ns": int(p99[sel].max()),
                "baseline_p99_ns": int(median),
                "threshold_ns": limit,
                "ios": int(w["ios"][sel].sum()),
            }
        )
    return out


def _user_series_windows(con: duckdb.DuckDBPyConnection) -> list[tuple[str, dict[str, np.ndarray]]]:
    try:
        t = query_table(con, "SELECT * FROM _series_windows ORDER BY series, win")
    except duckdb.Error:  # no user series placed on the trace timeline
        return []
    cols = {n: t[n].to_numpy(zero_copy_only=False) for n in t.column_names}
    return [
        (str(name), {n: v[cols["series"] == name] for n, v in cols.items()})
        for name in dict.fromkeys(cols["series"].tolist())
    ]


def _busiest_device(con: duckdb.DuckDBPyConnection, start: int, end: int) -> tuple[int, int]:
    """The traced device with the most bytes in flight in [start, end): where to look."""
    rows = con.execute(f"""
        SELECT dev_major, dev_minor FROM _inflight_by_process
        WHERE q_time_ns < {end} AND end_ns > {start}
        GROUP BY ALL ORDER BY sum(nsectors) DESC, 1, 2 LIMIT 1""").fetchall()
    row = (
        rows[0]
        if rows
        else con.execute("SELECT dev_major, dev_minor FROM events LIMIT 1").fetchall()[0]
    )
    return int(row[0]), int(row[1])


def _by_device(t: pa.Table) -> list[tuple[tuple[int, int], dict[str, np.ndarray]]]:
    cols = {n: t[n].to_numpy() for n in t.column_names}
    keys = (
        np.stack([cols["dev_major"], cols["dev_minor"]], axis=1) if t.num_rows else np.empty((0, 2))
    )
    out = []
    for key in sorted({(int(a), int(b)) for a, b in keys}):
        m = (cols["dev_major"] == key[0]) & (cols["dev_minor"] == key[1])
        out.append((key, {n: v[m] for n, v in cols.items()}))
    return out


def _runs(win: np.ndarray, flag: np.ndarray) -> list[tuple[int, int]]:
    """Index ranges of flagged windows that follow each other without a gap."""
    runs: list[tuple[int, int]] = []
    for i in np.flatnonzero(flag).tolist():
        if runs and runs[-1][1] == i - 1 and win[i] == win[i - 1] + 1:
            runs[-1] = (runs[-1][0], i)
        else:
            runs.append((i, i))
    return runs


def _numbered(rows: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    seen: dict[tuple[int, int], int] = {}
    out = []
    for row in rows:
        key = (row["dev_major"], row["dev_minor"])
        seen[key] = seen.get(key, 0) + 1
        out.append((seen[key], row))
    return out


def _attribution(
    con: duckdb.DuckDBPyConnection, major: int, minor: int, start: int, end: int, window_ns: int
) -> dict[str, Any]:
    dev = f"dev_major = {major} AND dev_minor = {minor}"
    flight = con.execute(f"""
        SELECT count(*), count(*) FILTER (writeback), count(*) FILTER (journal),
               coalesce(sum(nsectors), 0), coalesce(sum(nsectors) FILTER (writeback), 0)
        FROM _inflight_by_process WHERE {dev} AND q_time_ns < {end} AND end_ns > {start}
    """).fetchall()[0] or (0, 0, 0, 0, 0)
    total, wb, jbd2, sectors, wb_sectors = (int(x) for x in flight)
    procs = con.execute(f"""
        SELECT coalesce(comm, '?'), count(*) n FROM bios
        WHERE {dev} AND q_time_ns >= {start - window_ns} AND q_time_ns < {end}
        GROUP BY 1 ORDER BY n DESC, 1 LIMIT 5
    """).fetchall()
    # Writeback bios are large: their share of the queued bytes says more than their count.
    share = wb_sectors / sectors if sectors else 0.0
    causes = [
        name
        for name, hit in (("writeback", share >= 0.25), ("jbd2", total > 0 and jbd2 / total >= 0.1))
        if hit
    ]
    return {
        "writeback_ios": wb,
        "writeback_share": share,
        "jbd2_ios": jbd2,
        "writeback_events": None,
        "writeback_lag_ns": None,
        "cause": "+".join(causes) or "unexplained",
        "processes": ", ".join(f"{c} ({n})" for c, n in procs),
    }


_SERIES = {
    "kworker_writes": "action = 'Q' AND op = 'W' AND (comm LIKE 'kworker/u%' OR comm LIKE 'flush-%')",
    "jbd2_writes": "action = 'Q' AND op = 'W' AND comm LIKE 'jbd2/%'",
}


def find_dataset_periods(
    con: duckdb.DuckDBPyConnection, spikes: pa.Table, knobs: dict[str, float]
) -> pa.Table:
    """Periods of writeback IO, journal IO and spikes, per device."""
    rows: list[dict[str, Any]] = []
    devices = con.execute(
        "SELECT dev_major, dev_minor, min(time_ns), max(time_ns) FROM events "
        "GROUP BY ALL ORDER BY 1, 2"
    ).fetchall()
    for major, minor, t0, t1 in devices:
        dev = f"dev_major = {major} AND dev_minor = {minor}"
        series = {
            name: query_table(con, f"SELECT time_ns FROM events WHERE {dev} AND {cond}")[
                "time_ns"
            ].to_numpy()
            for name, cond in _SERIES.items()
        }
        mask = [
            (a, b) == (major, minor)
            for a, b in zip(
                spikes["dev_major"].to_pylist(), spikes["dev_minor"].to_pylist(), strict=True
            )
        ]
        series["spikes"] = np.array(
            [p for p, m in zip(spikes["peak_ns"].to_pylist(), mask, strict=True) if m],
            dtype=np.int64,
        )
        windows = None
        if has_writeback_log(con):
            wb = query_table(
                con,  # one log, no doubles
                f"SELECT start_ns, end_ns FROM _writeback_windows WHERE {dev}",
            )
            windows = (wb["start_ns"].to_numpy(), wb["end_ns"].to_numpy())
            series["writeback_events"] = windows[1]
        found = {
            name: find_periods(times, (t0, t1), knobs=knobs, burst_gap_s=_gap(name))
            for name, times in series.items()
        }
        method = dict.fromkeys(found, "periodogram")
        if windows is not None and found.get("writeback_events") and not found["kworker_writes"]:
            reference = found["writeback_events"][0]
            locked = coincident_period(series["kworker_writes"], windows, reference, (t0, t1))
            if locked is not None:
                found["kworker_writes"], method["kworker_writes"] = [locked], "writeback_events"
        for name, periods in found.items():
            rows += [_period_row(p, name, knobs, (major, minor), method[name]) for p in periods]
    rows += user_series_periods(con, knobs)
    return pa.Table.from_pylist(rows, schema=PERIODS)


def user_series_periods(
    con: duckdb.DuckDBPyConnection, knobs: dict[str, float]
) -> list[dict[str, Any]]:
    """Periods of each user series' slowest 1% of samples (what its spikes are made of)."""
    try:
        t = query_table(
            con,
            "SELECT series, t_ns, value FROM series "
            "WHERE t_ns IS NOT NULL AND value IS NOT NULL ORDER BY series, t_ns",
        )
    except duckdb.Error:  # no user series placed on the trace timeline
        return []
    names = t["series"].to_numpy(zero_copy_only=False)
    times, values = t["t_ns"].to_numpy(), t["value"].to_numpy()
    rows = []
    for name in dict.fromkeys(names.tolist()):
        sel = names == name
        slow = times[sel][values[sel] >= np.quantile(values[sel], 0.99)]
        span = (int(times[sel].min()), int(times[sel].max()))
        periods = find_periods(slow, span, knobs=knobs, burst_gap_s=_gap(name))
        rows += [_period_row(p, f"user:{name}", knobs, None) for p in periods]
    return rows


def _gap(series: str) -> float:
    """Burst gap: spikes are one point per (merged) spike, IO series are runs of events."""
    return 1.5 if series == "spikes" else 0.5


def _period_row(
    p: Period,
    series: str,
    knobs: dict[str, float],
    device: tuple[int, int] | None,
    method: str = "periodogram",
) -> dict[str, Any]:
    """One row of the periods table."""
    return {
        "dev_major": device[0] if device else None,
        "dev_minor": device[1] if device else None,
        "series": series,
        "period_ns": int(p.period_s * 1e9),
        "strength": p.strength,
        "p_value": p.p_value,
        "phase_ns": int(p.phase_s * 1e9),
        "cycles": p.cycles,
        "bursts": p.bursts,
        "knobs": ", ".join(matching_knobs(p.period_s, knobs)),
        "method": method,
    }
