"""Latency spikes per device (robust baseline), grouped into episodes and attributed, and the
periods of bursty series: every findings table of a dataset."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from blkscope.analyze.correlation import writeback_intervals, writeback_verdicts
from blkscope.analyze.episodes import attribute_episodes, group_episodes
from blkscope.analyze.period_series import dataset_periods
from blkscope.analyze.periodicity import KNOBS
from blkscope.analyze.views import query_table
from blkscope.schemas import SPIKES

MAD_TO_SIGMA = 1.4826
# The most latencies the spike windows keep at once to find each window's p99 in one read
# (the slowest of each window, 1% of them and one more); beyond, they take two reads more.
MAX_SLOWEST_HELD = 2_000_000
# The spike windows at the default SpikeOptions, when `blkscope analyze` left them on its
# connection (analyze/compiled.py, read with the heatmap's bios): no read of the bios of their own.
COMPILED_SPIKE_WINDOWS = "internal._spike_window_rows"
# The findings tables analyze writes, in the order they are built.
FINDINGS_TABLES = ("spikes", "episodes", "writeback_verdict", "periods", "periodogram", "bursts")


@dataclass(frozen=True)
class SpikeOptions:
    """How spikes are judged: window width, latency metric, k (MADs above the median) or a
    fixed threshold, and the fewest IOs a block-level window needs to be judged (and a user
    series' window to count toward its normal level: any window with a sample is judged)."""

    window_ns: int = 1_000_000_000
    metric: str = "q2c"
    k: float = 5.0
    threshold_ns: int | None = None
    min_ios: int = 5


@dataclass(frozen=True)
class Episodes:
    """Spikes, the episodes they form and the per-device writeback verdict."""

    spikes: pa.Table
    episodes: pa.Table
    writeback_verdict: pa.Table


def find_episodes(con: duckdb.DuckDBPyConnection, options: SpikeOptions) -> Episodes:
    """Spikes of every metric, grouped into attributed episodes, and each device's verdict."""
    rows = find_spikes(con, options)
    groups = group_episodes(rows)  # numbers each spike row's episode
    spikes = pa.Table.from_pylist(rows, schema=SPIKES)
    wb = writeback_intervals(con)
    episodes = attribute_episodes(con, groups, wb)
    return Episodes(spikes, episodes, writeback_verdicts(con, episodes, wb))


def compute_findings(
    con: duckdb.DuckDBPyConnection, manifest: dict[str, Any], options: SpikeOptions | None = None
) -> dict[str, pa.Table]:
    """Every findings table (FINDINGS_TABLES) of an analysed dataset."""
    found = find_episodes(con, options or SpikeOptions())
    periods = dataset_periods(
        con, found.episodes, knobs_from_manifest(manifest), has_writeback_log(con)
    )
    return {
        "spikes": found.spikes,
        "episodes": found.episodes,
        "writeback_verdict": found.writeback_verdict,
        "periods": periods.periods,
        "periodogram": periods.periodogram,
        "bursts": periods.bursts,
    }


def has_writeback_log(con: duckdb.DuckDBPyConnection) -> bool:
    """True when the dataset holds writeback.bt events placed on a device's trace timeline."""
    try:
        row = con.execute("SELECT count(*) FROM writeback_events").fetchall()[0]
    except duckdb.Error:
        return False
    return bool(row and row[0])


def knobs_from_manifest(manifest: dict[str, Any]) -> dict[str, float]:
    """Knob intervals in seconds: the capture's sysctls when recorded, else kernel defaults."""
    knobs = dict(KNOBS)
    sysctl = manifest.get("capture", {}).get("sysctl", {})
    for name in ("vm.dirty_writeback_centisecs", "vm.dirty_expire_centisecs"):
        text = str(sysctl.get(name, "")).strip()
        # ASCII digits only: "²" passes isdigit() and int() refuses it
        if text.isascii() and text.isdigit() and len(text) <= 9 and int(text) > 0:
            knobs[name] = int(text) / 100
    return knobs


def find_spikes(con: duckdb.DuckDBPyConnection, options: SpikeOptions) -> list[dict[str, Any]]:
    """Windows whose p99 exceeds median + k*MAD of all windows (or the threshold), merged, per
    device; then the same for every user series (an application's own latency log)."""
    o = options
    metric = "d2c" if o.metric == "d2c" else "q2c"
    windows = _spike_windows(con, int(o.window_ns), metric)
    rows: list[dict[str, Any]] = []
    for (major, minor), w in _by_device(windows):
        for row in _abnormal(w, o.window_ns, o.k, o.threshold_ns, o.min_ios):
            row.update(dev_major=major, dev_minor=minor, metric=o.metric)
            rows.append(row)
    for name, w in _user_series_windows(con, o.window_ns):
        # an application that stalls logs few samples: every window with one is judged
        for row in _abnormal(w, o.window_ns, o.k, o.threshold_ns, o.min_ios, judge_min=1):
            major, minor = _busiest_device(con, row["start_ns"], row["end_ns"])
            row.update(dev_major=major, dev_minor=minor, metric=f"user:{name}")
            rows.append(row)
    for device_rank, row in _numbered(rows):
        row["spike_id"] = device_rank
    return rows


def _spike_windows(con: duckdb.DuckDBPyConnection, window_ns: int, metric: str) -> pa.Table:
    """internal._spike_windows: as the analysis computed them (COMPILED_SPIKE_WINDOWS) when it
    did for these options, else from one read of the latencies (_spike_window_tops) when the
    slowest latencies that hold every window's p99 are few enough to keep at once."""
    defaults = SpikeOptions()
    if (window_ns, metric) == (defaults.window_ns, defaults.metric):
        try:
            return query_table(
                con, f"SELECT * FROM {COMPILED_SPIKE_WINDOWS} ORDER BY dev_major, dev_minor, win"
            )
        except duckdb.CatalogException:  # a dataset opened after its analysis
            pass
    n = query_table(
        con,
        f"SELECT count(*) AS n FROM internal._spike_latencies({window_ns}, '{metric}') GROUP BY g",
    )["n"].to_numpy()
    top = int((n - (n * 990 + 999) // 1000 + 1).max(initial=1))
    held = int(np.minimum(n, top).sum())
    macro = (
        f"_spike_window_tops({window_ns}, '{metric}', {top})"
        if held <= MAX_SLOWEST_HELD
        else f"_spike_windows({window_ns}, '{metric}')"
    )
    return query_table(con, f"SELECT * FROM internal.{macro} ORDER BY dev_major, dev_minor, win")


def _abnormal(
    w: dict[str, np.ndarray],
    window_ns: int,
    k: float,
    threshold_ns: int | None,
    min_ios: int,
    judge_min: int | None = None,
) -> list[dict[str, Any]]:
    """Runs of consecutive windows whose p99 is abnormal, as partial spike rows. The normal
    level comes from windows with at least min_ios latencies; windows with at least judge_min
    (default min_ios) are judged against it."""
    busy = w["ios"] >= min_ios
    judged = w["ios"] >= (min_ios if judge_min is None else judge_min)
    if not judged.any():
        return []
    if not busy.any():  # too few samples anywhere for a normal level of its own
        busy = judged
    p99 = w["p99_ns"].astype(np.float64)
    median = float(np.median(p99[busy]))
    mad = float(np.median(np.abs(p99[busy] - median)))
    if threshold_ns:
        limit = threshold_ns
    else:
        derived = max(median + k * MAD_TO_SIGMA * mad, 2 * median)
        if not math.isfinite(derived):  # a --k so large (1e308) no window can pass it
            return []
        limit = int(derived)
    out = []
    for first, last in _runs(w["win"], judged & (p99 > limit)):
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


def _user_series_windows(
    con: duckdb.DuckDBPyConnection, window_ns: int
) -> list[tuple[str, dict[str, np.ndarray]]]:
    try:
        t = query_table(
            con, f"SELECT * FROM internal._series_windows({int(window_ns)}) ORDER BY series, win"
        )
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
        SELECT dev_major, dev_minor FROM internal._inflight_by_process
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
