"""Everything the report shows for one device, read from an analysed dataset's tables: the page
draws these and computes nothing the analysis already stored."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from blkscope.analyze.crosscheck import crosscheck
from blkscope.analyze.device_summary import device_summary
from blkscope.analyze.devices import DeviceName, device_names
from blkscope.dataset import Dataset
from blkscope.reports import chart_series
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


@dataclass(kw_only=True)
class DeviceFindings:
    """One device's numbers and findings: what summary.json and the table of devices without
    charts show, read in a few queries for all devices together."""

    major: int
    minor: int
    name: DeviceName | None
    first_ns: int
    last_ns: int
    counts: dict[str, Any]  # blkscope.analyze.summary.device_summary entry
    errors: int
    stages: dict[str, dict[str, Any]]  # stage -> n, mean_ns, p50/p90/p99/p999/max
    spikes: list[dict[str, Any]]
    episodes: list[dict[str, Any]]
    verdict: dict[str, Any] | None
    periods: list[dict[str, Any]]
    # this device's rows of blkscope.analyze.crosscheck (biosnoop / iostat agreement), or None
    # for a log the dataset lacks or that did not match this device
    crosscheck: dict[str, dict[str, Any] | None]
    warnings: list[str] = field(default_factory=list)
    # events missing from the trace (gaps in its sequence numbers), None when it has none
    missing_events: int | None = None

    @property
    def name_text(self) -> str:
        """'vda (254,0)', or '254,0' when the name is unknown."""
        return f"{self.name.name} ({self.major},{self.minor})" if self.name else self.dev

    @property
    def dev(self) -> str:
        """major,minor as blkparse prints it."""
        return f"{self.major},{self.minor}"


@dataclass(kw_only=True)
class Device(DeviceFindings):
    """A device drawn in full: its findings and every chart's series."""

    bins: chart_series.Bins
    d2c: chart_series.Band
    q2c: chart_series.Band
    rates: dict[str, tuple[Any, Any]]  # the workload's IO (the observer's left out)
    observer_rates: dict[str, tuple[Any, Any]]  # the capture's own tools' IO (is_observer)
    heatmap: dict[str, chart_series.HeatCells]  # latency_heatmap by stage
    user: list[chart_series.UserSeries]  # every user series (the application's own log)
    depth: dict[str, chart_series.Depth]  # depth_bins per level
    episode_stages: dict[str, dict[str, float]] | None
    hist: dict[str, dict[str, list[tuple[int, int, int]]]]  # stage -> op -> (lo, hi, n)
    sizes: dict[str, dict[str, list[tuple[int, int, int]]]]  # io_dist metric -> op -> rows
    lba: chart_series.LbaMap
    top_count: list[dict[str, Any]]
    top_latency: list[dict[str, Any]]
    spectra: dict[str, Spectrum]  # by series
    writeback: list[dict[str, Any]]  # this device's writeback timeline (writeback_events)


@dataclass
class Report:
    """A whole dataset's report content."""

    dataset: Path
    manifest: dict[str, Any]
    clock: WallClock
    devices: list[Device]  # drawn in full: the CHARTED devices with the most IO
    warnings: list[str]  # the dataset's completeness warnings
    files: dict[str, Any] | None = None  # blkscope.analyze.file_usage.file_usage, when mapped
    others: list[DeviceFindings] = field(default_factory=list)  # the rest, in one table

    @property
    def every_device(self) -> list[DeviceFindings]:
        """Every device with IO, in major,minor order."""
        return sorted([*self.devices, *self.others], key=lambda d: (d.major, d.minor))


def _where(major: int, minor: int) -> str:
    return f"dev_major = {int(major)} AND dev_minor = {int(minor)}"


def _rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[dict[str, Any]]:
    rel = con.execute(sql)
    names = [d[0] for d in rel.description]
    return [dict(zip(names, r, strict=True)) for r in rel.fetchall()]


def _by_device(rows: list[dict[str, Any]]) -> dict[tuple[int, int], list[dict[str, Any]]]:
    out: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for r in rows:
        out.setdefault((r["dev_major"], r["dev_minor"]), []).append(r)
    return out


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
        WHERE ns IS NOT NULL GROUP BY 1 ORDER BY 1""").fetchall()
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


def _errors(con: duckdb.DuckDBPyConnection) -> dict[tuple[int, int], int]:
    rows = con.execute(
        "SELECT dev_major, dev_minor, count(*) FROM requests WHERE error <> 0 GROUP BY ALL"
    ).fetchall()
    return {(major, minor): int(n) for major, minor, n in rows}


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


def _writeback(con: duckdb.DuckDBPyConnection, major: int, minor: int) -> list[dict[str, Any]]:
    try:
        return _rows(
            con, f"SELECT * FROM writeback_events WHERE {_where(major, minor)} ORDER BY end_ns"
        )
    except duckdb.Error:  # no writeback log in this capture
        return []


def _findings(con: duckdb.DuckDBPyConnection) -> dict[tuple[int, int], dict[str, Any]]:
    """Per device: its spikes, episodes, writeback verdict and periods (the user series', which
    have no device, with every device's)."""
    spikes = _by_device(_rows(con, "SELECT * FROM spikes ORDER BY spike_id"))
    episodes = _by_device(_rows(con, "SELECT * FROM episodes ORDER BY episode_id"))
    verdicts = _by_device(_rows(con, "SELECT * FROM writeback_verdict"))
    periods = _rows(con, "SELECT * FROM periods ORDER BY p_value, series")
    devices = set(spikes) | set(episodes) | set(verdicts)
    devices |= {(p["dev_major"], p["dev_minor"]) for p in periods if p["dev_major"] is not None}
    return {
        dev: {
            "spikes": spikes.get(dev, []),
            "episodes": episodes.get(dev, []),
            "verdict": verdicts[dev][0] if dev in verdicts else None,
            "periods": [
                p
                for p in periods
                if p["dev_major"] is None or (p["dev_major"], p["dev_minor"]) == dev
            ],
        }
        for dev in devices
    }


# Devices drawn in full, those with the most bios: each costs its charts and a dozen queries,
# so a trace of 3,000 devices of one IO each draws these and lists the rest in a table.
CHARTED = 16


def load_report(dataset: Dataset) -> Report:
    """Read an analysed dataset into the report model: every device's findings, and the
    charts of the CHARTED devices with the most bios."""
    manifest = dataset.manifest
    doc = dict(manifest.doc)
    warnings = list(manifest.warnings)
    con = dataset.con
    checks = crosscheck(con, set(manifest.tables))
    matched = {r["dev"]: r["disk"] for r in checks.get("biosnoop") or [] if r["dev"]}
    names = device_names(con, doc, matched)
    counts = {c["dev"]: c for c in device_summary(con)}
    missing = (doc.get("reconciliation") or {}).get("missing_events") or {}
    found, errors = _findings(con), _errors(con)
    nothing = {
        "spikes": [],
        "episodes": [],
        "verdict": None,
        "periods": _rows(
            con, "SELECT * FROM periods WHERE dev_major IS NULL ORDER BY p_value, series"
        ),
    }
    by_dev: dict[str, list[str]] = {}
    for w in warnings:
        if w.startswith("device ") and ":" in w:
            by_dev.setdefault(w[len("device ") : w.index(":")], []).append(w)
    every = []
    for d in manifest.devices:
        key = f"{d.major},{d.minor}"
        if key not in counts:  # a device with events but no IO (only notes): nothing to plot
            continue
        dev = (d.major, d.minor)
        every.append(
            DeviceFindings(
                major=d.major,
                minor=d.minor,
                name=names.get(dev),
                first_ns=d.first_ns or 0,
                last_ns=d.last_ns or 0,
                counts=counts[key],
                errors=errors.get(dev, 0),
                stages=_stages(counts[key]["stages"]),
                crosscheck={
                    log: next((r for r in rows or [] if r["dev"] == key), None)
                    for log, rows in checks.items()
                },
                warnings=by_dev.get(key, []),
                missing_events=missing.get(key),
                **found.get(dev, nothing),
            )
        )
    busiest = sorted(every, key=lambda f: (-int(f.counts["queued"]), f.major, f.minor))
    drawn = {(f.major, f.minor) for f in busiest[:CHARTED]}
    devices = [_device(con, f) for f in every if (f.major, f.minor) in drawn]
    others = [f for f in every if (f.major, f.minor) not in drawn]
    files = _which_files(con)
    global_warnings = [w for w in warnings if not w.startswith("device ")]
    return Report(dataset.path, doc, dataset.clock, devices, global_warnings, files, others)


def _stages(stats: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """stage -> n, mean_ns and the percentiles, from device_summary's stage statistics."""
    return {stage: {k: v.get(k) for k in ("n", "mean_ns", *_PCTS)} for stage, v in stats.items()}


def _which_files(con: duckdb.DuckDBPyConnection) -> dict[str, Any] | None:
    """The files the IO went to, when the dataset has a file map (file_extents)."""
    from blkscope.analyze.file_usage import During, file_usage
    from blkscope.analyze.views import relations

    if "bio_files" not in relations(con):
        return None
    return file_usage(con, During(), top=TOP_N)


def _device(con: duckdb.DuckDBPyConnection, found: DeviceFindings) -> Device:
    """A device's findings with every chart's series."""
    major, minor = dev = (found.major, found.minor)
    bins = chart_series.time_bins(con, dev)
    windows = [(e["start_ns"], e["end_ns"]) for e in found.episodes]
    return Device(
        **{f.name: getattr(found, f.name) for f in fields(DeviceFindings)},
        bins=bins,
        d2c=chart_series.latency_band(con, dev, bins, "d2c"),
        q2c=chart_series.latency_band(con, dev, bins, "q2c"),
        rates=chart_series.op_rates(con, dev, bins),
        observer_rates=chart_series.op_rates(con, dev, bins, observer=True),
        heatmap=chart_series.heatmap(con, dev),
        user=chart_series.user_series(con),
        depth=chart_series.depth_bins(con, dev, bins),
        episode_stages=_stages_in(con, major, minor, windows) if windows else None,
        hist=_hist(con, major, minor),
        sizes=chart_series.io_distributions(con, dev),
        lba=chart_series.lba_map(con, dev, bins),
        top_count=_top(con, major, minor, "ios DESC"),
        top_latency=_top(con, major, minor, "q2c_p99_ns DESC NULLS LAST"),
        spectra=_spectra(con, major, minor),
        writeback=_writeback(con, major, minor),
    )
