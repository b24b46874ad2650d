"""Time series for the report, binned so a chart never holds more than MAX_BINS points."""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import numpy as np

MAX_BINS = 1500
_NICE = (1, 2, 5)


def bin_width_ns(span_ns: int, max_bins: int = MAX_BINS) -> int:
    """Smallest 1/2/5 x 10^k ns width (at least 1 ms) that covers span_ns in max_bins bins."""
    want = max(1, -(-max(span_ns, 1) // max_bins))
    scale = 1_000_000
    while True:
        for step in _NICE:
            if step * scale >= want:
                return step * scale
        scale *= 10


@dataclass(frozen=True)
class Bins:
    """Equal-width time bins over [start_ns, start_ns + count * width_ns) on the trace clock."""

    start_ns: int
    width_ns: int
    count: int

    def edges_ns(self) -> np.ndarray:
        """Bin edges, count + 1 values."""
        return self.start_ns + self.width_ns * np.arange(self.count + 1, dtype=np.int64)

    def centers_s(self) -> np.ndarray:
        """Bin centres in seconds since the trace start."""
        return (self.edges_ns()[:-1] + self.width_ns / 2) / 1e9


def make_bins(first_ns: int, last_ns: int) -> Bins:
    """Bins covering the device's traced span."""
    width = bin_width_ns(last_ns - first_ns)
    start = first_ns - first_ns % width
    return Bins(start, width, max(1, (last_ns - start) // width + 1))


@dataclass(frozen=True)
class Band:
    """Per-bin latency percentiles (ns); NaN where no IO completed in the bin."""

    p50: np.ndarray
    p99: np.ndarray
    max: np.ndarray
    n: np.ndarray


def _dev_filter(major: int, minor: int) -> str:
    return f"dev_major = {int(major)} AND dev_minor = {int(minor)}"


def latency_band(
    con: duckdb.DuckDBPyConnection, dev: tuple[int, int], bins: Bins, metric: str
) -> Band:
    """p50/p99/max per bin of a bio latency (d2c or q2c), binned at the bio's completion.

    Bios, not requests, so the bands agree with the stage statistics. The max is kept per bin,
    so downsampling never hides a spike.
    """
    table, t, v = "bios", "c_time_ns", f"{metric}_ns"
    rows = con.execute(
        f"SELECT (({t}) - $s) // $w AS b, quantile_disc({v}, 0.5), quantile_disc({v}, 0.99), "
        f"max({v}), count(*) FROM {table} WHERE {_dev_filter(*dev)} AND {v} IS NOT NULL "
        "GROUP BY b ORDER BY b",
        {"s": bins.start_ns, "w": bins.width_ns},
    ).fetchall()
    out = np.full((4, bins.count), np.nan)
    out[3] = 0
    for b, p50, p99, mx, n in rows:
        if 0 <= b < bins.count:
            out[:, b] = (p50, p99, mx, n)
    return Band(out[0], out[1], out[2], out[3])


OPS = {"R": "read", "W": "write", "D": "discard", "F": "flush"}


def op_rates(
    con: duckdb.DuckDBPyConnection, dev: tuple[int, int], bins: Bins
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{op: (IOs/s, MiB/s)} per bin, requests counted at completion."""
    rows = con.execute(
        "SELECT op, (c_time_ns - $s) // $w AS b, count(*), sum(coalesce(nsectors, 0)) "
        f"FROM requests WHERE {_dev_filter(*dev)} AND c_time_ns IS NOT NULL "
        "AND kind IN ('data', 'flush') GROUP BY ALL ORDER BY ALL",
        {"s": bins.start_ns, "w": bins.width_ns},
    ).fetchall()
    per_s = 1e9 / bins.width_ns
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for op, b, n, sectors in rows:
        if op not in OPS or not 0 <= b < bins.count:
            continue
        iops, mib = out.setdefault(op, (np.zeros(bins.count), np.zeros(bins.count)))
        iops[b] = n * per_s
        mib[b] = sectors * 512 / 2**20 * per_s
    return {op: out[op] for op in OPS if op in out}


def depth_series(
    starts_ns: np.ndarray, ends_ns: np.ndarray, bins: Bins
) -> tuple[np.ndarray, np.ndarray]:
    """(max, time-weighted mean) per bin of how many [start, end) intervals are open."""
    t = np.concatenate([starts_ns, ends_ns]).astype(np.int64)
    step = np.concatenate([np.ones(starts_ns.size), -np.ones(ends_ns.size)])
    # An end and a start at the same instant must not count as two in flight: ends first.
    order = np.lexsort((step, t))
    t, level = t[order], np.cumsum(step[order])
    edges = bins.edges_ns()
    if t.size == 0:
        return np.zeros(bins.count), np.zeros(bins.count)
    # Area under the step function up to each event, then up to each edge.
    area = np.concatenate([[0.0], np.cumsum(level[:-1] * np.diff(t))])
    k = np.searchsorted(t, edges, side="right") - 1
    before = k < 0
    kc = np.clip(k, 0, None)
    at_edge = np.where(before, 0.0, level[kc])
    area_edge = np.where(before, 0.0, area[kc] + at_edge * (edges - t[kc]))
    mean = np.diff(area_edge) / bins.width_ns
    # Max: the level entering the bin, or any level reached inside it.
    peak = at_edge[:-1].copy()
    first_in = np.searchsorted(t, edges[:-1], side="left")
    last_in = np.searchsorted(t, edges[1:], side="left")
    has = last_in > first_in
    if has.any():
        # Bins with events hold consecutive runs, so each run ends where the next one starts.
        maxima = np.maximum.reduceat(level[: last_in[has][-1]], first_in[has])
        peak[has] = np.maximum(peak[has], maxima)
    return peak, mean


def driver_depth(
    con: duckdb.DuckDBPyConnection, dev: tuple[int, int], bins: Bins, end_ns: int
) -> tuple[np.ndarray, np.ndarray]:
    """In-flight requests between their first D and their C (to the trace end when cut)."""
    rows = con.execute(
        f"SELECT first_d_time_ns, coalesce(c_time_ns, $e) FROM requests WHERE {_dev_filter(*dev)} "
        "AND first_d_time_ns IS NOT NULL ORDER BY ALL",
        {"e": end_ns},
    ).fetchnumpy()
    starts, ends = (np.asarray(v, dtype=np.int64) for v in rows.values())
    return depth_series(starts, ends, bins)
