"""Everything the report shows for one device, read from an analysed dataset."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from blkscope.analyze.crosscheck import crosscheck
from blkscope.analyze.summary import device_summary
from blkscope.analyze.views import connect
from blkscope.ingest.dataset import read_manifest
from blkscope.reports import series
from blkscope.reports.findings import Findings, Spectrum, load_findings

BREAKDOWN_STAGES = ["Q2G", "G2I", "I2D", "D2C"]
HIST_OPS = ["read", "write", "flush", "discard"]
TOP_N = 10
_PCTS = ["p50_ns", "p90_ns", "p99_ns", "p999_ns", "max_ns"]


@dataclass
class Device:
    """One device's figures, tables and findings."""

    major: int
    minor: int
    first_ns: int
    last_ns: int
    counts: dict[str, Any]  # blkscope.analyze.summary.device_summary entry
    errors: int
    bins: series.Bins
    d2c: series.Band
    q2c: series.Band
    rates: dict[str, tuple[Any, Any]]
    depth_max: Any
    depth_mean: Any
    stages: dict[str, dict[str, float]]  # stage -> n, mean_ns, p50/p90/p99/p999/max
    spike_stages: dict[str, dict[str, float]] | None
    hist: dict[str, dict[str, list[tuple[int, int, int]]]]  # stage -> op -> (lo, hi, n)
    top_count: list[dict[str, Any]]
    top_latency: list[dict[str, Any]]
    spikes: list[dict[str, Any]] | None
    periods: list[dict[str, Any]] | None
    spectra: list[Spectrum]
    writeback: list[dict[str, Any]] | None
    # this device's rows of blkscope.analyze.crosscheck (biosnoop / iostat agreement), or None
    # for a log the dataset lacks or that did not match this device
    crosscheck: dict[str, dict[str, Any] | None]

    @property
    def name(self) -> str:
        """major,minor as blkparse prints it."""
        return f"{self.major},{self.minor}"


@dataclass
class Report:
    """A whole dataset's report content."""

    dataset: Path
    manifest: dict[str, Any]
    devices: list[Device]
    periods_source: str
    spikes_computed: bool


def _stage_rows(con: duckdb.DuckDBPyConnection, major: int, minor: int) -> dict[str, dict]:
    rows = con.execute(
        f"SELECT stage, n, mean_ns, {', '.join(_PCTS)} FROM stage_stats WHERE level = 'device' "
        "AND dev_major = $1 AND dev_minor = $2",
        [major, minor],
    ).fetchall()
    names = ["n", "mean_ns", *_PCTS]
    return {r[0]: dict(zip(names, r[1:], strict=True)) for r in rows}


_STAGE_EXPR = {
    "Q2G": "g_time_ns - q_time_ns",
    "G2I": "i_time_ns - g_time_ns",
    "I2D": "CASE WHEN NOT merged THEN d_time_ns - i_time_ns END",
    "D2C": "d2c_ns",
}


def _stages_in(
    con: duckdb.DuckDBPyConnection, major: int, minor: int, windows: list[tuple[int, int]]
) -> dict[str, dict[str, float]]:
    """Stage statistics of the bios that completed inside the given windows."""
    if not windows:
        return {}
    inside = " OR ".join(f"(c_time_ns BETWEEN {int(a)} AND {int(b)})" for a, b in windows)
    out = {}
    for stage, expr in _STAGE_EXPR.items():
        n, mean, p50, p99, mx = con.execute(
            f"SELECT count(v), avg(v), quantile_disc(v, 0.5), quantile_disc(v, 0.99), max(v) "
            f"FROM (SELECT {expr} AS v FROM bios WHERE dev_major = $1 AND dev_minor = $2 "
            f"AND ({inside})) WHERE v IS NOT NULL",
            [major, minor],
        ).fetchone() or (0, None, None, None, None)
        out[stage] = {"n": n, "mean_ns": mean, "p50_ns": p50, "p99_ns": p99, "max_ns": mx}
    return out


def _hist(con: duckdb.DuckDBPyConnection, major: int, minor: int) -> dict[str, dict[str, list]]:
    rows = con.execute(
        "SELECT stage, op_class, lo_ns, hi_ns, n FROM latency_hist WHERE dev_major = $1 AND "
        "dev_minor = $2 AND stage IN ('D2C', 'Q2C') AND op_class <> '*' ORDER BY ALL",
        [major, minor],
    ).fetchall()
    out: dict[str, dict[str, list]] = {"D2C": {}, "Q2C": {}}
    for stage, op, lo, hi, n in rows:
        out[stage].setdefault(op, []).append((lo, hi, n))
    return out


_TOP = """
SELECT coalesce(comm, '?') AS process, count(*) AS ios,
       count(*) FILTER (op = 'R') AS reads, count(*) FILTER (op = 'W') AS writes,
       quantile_disc(q2c_ns, 0.5) AS q2c_p50_ns, quantile_disc(q2c_ns, 0.99) AS q2c_p99_ns,
       max(q2c_ns) AS q2c_max_ns, quantile_disc(d2c_ns, 0.99) AS d2c_p99_ns
FROM bios WHERE dev_major = $1 AND dev_minor = $2 GROUP BY 1
"""


def _top(con: duckdb.DuckDBPyConnection, major: int, minor: int, order: str) -> list[dict]:
    rel = con.execute(f"{_TOP} ORDER BY {order}, process LIMIT {TOP_N}", [major, minor])
    names = [d[0] for d in rel.description]
    return [dict(zip(names, r, strict=True)) for r in rel.fetchall()]


def _errors(con: duckdb.DuckDBPyConnection, major: int, minor: int) -> int:
    row = con.execute(
        "SELECT count(*) FROM requests WHERE dev_major = $1 AND dev_minor = $2 AND error <> 0",
        [major, minor],
    ).fetchone()
    return int(row[0]) if row else 0


def _mine(rows: list[dict[str, Any]] | None, major: int, minor: int) -> list[dict] | None:
    if rows is None:
        return None
    return [
        r
        for r in rows
        if r.get("dev_major") in (major, None) and r.get("dev_minor") in (minor, None)
    ]


def load_report(dataset: Path) -> Report:
    """Read an analysed dataset into the report model."""
    manifest = read_manifest(dataset)
    con = connect(dataset)
    spans = [
        (d["major"], d["minor"], d["first_time_ns"] or 0, d["last_time_ns"] or 0)
        for d in manifest.get("devices", [])
    ]
    found: Findings = load_findings(dataset, con, manifest, spans)
    checks = crosscheck(con, set(manifest.get("tables", {})))
    counts = {(c["dev"]): c for c in device_summary(con)}
    devices = []
    for major, minor, first, last in spans:
        key = f"{major},{minor}"
        if key not in counts:  # a device with events but no IO (only notes) has nothing to plot
            continue
        bins = series.make_bins(first, last)
        depth_max, depth_mean = series.driver_depth(con, (major, minor), bins, last)
        spikes = _mine(found.spikes, major, minor)
        windows = [(s["start_ns"], s["end_ns"]) for s in spikes or []]
        devices.append(
            Device(
                major=major,
                minor=minor,
                first_ns=first,
                last_ns=last,
                counts=counts[key],
                errors=_errors(con, major, minor),
                bins=bins,
                d2c=series.latency_band(con, (major, minor), bins, "d2c"),
                q2c=series.latency_band(con, (major, minor), bins, "q2c"),
                rates=series.op_rates(con, (major, minor), bins),
                depth_max=depth_max,
                depth_mean=depth_mean,
                stages=_stage_rows(con, major, minor),
                spike_stages=_stages_in(con, major, minor, windows) if spikes else None,
                hist=_hist(con, major, minor),
                top_count=_top(con, major, minor, "ios DESC"),
                top_latency=_top(con, major, minor, "q2c_p99_ns DESC NULLS LAST"),
                spikes=spikes,
                periods=_mine(found.periods, major, minor),
                spectra=found.spectra.get((major, minor), []),
                writeback=found.writeback,
                crosscheck={
                    log: next((r for r in rows or [] if r["dev"] == key), None)
                    for log, rows in checks.items()
                },
            )
        )
    con.close()
    return Report(dataset, manifest, devices, found.periods_source, found.spikes is not None)
