"""The report's time series and distributions, read per device from the analysis tables and
pre-binned in SQL on the device's time bins (view time_bins), so a chart draws at most one
point per bin and series."""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import numpy as np

from blkscope.concepts import OP_CLASSES
from blkscope.units import ns_to_s


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
        return ns_to_s(self.edges_ns()[:-1] + self.width_ns / 2)


def time_bins(con: duckdb.DuckDBPyConnection, dev: tuple[int, int]) -> Bins:
    """The device's bins, as the time_bins view defines them for every per-bin table."""
    rows = con.execute(
        f"SELECT start_ns, width_ns, bins FROM time_bins WHERE {_dev_filter(*dev)}"
    ).fetchall()
    if not rows:
        return Bins(0, 1_000_000, 1)
    start, width, count = rows[0]
    return Bins(int(start), int(width), int(count))


@dataclass(frozen=True)
class Band:
    """Per-bin latency percentiles (ns); NaN where no IO completed in the bin."""

    p50: np.ndarray
    p99: np.ndarray
    max: np.ndarray
    n: np.ndarray
    slowest: list[str | None]  # process of each bin's slowest IO (None: no IO in the bin)

    @property
    def empty(self) -> bool:
        """No latency in any bin (a trace without completions)."""
        return not bool(np.any(self.n))


def _dev_filter(major: int, minor: int) -> str:
    return f"dev_major = {int(major)} AND dev_minor = {int(minor)}"


def latency_band(
    con: duckdb.DuckDBPyConnection, dev: tuple[int, int], bins: Bins, metric: str
) -> Band:
    """p50/p99/max per bin of a bio latency (d2c or q2c), binned at the bio's completion.

    Bios, not requests, so the bands agree with the stage statistics. The max is kept per bin,
    so downsampling never hides a spike.
    """
    v = f"{metric}_ns"
    rows = con.execute(
        f"SELECT (c_time_ns - $s) // $w AS b, quantile_disc({v}, [0.5, 0.99]), max({v}), "
        f"count(*), arg_max(coalesce(comm, '?'), {{'v': {v}, 't': -c_time_ns, 'comm': comm}}) "
        "FROM bios "
        f"WHERE {_dev_filter(*dev)} AND {v} IS NOT NULL GROUP BY b",
        {"s": bins.start_ns, "w": bins.width_ns},
    ).fetchall()
    out = np.full((4, bins.count), np.nan)
    out[3] = 0
    slowest: list[str | None] = [None] * bins.count
    for b, (p50, p99), mx, n, comm in rows:
        if 0 <= b < bins.count:
            out[:, b] = (p50, p99, mx, n)
            slowest[b] = comm
    return Band(out[0], out[1], out[2], out[3], slowest)


def op_rates(
    con: duckdb.DuckDBPyConnection, dev: tuple[int, int], bins: Bins, observer: bool = False
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{op class: (IOs/s, MiB/s)} per bin, requests counted at completion: the workload's, or
    with observer the capture's own tools' (is_observer)."""
    rows = con.execute(
        "SELECT op_class(op, flags, sector) AS cls, (c_time_ns - $s) // $w AS b, count(*), "
        f"sum(coalesce(nsectors, 0)) FROM requests WHERE {_dev_filter(*dev)} "
        "AND c_time_ns IS NOT NULL AND kind IN ('data', 'flush') AND is_observer(process) = $o "
        "GROUP BY ALL ORDER BY ALL",
        {"s": bins.start_ns, "w": bins.width_ns, "o": observer},
    ).fetchall()
    per_s = 1e9 / bins.width_ns
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for cls, b, n, sectors in rows:
        if not 0 <= b < bins.count:
            continue
        iops, mib = out.setdefault(cls, (np.zeros(bins.count), np.zeros(bins.count)))
        iops[b] = n * per_s
        mib[b] = sectors * 512 / 2**20 * per_s
    return {cls: out[cls] for cls in OP_CLASSES if cls in out}


@dataclass(frozen=True)
class Depth:
    """One level's depth per bin, as the depth_bins table holds it (0 where a bin is absent)."""

    max: np.ndarray
    mean: np.ndarray


def depth_bins(
    con: duckdb.DuckDBPyConnection, dev: tuple[int, int], bins: Bins
) -> dict[str, Depth]:
    """{level: Depth} from the depth_bins table."""
    rows = con.execute(
        f"SELECT level, bin, max_depth, mean_depth FROM depth_bins WHERE {_dev_filter(*dev)}"
    ).fetchall()
    out: dict[str, Depth] = {}
    for level, b, mx, mean in rows:
        d = out.setdefault(level, Depth(np.zeros(bins.count), np.zeros(bins.count)))
        if 0 <= b < bins.count:
            d.max[b], d.mean[b] = mx, mean
    return out


LBA_ROWS = 400  # at least this many sector buckets in the LBA map


@dataclass(frozen=True)
class LbaMap:
    """Bios per (time bin, sector bucket, op class): where on the device IO went, over time."""

    bin: np.ndarray
    bucket: np.ndarray
    op_class: np.ndarray
    n: np.ndarray
    lo_sector: int
    bucket_sectors: int


def lba_map(con: duckdb.DuckDBPyConnection, dev: tuple[int, int], bins: Bins) -> LbaMap:
    """Bios with a sector, counted per time bin (at Q) and per LBA_ROWS-th of the sector span."""
    span = con.execute(
        f"SELECT min(sector), max(sector::HUGEINT + coalesce(nsectors, 0)) FROM bios "
        f"WHERE {_dev_filter(*dev)} AND sector IS NOT NULL"
    ).fetchall()[0]
    lo, hi = (int(span[0] or 0), int(span[1] or 1))
    # a power of two of sectors, so a cell reads as a round size (512 MiB, not 611M)
    step = 1 << max(0, ((hi - lo) // LBA_ROWS).bit_length() - 1)
    got = con.execute(
        "SELECT (q_time_ns - $s) // $w, (sector - $lo) // $step, op_class(op, flags, sector), "
        f"count(*) FROM bios WHERE {_dev_filter(*dev)} AND sector IS NOT NULL GROUP BY ALL "
        "ORDER BY ALL",  # groups come back in any order: the page's bytes must not
        {"s": bins.start_ns, "w": bins.width_ns, "lo": lo, "step": step},
    ).fetchnumpy()
    cols = list(got.values())
    return LbaMap(
        np.asarray(cols[0], dtype=np.int64),
        np.asarray(cols[1], dtype=np.int64),
        np.asarray(cols[2], dtype=object),
        np.asarray(cols[3], dtype=np.int64),
        lo,
        step,
    )


def io_distributions(
    con: duckdb.DuckDBPyConnection, dev: tuple[int, int]
) -> dict[str, dict[str, list[tuple[int, int, int]]]]:
    """{metric: {op class: [(bucket, lo, n)]}} of the io_dist table (sizes and seeks, sectors)."""
    rows = con.execute(
        "SELECT metric, op_class(op, '', 0), bucket, lo, n FROM io_dist "
        f"WHERE {_dev_filter(*dev)} ORDER BY ALL"
    ).fetchall()
    out: dict[str, dict[str, list[tuple[int, int, int]]]] = {}
    for metric, cls, bucket, lo, n in rows:
        out.setdefault(metric, {}).setdefault(cls, []).append((bucket, lo, n))
    return out


@dataclass(frozen=True)
class UserSeries:
    """One user series (the application's own log, table series) on the trace clock, in ns."""

    name: str  # 'user:<series>', as the spikes table names its metric
    unit: str | None
    t_ns: np.ndarray
    value_ns: np.ndarray  # the value in ns (a value without a time unit taken as ns)
    unplaced: int  # rows without a trace time (not placed on the clock) or a finite value


def user_series(con: duckdb.DuckDBPyConnection) -> list[UserSeries]:
    """Every user series of the dataset, samples in time order."""
    from blkscope.analyze.views import relations
    from blkscope.units import NS_PER_UNIT

    if "series" not in relations(con):
        return []
    drawn = "t_ns IS NOT NULL AND value IS NOT NULL AND isfinite(value)"
    rows = con.execute(
        f"SELECT series, any_value(unit), list(t_ns ORDER BY t_ns, line_no) FILTER ({drawn}), "
        f"list(value ORDER BY t_ns, line_no) FILTER ({drawn}), count(*) FILTER (NOT ({drawn})) "
        "FROM series GROUP BY series ORDER BY series"
    ).fetchall()
    return [
        UserSeries(
            f"user:{name}",
            unit,
            np.asarray(t or [], dtype=np.int64),
            np.asarray(v or [], dtype=np.float64) * NS_PER_UNIT.get(unit or "", 1),
            int(unplaced),
        )
        for name, unit, t, v, unplaced in rows
    ]


@dataclass(frozen=True)
class HeatCells:
    """One stage's cells of the latency_heatmap table (only cells holding a bio)."""

    bin: np.ndarray
    lo_ns: np.ndarray
    hi_ns: np.ndarray
    n: np.ndarray
    observer_n: np.ndarray
    max_ns: np.ndarray
    slowest: list[str]


def heatmap(con: duckdb.DuckDBPyConnection, dev: tuple[int, int]) -> dict[str, HeatCells]:
    """{stage: cells} of the device's latency_heatmap rows."""
    got = con.execute(
        "SELECT stage, bin, lo_ns, hi_ns, n, observer_n, max_ns, slowest_comm "
        f"FROM latency_heatmap WHERE {_dev_filter(*dev)} ORDER BY stage, bin, bucket"
    ).fetchnumpy()
    out: dict[str, HeatCells] = {}
    for stage in dict.fromkeys(got["stage"].tolist()):
        sel = got["stage"] == stage
        col = {c: np.asarray(got[c][sel], dtype=np.int64)
               for c in ("bin", "lo_ns", "hi_ns", "n", "observer_n", "max_ns")}  # fmt: skip
        out[stage] = HeatCells(
            col["bin"], col["lo_ns"], col["hi_ns"], col["n"], col["observer_n"], col["max_ns"],
            got["slowest_comm"][sel].tolist(),
        )  # fmt: skip
    return out
