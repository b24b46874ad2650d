"""Everything the report shows for one device, read from an analysed dataset's tables: the page
draws these and computes nothing the analysis already stored."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from blkscope.analyze.crosscheck import crosscheck
from blkscope.analyze.device_summary import device_summary
from blkscope.analyze.devices import DeviceName, device_names
from blkscope.dataset import Dataset
from blkscope.reports import chart_series
from blkscope.store.manifest import DeviceEntry
from blkscope.units import ns_to_s
from blkscope.wallclock import WallClock

BREAKDOWN_STAGES = ["Q2G", "G2I", "I2D", "D2C"]
HIST_OPS = ["read", "write", "flush", "discard"]
TOP_N = 10
_PCTS = ["p50_ns", "p90_ns", "p99_ns", "p999_ns", "max_ns"]


@dataclass
class Spectrum:
    """One series' periodogram (periodogram table) and bursts (bursts table)."""

    series: str
    period_s: np.ndarray
    z2: np.ndarray
    burst_starts_ns: np.ndarray


@dataclass
class Device:
    """One device's figures, tables and findings."""

    major: int
    minor: int
    name: DeviceName | None
    first_ns: int
    last_ns: int
    counts: dict[str, Any]  # blkscope.analyze.summary.device_summary entry
    errors: int
    bins: chart_series.Bins
    d2c: chart_series.Band
    q2c: chart_series.Band
    rates: dict[str, tuple[Any, Any]]  # the workload's IO (the observer's left out)
    observer_rates: dict[str, tuple[Any, Any]]  # the capture's own tools' IO (is_observer)
    heatmap: dict[str, chart_series.HeatCells]  # latency_heatmap by stage
    user: list[chart_series.UserSeries]  # every user series (the application's own log)
    depth: dict[str, chart_series.Depth]  # depth_bins per level
    stages: dict[str, dict[str, float]]  # stage -> n, mean_ns, p50/p90/p99/p999/max
    episode_stages: dict[str, dict[str, float]] | None
    hist: dict[str, dict[str, list[tuple[int, int, int]]]]  # stage -> op -> (lo, hi, n)
    sizes: dict[str, dict[str, list[tuple[int, int, int]]]]  # io_dist metric -> op -> rows
    lba: chart_series.LbaMap
    top_count: list[dict[str, Any]]
    top_latency: list[dict[str, Any]]
    spikes: list[dict[str, Any]]
    episodes: list[dict[str, Any]]
    verdict: dict[str, Any] | None
    periods: list[dict[str, Any]]
    spectra: dict[str, Spectrum]  # by series
    writeback: list[dict[str, Any]]  # this device's writeback timeline (writeback_events)
    # this device's rows of blkscope.analyze.crosscheck (biosnoop / iostat agreement), or None
    # for a log the dataset lacks or that did not match this device
    crosscheck: dict[str, dict[str, Any] | None]
    warnings: list[str] = field(default_factory=list)

    @property
    def name_text(self) -> str:
        """'vda (254,0)', or '254,0' when the name is unknown."""
        return f"{self.name.name} ({self.major},{self.minor})" if self.name else self.dev

    @property
    def dev(self) -> str:
        """major,minor as blkparse prints it."""
        return f"{self.major},{self.minor}"


@dataclass
class Report:
    """A whole dataset's report content."""

    dataset: Path
    manifest: dict[str, Any]
    clock: WallClock
    devices: list[Device]
    warnings: list[str]  # the dataset's completeness warnings
    files: dict[str, Any] | None = None  # blkscope.analyze.file_usage.file_usage, when mapped


def _where(major: int, minor: int) -> str:
    return f"dev_major = {int(major)} AND dev_minor = {int(minor)}"


def _rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[dict[str, Any]]:
    rel = con.execute(sql)
    names = [d[0] for d in rel.description]
    return [dict(zip(names, r, strict=True)) for r in rel.fetchall()]


def _stage_rows(con: duckdb.DuckDBPyConnection, major: int, minor: int) -> dict[str, dict]:
    rows = con.execute(
        f"SELECT stage, n, mean_ns, {', '.join(_PCTS)} FROM stage_stats WHERE level = 'device' "
        f"AND {_where(major, minor)}"
    ).fetchall()
    names = ["n", "mean_ns", *_PCTS]
    return {r[0]: dict(zip(names, r[1:], strict=True)) for r in rows}


def _stages_in(
    con: duckdb.DuckDBPyConnection, major: int, minor: int, windows: list[tuple[int, int]]
) -> dict[str, dict[str, float]]:
    """Stage statistics (bio_stage_ns, as stage_stats) of the bios completing in windows."""
    if not windows:
        return {}
    inside = " OR ".join(f"(c_time_ns BETWEEN {int(a)} AND {int(b)})" for a, b in windows)
    rows = con.execute(f"""
        SELECT stage_name(stage), count(ns), avg(ns), quantile_disc(ns, [0.5, 0.99]), max(ns)
        FROM (SELECT unnest(bio_stage_codes()) AS stage,
                     unnest(bio_stage_ns(g_time_ns, i_time_ns, d_time_ns, m_time_ns, merged,
                                           q_time_ns, d2c_ns, q2c_ns)) AS ns
              FROM bios WHERE {_where(major, minor)} AND ({inside}))
        WHERE ns IS NOT NULL GROUP BY 1""").fetchall()
    return {
        stage: {"n": n, "mean_ns": mean, "p50_ns": q[0], "p99_ns": q[1], "max_ns": mx}
        for stage, n, mean, q, mx in rows
    }


def _hist(con: duckdb.DuckDBPyConnection, major: int, minor: int) -> dict[str, dict[str, list]]:
    rows = con.execute(
        "SELECT stage, op_class, lo_ns, hi_ns, n FROM latency_hist WHERE stage IN ('D2C', 'Q2C') "
        f"AND op_class <> '*' AND {_where(major, minor)} ORDER BY ALL"
    ).fetchall()
    out: dict[str, dict[str, list]] = {"D2C": {}, "Q2C": {}}
    for stage, op, lo, hi, n in rows:
        out[stage].setdefault(op, []).append((lo, hi, n))
    return out


_TOP = """
SELECT coalesce(comm, '?') AS process, count(*) AS ios,
       count(*) FILTER (op_class(op, flags, sector) = 'read') AS reads,
       count(*) FILTER (op_class(op, flags, sector) = 'write') AS writes,
       count(*) FILTER (op_class(op, flags, sector) = 'discard') AS discards,
       count(*) FILTER (op_class(op, flags, sector) = 'flush') AS flushes,
       count(*) FILTER (op_class(op, flags, sector) = 'other') AS others,
       bool_or(is_observer(comm)) AS observer,
       quantile_disc(q2c_ns, 0.5) AS q2c_p50_ns, quantile_disc(q2c_ns, 0.99) AS q2c_p99_ns,
       max(q2c_ns) AS q2c_max_ns, quantile_disc(d2c_ns, 0.99) AS d2c_p99_ns
FROM bios WHERE {where} GROUP BY 1
"""


def _top(con: duckdb.DuckDBPyConnection, major: int, minor: int, order: str) -> list[dict]:
    sql = _TOP.format(where=_where(major, minor))
    return _rows(con, f"{sql} ORDER BY {order}, process LIMIT {TOP_N}")


def _errors(con: duckdb.DuckDBPyConnection, major: int, minor: int) -> int:
    row = con.execute(
        f"SELECT count(*) FROM requests WHERE error <> 0 AND {_where(major, minor)}"
    ).fetchall()
    return int(row[0][0]) if row else 0


def _spectra(con: duckdb.DuckDBPyConnection, major: int, minor: int) -> dict[str, Spectrum]:
    """Periodograms and bursts of the device's series and of the user series (no device)."""
    mine = f"(({_where(major, minor)}) OR dev_major IS NULL)"
    grams = con.execute(
        f"SELECT series, period_ns, z2 FROM periodogram WHERE {mine} ORDER BY series, period_ns"
    ).fetchnumpy()
    starts = con.execute(
        f"SELECT series, start_ns FROM bursts WHERE {mine} ORDER BY series, start_ns"
    ).fetchnumpy()
    out: dict[str, Spectrum] = {}
    for name in dict.fromkeys([*grams["series"].tolist(), *starts["series"].tolist()]):
        sel, bsel = grams["series"] == name, starts["series"] == name
        out[name] = Spectrum(
            name,
            ns_to_s(np.asarray(grams["period_ns"][sel], dtype=np.float64)),
            np.asarray(grams["z2"][sel], dtype=np.float64),
            np.asarray(starts["start_ns"][bsel], dtype=np.int64),
        )
    return out


def _findings(con: duckdb.DuckDBPyConnection, major: int, minor: int) -> dict[str, Any]:
    where = _where(major, minor)
    verdict = _rows(con, f"SELECT * FROM writeback_verdict WHERE {where}")
    try:
        writeback = _rows(con, f"SELECT * FROM writeback_events WHERE {where} ORDER BY end_ns")
    except duckdb.Error:  # no writeback log in this capture
        writeback = []
    return {
        "spikes": _rows(con, f"SELECT * FROM spikes WHERE {where} ORDER BY spike_id"),
        "episodes": _rows(con, f"SELECT * FROM episodes WHERE {where} ORDER BY episode_id"),
        "verdict": verdict[0] if verdict else None,
        "periods": _rows(
            con,
            f"SELECT * FROM periods WHERE ({where}) OR dev_major IS NULL ORDER BY p_value, series",
        ),
        "writeback": writeback,
    }


def load_report(dataset: Dataset) -> Report:
    """Read an analysed dataset into the report model."""
    manifest = dataset.manifest
    doc = dict(manifest.doc)
    warnings = list(manifest.warnings)
    con = dataset.con
    checks = crosscheck(con, set(manifest.tables))
    matched = {r["dev"]: r["disk"] for r in checks.get("biosnoop") or [] if r["dev"]}
    names = device_names(con, doc, matched)
    counts = {c["dev"]: c for c in device_summary(con)}
    devices = []
    for d in manifest.devices:
        key = f"{d.major},{d.minor}"
        if key not in counts:  # a device with events but no IO (only notes): nothing to plot
            continue
        devices.append(_device(con, (d.major, d.minor), d, counts[key], checks, names))
        devices[-1].warnings = [w for w in warnings if w.startswith(f"device {key}:")]
    files = _which_files(con)
    global_warnings = [w for w in warnings if not w.startswith("device ")]
    return Report(dataset.path, doc, dataset.clock, devices, global_warnings, files)


def _which_files(con: duckdb.DuckDBPyConnection) -> dict[str, Any] | None:
    """The files the IO went to, when the dataset has a file map (file_extents)."""
    from blkscope.analyze.file_usage import During, file_usage
    from blkscope.analyze.views import relations

    if "bio_files" not in relations(con):
        return None
    return file_usage(con, During(), top=TOP_N)


def _device(
    con: duckdb.DuckDBPyConnection,
    dev: tuple[int, int],
    entry: DeviceEntry,
    counts: dict[str, Any],
    checks: dict[str, Any],
    names: dict[tuple[int, int], DeviceName],
) -> Device:
    major, minor = dev
    bins = chart_series.time_bins(con, dev)
    found = _findings(con, major, minor)
    windows = [(e["start_ns"], e["end_ns"]) for e in found["episodes"]]
    return Device(
        major=major,
        minor=minor,
        name=names.get(dev),
        first_ns=entry.first_ns or 0,
        last_ns=entry.last_ns or 0,
        counts=counts,
        errors=_errors(con, major, minor),
        bins=bins,
        d2c=chart_series.latency_band(con, dev, bins, "d2c"),
        q2c=chart_series.latency_band(con, dev, bins, "q2c"),
        rates=chart_series.op_rates(con, dev, bins),
        observer_rates=chart_series.op_rates(con, dev, bins, observer=True),
        heatmap=chart_series.heatmap(con, dev),
        user=chart_series.user_series(con),
        depth=chart_series.depth_bins(con, dev, bins),
        stages=_stage_rows(con, major, minor),
        episode_stages=_stages_in(con, major, minor, windows) if windows else None,
        hist=_hist(con, major, minor),
        sizes=chart_series.io_distributions(con, dev),
        lba=chart_series.lba_map(con, dev, bins),
        top_count=_top(con, major, minor, "ios DESC"),
        top_latency=_top(con, major, minor, "q2c_p99_ns DESC NULLS LAST"),
        spectra=_spectra(con, major, minor),
        crosscheck={
            log: next((r for r in rows or [] if r["dev"] == f"{major},{minor}"), None)
            for log, rows in checks.items()
        },
        **found,
    )
