"""The bursty series whose periods blkscope looks for, each defined once, and what is found in
them: their bursts, the periodogram they were searched in, and their significant periods."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from blkscope.analyze.coincidence import coincident_period
from blkscope.analyze.correlation import device_spans
from blkscope.analyze.periodicity import (
    Period,
    burst_spans,
    find_periods,
    matching_knobs,
    spectrum,
)
from blkscope.analyze.views import query_table
from blkscope.schemas import BURSTS, PERIODOGRAM, PERIODS

# Series of bios by who queued them (the macros of sql/macros/op_class.sql), at their Q time.
IO_SERIES = {
    "kworker_writes": "is_writeback_write(comm, op, flags, sector)",
    "jbd2_writes": "is_journal(comm) AND op_class(op, flags, sector) = 'write'",
}
BURST_GAP_S = 0.5  # events closer than this are one burst ...
EPISODE_GAP_S = 1.5  # ... but episodes are one point each, and neighbours are one event
# The knobs a series' period may be named after: the flusher's timers start periodic writeback
# only, the journal's timer only its commits. A period of flusher bursts that `sync` or
# background writeback started is no knob's doing, whatever its length.
FLUSHER_KNOBS = ("vm.dirty_writeback_centisecs", "vm.dirty_expire_centisecs")
JOURNAL_KNOBS = ("jbd2 commit interval",)
TIMER_REASON = "periodic"  # the writeback reason of work the flusher's timer starts


def burst_gap_s(series: str) -> float:
    """The gap that separates two bursts of a series."""
    return EPISODE_GAP_S if series == "episodes" else BURST_GAP_S


@dataclass
class PeriodTables:
    """The periods, periodogram and bursts tables."""

    periods: pa.Table
    periodogram: pa.Table
    bursts: pa.Table


def _per_device(rows: dict[str, Any], column: str) -> dict[tuple[int, int], np.ndarray]:
    """A column of rows sorted by device, cut per device."""
    major = np.asarray(rows["dev_major"], dtype=np.int64)
    minor = np.asarray(rows["dev_minor"], dtype=np.int64)
    values = np.asarray(rows[column], dtype=np.int64)
    cut = np.flatnonzero((major[1:] != major[:-1]) | (minor[1:] != minor[:-1])) + 1
    starts = np.concatenate(([0], cut)) if len(values) else np.zeros(0, dtype=np.int64)
    ends = np.concatenate((cut, [len(values)])) if len(values) else starts
    return {
        (int(major[a]), int(minor[a])): values[a:b]
        for a, b in zip(starts.tolist(), ends.tolist(), strict=True)
    }


def io_series_times(con: duckdb.DuckDBPyConnection, name: str) -> dict[tuple[int, int], np.ndarray]:
    """Per device, the sorted Q times of its bios in one IO series (one query for every device:
    one per device cost 2.5 ms each, 15 s on a trace of 3,000 devices)."""
    rows = con.execute(
        f"SELECT dev_major, dev_minor, q_time_ns FROM bios WHERE {IO_SERIES[name]} "
        "ORDER BY dev_major, dev_minor, q_time_ns"
    ).fetchnumpy()
    return _per_device(rows, "q_time_ns")


def dataset_periods(
    con: duckdb.DuckDBPyConnection,
    episodes: pa.Table,
    knobs: dict[str, float],
    writeback_log: bool,
) -> PeriodTables:
    """Periods of writeback IO, journal IO, writeback events and episodes per device, and of
    each user series' slowest samples."""
    periods: list[dict[str, Any]] = []
    grams: list[dict[str, Any]] = []
    bursts: list[dict[str, Any]] = []
    devices = [(*device, *span) for device, span in device_spans(con).items()]
    peaks: dict[tuple[int, int], list[int]] = {}
    for p in episodes.select(["dev_major", "dev_minor", "peak_ns"]).to_pylist():
        peaks.setdefault((p["dev_major"], p["dev_minor"]), []).append(p["peak_ns"])
    io = {name: io_series_times(con, name) for name in IO_SERIES}
    none = np.zeros(0, dtype=np.int64)
    all_windows = _writeback_windows(con) if writeback_log else {}
    for major, minor, t0, t1 in devices:
        device = (int(major), int(minor))
        series = {name: io[name].get(device, none) for name in IO_SERIES}
        series["episodes"] = np.array(sorted(peaks.get(device, [])), dtype=np.int64)
        windows = all_windows.get(device, (none, none)) if writeback_log else None
        if windows is not None:
            series["writeback_events"] = windows[1]
        found = {
            name: find_periods(times, (t0, t1), knobs=knobs, burst_gap_s=burst_gap_s(name))
            for name, times in series.items()
        }
        method = dict.fromkeys(found, "periodogram")
        if windows is not None and found.get("writeback_events") and not found["kworker_writes"]:
            reference = found["writeback_events"][0]
            locked = coincident_period(series["kworker_writes"], windows, reference, (t0, t1))
            if locked is not None:
                found["kworker_writes"], method["kworker_writes"] = [locked], "writeback_events"
        timer = _timer_started(con, device, series, writeback_log)
        allowed = {
            "kworker_writes": FLUSHER_KNOBS if timer["kworker_writes"] else (),
            "writeback_events": FLUSHER_KNOBS if timer["writeback_events"] else (),
            "jbd2_writes": JOURNAL_KNOBS,
        }
        rows = []
        for name, times in series.items():
            rows += [
                _period_row(p, name, _only(knobs, allowed.get(name)), device, method[name])
                for p in found[name]
            ]
            grams += _spectrum_rows(times, (t0, t1), name, device)
            bursts += _burst_rows(times, name, device)
        periods += _knobs_through_causes(rows)
    named = [r for r in periods if r["knobs"] and r["series"] != "episodes"]
    for name, times, span in _user_series(con):
        found_user = find_periods(times, span, knobs=knobs, burst_gap_s=burst_gap_s(name))
        periods += _knobs_through_causes(
            [_period_row(p, name, knobs, None) for p in found_user], named
        )
        grams += _spectrum_rows(times, span, name, None)
        bursts += _burst_rows(times, name, None)
    return PeriodTables(
        pa.Table.from_pylist(periods, schema=PERIODS),
        pa.Table.from_pylist(grams, schema=PERIODOGRAM),
        pa.Table.from_pylist(bursts, schema=BURSTS),
    )


def _only(knobs: dict[str, float], names: tuple[str, ...] | None) -> dict[str, float]:
    """The knobs a series may be named after (all of them for series that are not the
    writeback's or the journal's own)."""
    return knobs if names is None else {k: v for k, v in knobs.items() if k in names}


def _timer_started(
    con: duckdb.DuckDBPyConnection,
    device: tuple[int, int],
    series: dict[str, np.ndarray],
    writeback_log: bool,
) -> dict[str, bool]:
    """Whether most bursts of the flusher's series were started by its timer (writeback reason
    'periodic'), from the writeback log's work items. Without a log the reason is unknown and
    the interval alone names the knob, as the periods table's doc says."""
    if not writeback_log:
        return {"kworker_writes": True, "writeback_events": True}
    items = query_table(
        con,
        "SELECT start_ns, end_ns, reason FROM writeback_events "
        f"WHERE dev_major = {device[0]} AND dev_minor = {device[1]} ORDER BY start_ns",
    )
    lo, hi = items["start_ns"].to_numpy(), items["end_ns"].to_numpy()
    periodic = items["reason"].to_numpy(zero_copy_only=False) == TIMER_REASON
    out = {}
    for name in ("kworker_writes", "writeback_events"):
        starts, ends = burst_spans(series.get(name, np.empty(0, np.int64)), BURST_GAP_S)
        by_timer = [
            bool(periodic[(lo <= b + int(BURST_GAP_S * 1e9)) & (hi >= a)].any())
            for a, b in zip(starts.tolist(), ends.tolist(), strict=True)
        ]
        out[name] = bool(by_timer) and sum(by_timer) * 2 > len(by_timer)
    return out


def _knobs_through_causes(
    rows: list[dict[str, Any]], named: list[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """Episodes and user series are no knob's doing by themselves: they take the knobs of a
    writeback or journal period of the same length (within 5%) that was named after one, and
    none otherwise."""
    named = [r for r in rows if r["knobs"] and r["series"] != "episodes"] + (named or [])
    for row in rows:
        if row["series"] == "episodes" or row["series"].startswith("user:"):
            same = [
                r["knobs"]
                for r in named
                if abs(r["period_ns"] - row["period_ns"]) <= 0.05 * r["period_ns"]
            ]
            row["knobs"] = ", ".join(dict.fromkeys(k for ks in same for k in ks.split(", ")))
    return rows


def _writeback_windows(
    con: duckdb.DuckDBPyConnection,
) -> dict[tuple[int, int], tuple[np.ndarray, np.ndarray]]:
    """Per device, its writeback windows' starts and ends, in the order of their ends."""
    wb = con.execute(
        "SELECT dev_major, dev_minor, start_ns, end_ns FROM internal._writeback_windows "
        "ORDER BY dev_major, dev_minor, end_ns, start_ns"
    ).fetchnumpy()
    starts, ends = _per_device(wb, "start_ns"), _per_device(wb, "end_ns")
    return {dev: (starts[dev], ends[dev]) for dev in ends}


def _user_series(con: duckdb.DuckDBPyConnection) -> list[tuple[str, np.ndarray, tuple[int, int]]]:
    """(user:<name>, times of its slowest 1% of samples, its span) per user series."""
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
    out = []
    for name in dict.fromkeys(names.tolist()):
        sel = names == name
        slow = times[sel][values[sel] >= np.quantile(values[sel], 0.99)]
        out.append((f"user:{name}", slow, (int(times[sel].min()), int(times[sel].max()))))
    return out


def user_series_periods(
    con: duckdb.DuckDBPyConnection, knobs: dict[str, float]
) -> list[dict[str, Any]]:
    """Rows of the periods table for each user series' slowest 1% of samples."""
    rows = []
    for name, times, span in _user_series(con):
        found = find_periods(times, span, knobs=knobs, burst_gap_s=burst_gap_s(name))
        rows += [_period_row(p, name, knobs, None) for p in found]
    return rows


def _spectrum_rows(
    times: np.ndarray, span: tuple[int, int], series: str, device: tuple[int, int] | None
) -> list[dict[str, Any]]:
    period_s, z2 = spectrum(times, span, burst_gap_s=burst_gap_s(series))
    major, minor = device if device else (None, None)
    return [
        {"dev_major": major, "dev_minor": minor, "series": series, "period_ns": int(p * 1e9),
         "z2": float(z)}
        for p, z in zip(period_s.tolist(), z2.tolist(), strict=True)
    ]  # fmt: skip


def _burst_rows(
    times: np.ndarray, series: str, device: tuple[int, int] | None
) -> list[dict[str, Any]]:
    starts, ends = burst_spans(times, burst_gap_s(series))
    t = np.sort(times)
    counts = np.searchsorted(t, ends, side="right") - np.searchsorted(t, starts, side="left")
    major, minor = device if device else (None, None)
    return [
        {"dev_major": major, "dev_minor": minor, "series": series, "start_ns": int(a),
         "end_ns": int(b), "events": int(n)}
        for a, b, n in zip(starts.tolist(), ends.tolist(), counts.tolist(), strict=True)
    ]  # fmt: skip


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
