"""Findings for the report: spikes and periods when computed, writeback events when ingested,
and the periodogram of writeback IO bursts, which the report can always compute itself."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from blkscope.analyze import periodicity
from blkscope.analyze.findings import compute_findings
from blkscope.analyze.views import query_table

# Who issues the IO decides the series: the flusher threads, and ext4's journal.
SERIES_FILTERS = {
    "kworker_writes": "(process LIKE 'kworker/u%' OR process LIKE 'flush-%') AND op = 'W'",
    "jbd2_writes": "process LIKE 'jbd2/%'",
}
BURST_GAP_S = 0.5


@dataclass
class Findings:
    """What is known beyond the raw tables; None means that part was not computed."""

    spikes: list[dict[str, Any]] | None
    periods: list[dict[str, Any]] | None
    periods_source: str  # 'findings': the analysis' periods table
    writeback: list[dict[str, Any]] | None
    spectra: dict[tuple[int, int], list[Spectrum]] = field(default_factory=dict)


@dataclass(frozen=True)
class Spectrum:
    """Rayleigh Z² over candidate periods for one series of bursts."""

    series: str
    period_s: np.ndarray
    z2: np.ndarray
    bursts: int
    burst_starts_ns: np.ndarray  # trace ns where each burst of the series began


def _rows(table: pa.Table | None) -> list[dict[str, Any]] | None:
    return None if table is None else table.to_pylist()


def _stored(con: duckdb.DuckDBPyConnection, manifest: dict[str, Any], name: str) -> pa.Table | None:
    if name not in manifest.get("tables", {}):
        return None
    return query_table(con, f"SELECT * FROM {name} ORDER BY ALL")  # stable bytes in the page


def _series_times(con: duckdb.DuckDBPyConnection, dev: tuple[int, int], where: str) -> np.ndarray:
    rows = con.execute(
        "SELECT coalesce(q_time_ns, g_time_ns, first_d_time_ns) AS t FROM requests "
        f"WHERE dev_major = {dev[0]} AND dev_minor = {dev[1]} AND ({where}) AND t IS NOT NULL "
        "ORDER BY t"
    ).fetchnumpy()
    return np.asarray(rows["t"], dtype=np.int64)


def spectra(
    con: duckdb.DuckDBPyConnection, dev: tuple[int, int], span: tuple[int, int]
) -> list[Spectrum]:
    """Bursts and Z² periodogram of each writeback-like series of a device (the periods
    themselves come from the analysis' periods table).

    The periodogram is empty when there are under 3 bursts or the span is under 3 s.
    """
    out = []
    span_s = (span[1] - span[0]) / 1e9
    longest = span_s / 3
    for series, where in SERIES_FILTERS.items():
        times = _series_times(con, dev, where)
        starts = periodicity.bursts(times, BURST_GAP_S)
        if starts.size == 0:
            continue
        freqs = np.arange(1 / longest, 1.0, 1 / (10 * span_s)) if longest > 1.0 else np.zeros(0)
        if starts.size < 3 or freqs.size == 0:
            freqs = np.zeros(0)
        z2, _ = periodicity._z2((starts - span[0]) / 1e9, freqs)
        out.append(Spectrum(series, 1 / freqs, z2, int(starts.size), starts))
    return out


def load_findings(
    dataset: Path,
    con: duckdb.DuckDBPyConnection,
    manifest: dict[str, Any],
    devices: list[tuple[int, int, int, int]],
) -> Findings:
    """Spikes/periods from the dataset or compute_findings; spectra per (major, minor).

    devices holds (major, minor, first_ns, last_ns).
    """
    spikes, periods = _stored(con, manifest, "spikes"), _stored(con, manifest, "periods")
    if spikes is None or periods is None:  # analysed before the findings step existed
        spikes, periods = compute_findings(dataset)
    by_device: dict[tuple[int, int], list[Spectrum]] = {}
    for major, minor, first, last in devices:
        by_device[(major, minor)] = spectra(con, (major, minor), (first, last))
    writeback = _stored(con, manifest, "writeback")
    return Findings(
        spikes=_rows(spikes),
        periods=_rows(periods),
        periods_source="findings",
        writeback=_rows(writeback),
        spectra=by_device,
    )
