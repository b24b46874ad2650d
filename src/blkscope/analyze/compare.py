"""Before/after comparison of two analysed datasets: latency shifts with confidence intervals,
spike counts and period changes, each judged significant or noise."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import duckdb
import numpy as np

from blkscope.analyze.views import query_table
from blkscope.units import ns_to_s

Con = duckdb.DuckDBPyConnection

MIN_WINDOW_IOS = 20  # windows with fewer IOs give unstable percentiles
RESAMPLES = 2000
RELATIVE = 0.2  # a shift smaller than 20% is reported as noise even when "significant"


# What `statistic` means in each LatencyChange: a per-window percentile summarised over the
# capture's 1 s windows of completion (view _window_latency), not a percentile of all IOs.
STATISTICS = {
    "median_window_p50": "the median over 1 s windows of each window's p50",
    "median_window_p99": "the median over 1 s windows of each window's p99",
}


@dataclass
class LatencyChange:
    """One device x op class x stage x statistic, before and after."""

    device: str
    op_class: str
    stage: str
    statistic: str  # a key of STATISTICS
    before_ns: int
    after_ns: int
    change: float  # after / before - 1
    ci_low: float  # 95% bootstrap interval of `change`, windows resampled
    ci_high: float
    windows: tuple[int, int]
    verdict: str  # 'slower', 'faster' or 'noise'


def _bootstrap_change(
    a: np.ndarray, b: np.ndarray, rng: np.random.Generator
) -> tuple[float, float]:
    ia = rng.integers(0, a.size, (RESAMPLES, a.size))
    ib = rng.integers(0, b.size, (RESAMPLES, b.size))
    ratio = np.median(b[ib], axis=1) / np.maximum(np.median(a[ia], axis=1), 1)
    low, high = np.percentile(ratio - 1, [2.5, 97.5])
    return float(low), float(high)


def latency_changes(before: Con, after: Con, seed: int = 0) -> list[LatencyChange]:
    """Per-window latency percentiles of both datasets, compared device by device."""
    sql = f"SELECT * FROM internal._window_latency WHERE ios >= {MIN_WINDOW_IOS}"
    a = query_table(before, sql).to_pylist()
    b = query_table(after, sql).to_pylist()
    rng = np.random.default_rng(seed)
    groups: dict[tuple[Any, ...], tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
    for side, rows in ((0, a), (1, b)):
        for r in rows:
            key = (f"{r['dev_major']},{r['dev_minor']}", r["op_class"], r["stage"])
            groups.setdefault(key, ([], []))[side].append(r)
    out = []
    for key in sorted(groups):
        ra, rb = groups[key]
        if len(ra) < 5 or len(rb) < 5:
            continue
        for stat in ("p50", "p99"):
            va = np.array([r[f"{stat}_ns"] for r in ra], dtype=np.float64)
            vb = np.array([r[f"{stat}_ns"] for r in rb], dtype=np.float64)
            name = f"median_window_{stat}"
            before_ns, after_ns = float(np.median(va)), float(np.median(vb))
            low, high = _bootstrap_change(va, vb, rng)
            change = after_ns / max(before_ns, 1) - 1
            verdict = "noise"
            if low > 0 and change >= RELATIVE:
                verdict = "slower"
            elif high < 0 and change <= -RELATIVE / (1 + RELATIVE):
                verdict = "faster"
            out.append(
                LatencyChange(
                    *key,
                    name,
                    int(before_ns),
                    int(after_ns),
                    change,
                    low,
                    high,
                    (len(va), len(vb)),
                    verdict,
                )
            )
    return out


@dataclass
class CaptureP99:
    """The p99 of every IO of one device x op class x stage in each capture (the number analyze
    and the report print), with 95% intervals from resampling the capture's 1 s windows: IOs
    in one burst are not independent, so whole windows are drawn, not single IOs."""

    device: str
    op_class: str  # an op class, or '*' for every IO of the device
    stage: str
    before_ns: int
    before_low_ns: int
    before_high_ns: int
    after_ns: int
    after_low_ns: int
    after_high_ns: int
    change: float  # after / before - 1
    ci_low: float  # 95% interval of `change`
    ci_high: float
    ios: tuple[int, int]
    verdict: str  # 'slower', 'faster' or 'noise'


_IO_LATENCIES = """
SELECT dev_major || ',' || dev_minor AS device, op_class(op, flags, sector) AS op_class,
       'D2C' AS stage, c_time_ns // 1000000000 AS win, d2c_ns AS ns FROM bios
WHERE d2c_ns IS NOT NULL
UNION ALL
SELECT dev_major || ',' || dev_minor, op_class(op, flags, sector), 'Q2C',
       c_time_ns // 1000000000, q2c_ns FROM bios WHERE q2c_ns IS NOT NULL
"""
TAIL_CHUNK = 100  # bootstrap replicates per step (bounds memory on big captures)


def _latency_groups(con: Con) -> dict[tuple[str, str, str], tuple[np.ndarray, np.ndarray]]:
    """(values, window ids) per (device, op class, stage); op class '*' holds every IO, as
    stage_stats' device level does."""
    t = con.execute(f"SELECT * FROM ({_IO_LATENCIES}) ORDER BY ALL").fetchnumpy()
    out: dict[tuple[str, str, str], tuple[np.ndarray, np.ndarray]] = {}
    device, cls, stage = (np.asarray(t[k], dtype=object) for k in ("device", "op_class", "stage"))
    for key in sorted(set(zip(device.tolist(), cls.tolist(), stage.tolist(), strict=True))):
        sel = (device == key[0]) & (cls == key[1]) & (stage == key[2])
        out[key] = (np.asarray(t["ns"][sel], dtype=np.int64), np.asarray(t["win"][sel]))
    for dev, st in {(k[0], k[2]) for k in out}:
        parts = [v for k, v in out.items() if (k[0], k[2]) == (dev, st)]
        out[(dev, "*", st)] = (
            np.concatenate([p[0] for p in parts]),
            np.concatenate([p[1] for p in parts]),
        )
    return out


def capture_quantile(
    values: np.ndarray, windows: np.ndarray, q: float, rng: np.random.Generator
) -> tuple[int, np.ndarray]:
    """The q-quantile of values as DuckDB's quantile_disc computes it (the ceil(q n)-th
    smallest), and RESAMPLES bootstrap replicates of it with whole windows drawn."""
    n = values.size
    v = np.sort(values)
    estimate = int(v[int(np.ceil(q * n)) - 1])
    _, win = np.unique(windows, return_inverse=True)
    k = int(win.max()) + 1
    per_window = np.bincount(win, minlength=k)
    order = np.argsort(values)[::-1]  # the tail, largest first, is all a high quantile needs
    tail = min(n, max(200, int(4 * (1 - q) * n)))
    top_v, top_w = values[order[:tail]], win[order[:tail]]
    out = np.empty(RESAMPLES, dtype=np.int64)
    for lo in range(0, RESAMPLES, TAIL_CHUNK):
        draws = rng.integers(0, k, (min(TAIL_CHUNK, RESAMPLES - lo), k))
        mult = np.stack([np.bincount(d, minlength=k) for d in draws])
        total = mult @ per_window
        weight = mult[:, top_w]
        above = np.cumsum(weight, axis=1) - weight  # weight of the larger values
        ok = above <= (1 - q) * total[:, None]
        last = ok.shape[1] - 1 - np.argmax(ok[:, ::-1], axis=1)
        full = ok.all(axis=1)  # the quantile lies below the tail: rare, done in full
        out[lo : lo + len(draws)] = top_v[last]
        for r in np.flatnonzero(full):
            weights = mult[r][win]
            cum = np.cumsum(weights[np.argsort(values)])
            out[lo + r] = v[int(np.searchsorted(cum, q * total[r]))]
    return estimate, out


def capture_p99(before: Con, after: Con, seed: int = 0) -> list[CaptureP99]:
    """Whole-capture p99 per device, op class and stage in both datasets, with intervals."""
    a, b = _latency_groups(before), _latency_groups(after)
    rng = np.random.default_rng(seed)
    out = []
    for key in sorted(set(a) & set(b)):
        if a[key][0].size < 100 or b[key][0].size < 100:
            continue
        ea, ra = capture_quantile(*a[key], 0.99, rng)
        eb, rb = capture_quantile(*b[key], 0.99, rng)
        ratio = rb / np.maximum(ra, 1) - 1
        low, high = (float(x) for x in np.percentile(ratio, [2.5, 97.5]))
        change = eb / max(ea, 1) - 1
        verdict = "noise"
        if low > 0 and change >= RELATIVE:
            verdict = "slower"
        elif high < 0 and change <= -RELATIVE / (1 + RELATIVE):
            verdict = "faster"
        pa_, pb_ = np.percentile(ra, [2.5, 97.5]), np.percentile(rb, [2.5, 97.5])
        out.append(
            CaptureP99(
                *key,
                ea,
                int(pa_[0]),
                int(pa_[1]),
                eb,
                int(pb_[0]),
                int(pb_[1]),
                change,
                low,
                high,
                (a[key][0].size, b[key][0].size),
                verdict,
            )
        )
    return out


def _spike_counts(con: Con) -> dict[str, int]:
    try:
        rows = con.execute(
            "SELECT dev_major || ',' || dev_minor, count(*) FROM episodes GROUP BY 1"
        ).fetchall()
    except duckdb.Error:  # an unanalysed dataset simply has no spikes table
        return {}
    return {dev: int(n) for dev, n in rows}


def _periods(con: Con) -> dict[tuple[str, str], float]:
    try:
        rows = con.execute(
            "SELECT coalesce(dev_major || ',' || dev_minor, ''), series, "
            "min(period_ns) FROM periods GROUP BY 1, 2"
        ).fetchall()
    except duckdb.Error:
        return {}
    return {(dev, series): ns_to_s(period) for dev, series, period in rows}


@dataclass(frozen=True)
class SpikeCount:
    """Latency episodes of one device in each capture."""

    device: str
    before: int
    after: int


@dataclass(frozen=True)
class PeriodChange:
    """One periodic series' shortest significant period in each capture (None: not found)."""

    device: str
    series: str
    before_s: float | None
    after_s: float | None
    verdict: str  # "same" or "changed"


@dataclass(frozen=True)
class Comparison:
    """Everything `blkscope compare` reports (`as_doc` is its --json document)."""

    before: str
    after: str
    latency: list[LatencyChange]
    capture_p99: list[CaptureP99]
    spikes: list[SpikeCount]
    periods: list[PeriodChange]

    @property
    def significant(self) -> list[LatencyChange]:
        """The latency changes that are not noise."""
        return [c for c in self.latency if c.verdict != "noise"]

    def as_doc(self) -> dict[str, Any]:
        """The comparison as JSON-ready data."""
        return {
            "before": self.before,
            "after": self.after,
            "statistics": STATISTICS,
            "latency": [asdict(c) for c in self.latency],
            "capture_p99": [asdict(c) for c in self.capture_p99],
            "spikes": [asdict(c) for c in self.spikes],
            "periods": [asdict(c) for c in self.periods],
            "significant": [asdict(c) for c in self.significant],
        }


def compare(before: Con, after: Con, before_name: str, after_name: str) -> Comparison:
    """Compare two analysed datasets, given their connections and the names to show."""
    changes = latency_changes(before, after)
    whole = capture_p99(before, after)
    spikes_a, spikes_b = _spike_counts(before), _spike_counts(after)
    periods_a, periods_b = _periods(before), _periods(after)
    period_rows = []
    for key in sorted(set(periods_a) | set(periods_b)):
        pa_, pb = periods_a.get(key), periods_b.get(key)
        moved = pa_ is None or pb is None or abs(pb - pa_) > max(0.2, 0.05 * pa_)
        period_rows.append(PeriodChange(key[0], key[1], pa_, pb, "changed" if moved else "same"))
    spikes = [
        SpikeCount(d, spikes_a.get(d, 0), spikes_b.get(d, 0))
        for d in sorted(set(spikes_a) | set(spikes_b))
    ]
    return Comparison(before_name, after_name, changes, whole, spikes, period_rows)
