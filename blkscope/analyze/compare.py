"""Before/after comparison of two analysed datasets: latency shifts with confidence intervals,
spike counts and period changes, each judged significant or noise."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from blkscope.analyze.views import connect, query_table

MIN_WINDOW_IOS = 20  # windows with fewer IOs give unstable percentiles
RESAMPLES = 2000
RELATIVE = 0.2  # a shift smaller than 20% is reported as noise even when "significant"


@dataclass
class LatencyChange:
    """One device x op class x stage x statistic, before and after."""

    device: str
    op_class: str
    stage: str
    statistic: str  # p50 or p99: the median over 1 s windows of that per-window percentile
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


def latency_changes(before: Path, after: Path, seed: int = 0) -> list[LatencyChange]:
    """Per-window latency percentiles of both datasets, compared device by device."""
    sql = f"SELECT * FROM _window_latency WHERE ios >= {MIN_WINDOW_IOS}"
    a = query_table(connect(before), sql).to_pylist()
    b = query_table(connect(after), sql).to_pylist()
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
                    stat,
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


def _spike_counts(dataset: Path) -> dict[str, int]:
    con = connect(dataset)
    try:
        rows = con.execute(
            "SELECT dev_major || ',' || dev_minor, count(*) FROM spikes GROUP BY 1"
        ).fetchall()
    except duckdb.Error:  # an unanalysed dataset simply has no spikes table
        return {}
    return {dev: int(n) for dev, n in rows}


def _periods(dataset: Path) -> dict[tuple[str, str], float]:
    con = connect(dataset)
    try:
        rows = con.execute(
            "SELECT coalesce(dev_major || ',' || dev_minor, ''), series, "
            "min(period_ns) FROM periods GROUP BY 1, 2"
        ).fetchall()
    except duckdb.Error:
        return {}
    return {(dev, series): period / 1e9 for dev, series, period in rows}


def compare(before: Path, after: Path) -> dict[str, Any]:
    """Everything `blkscope compare` reports, as plain data."""
    changes = latency_changes(before, after)
    spikes_a, spikes_b = _spike_counts(before), _spike_counts(after)
    periods_a, periods_b = _periods(before), _periods(after)
    period_rows = []
    for key in sorted(set(periods_a) | set(periods_b)):
        pa_, pb = periods_a.get(key), periods_b.get(key)
        moved = pa_ is None or pb is None or abs(pb - pa_) > max(0.2, 0.05 * pa_)
        period_rows.append(
            {
                "device": key[0],
                "series": key[1],
                "before_s": pa_,
                "after_s": pb,
                "verdict": "changed" if moved else "same",
            }
        )
    return {
        "before": str(before),
        "after": str(after),
        "latency": [asdict(c) for c in changes],
        "spikes": [
            {"device": d, "before": spikes_a.get(d, 0), "after": spikes_b.get(d, 0)}
            for d in sorted(set(spikes_a) | set(spikes_b))
        ],
        "periods": period_rows,
        "significant": [asdict(c) for c in changes if c.verdict != "noise"],
    }


def render(result: dict[str, Any]) -> str:
    """Human-readable comparison table."""
    lines = [
        f"before: {result['before']}",
        f"after:  {result['after']}",
        "",
        f"{'device':>7} {'op':>7} {'stage':>5} {'stat':>4} {'before':>10} {'after':>10} "
        f"{'change':>8} {'95% CI':>17}  verdict",
    ]
    for c in result["latency"]:
        ci = f"[{c['ci_low']:+.0%}, {c['ci_high']:+.0%}]"
        lines.append(
            f"{c['device']:>7} {c['op_class']:>7} {c['stage']:>5} {c['statistic']:>4} "
            f"{c['before_ns'] / 1e6:>8.3f}ms {c['after_ns'] / 1e6:>8.3f}ms "
            f"{c['change']:>+8.0%} {ci:>17}  {c['verdict']}"
        )
    lines.append("")
    for s in result["spikes"]:
        lines.append(f"spikes on {s['device']}: {s['before']} -> {s['after']}")
    for p in result["periods"]:
        fmt = lambda v: "none" if v is None else f"{v:.2f} s"  # noqa: E731
        lines.append(
            f"period of {p['series']} on {p['device'] or 'all'}: {fmt(p['before_s'])} -> "
            f"{fmt(p['after_s'])} ({p['verdict']})"
        )
    n = len(result["significant"])
    lines.append("")
    lines.append(
        f"{n} significant latency change{'s' if n != 1 else ''}; the rest is noise"
        if n
        else "no significant latency change: every difference is within noise"
    )
    return "\n".join(lines)
