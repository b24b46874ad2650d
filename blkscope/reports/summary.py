"""summary.json: the report's headline numbers in a stable, documented schema."""

from __future__ import annotations

from typing import Any

from blkscope.reports.model import Device, Report
from blkscope.reports.text import cause_shares, worst_spike

SUMMARY_FORMAT = "blkscope-summary"
SUMMARY_VERSION = 1
PERCENTILES = ["p50", "p90", "p99", "p999", "max"]

# The schema, key by key; README.md ("summary.json") repeats it. Bump SUMMARY_VERSION on any
# change that is not a pure addition.
SUMMARY_SCHEMA: dict[str, str] = {
    "format": f"always '{SUMMARY_FORMAT}'",
    "version": f"schema version, {SUMMARY_VERSION}",
    "inputs": "list of input paths the dataset was ingested from",
    "events": "event lines ingested",
    "malformed_lines": "lines recorded in ingest_errors",
    "spikes_computed": "false when the findings step was not available (spike fields are null)",
    "devices": "one object per device with IO, in major,minor order:",
    "devices[].dev": "'major,minor'",
    "devices[].ios": "bios queued (Q)",
    "devices[].requests": "requests reconstructed (D..C)",
    "devices[].completions": "C events",
    "devices[].requeues": "R events",
    "devices[].errors": "requests completed with a non-zero error",
    "devices[].merged_bios": "bios merged into another request",
    "devices[].split_bios": "bios split by X",
    "devices[].d2c": "{p50_ns, p90_ns, p99_ns, p999_ns, max_ns, n} of D2C (driver+device), int ns",
    "devices[].q2c": "same for Q2C (queue to completion)",
    "devices[].spikes": "number of latency spikes, null when not computed",
    "devices[].periods": "[{series, period_ns, knobs: [str], method}] significant periods, most significant first; method 'periodogram' or 'writeback_events' (bursts overlap the writeback log's periodic events)",
    "devices[].periods_source": "'findings': from the analysis' periods table",
    "devices[].cause_shares": "{cause: share of spikes} (null when not computed)",
    "devices[].worst_spike": "{start_ns, end_ns, metric, peak_latency_ns, p99_ns, cause, processes} or null",
    "devices[].crosscheck": "{biosnoop, iostat}: this device's rows of `blkscope crosscheck --json`, each null without the log",
}


def _latency(dev: Device, stage: str) -> dict[str, int | None]:
    s = dev.stages.get(stage, {})
    out: dict[str, int | None] = {
        f"{p}_ns": None if s.get(f"{p}_ns") is None else int(s[f"{p}_ns"]) for p in PERCENTILES
    }
    out["n"] = int(s.get("n") or 0)
    return out


def device_summary(dev: Device, report: Report) -> dict[str, Any]:
    """One device's entry."""
    c = dev.counts
    spikes = dev.spikes if report.spikes_computed else None
    worst = worst_spike(spikes or [])
    keep = ["start_ns", "end_ns", "metric", "peak_latency_ns", "p99_ns", "cause", "processes"]
    return {
        "dev": dev.name,
        "ios": int(c["queued"]),
        "requests": int(c["requests"]),
        "completions": int(c["completions"]),
        "requeues": int(c["requeues"]),
        "errors": dev.errors,
        "merged_bios": int(c["merged_bios"]),
        "split_bios": int(c["split_bios"]),
        "d2c": _latency(dev, "D2C"),
        "q2c": _latency(dev, "Q2C"),
        "spikes": None if spikes is None else len(spikes),
        "periods": [
            {
                "series": p["series"],
                "period_ns": int(p["period_ns"]),
                "knobs": [k.strip() for k in p["knobs"].split(",") if k.strip()],
                "method": p.get("method", "periodogram"),
            }
            for p in dev.periods or []
        ],
        "periods_source": report.periods_source,
        "cause_shares": None if spikes is None else cause_shares(spikes),
        "worst_spike": None if worst is None else {k: worst[k] for k in keep},
        "crosscheck": dev.crosscheck,
    }


def build_summary(report: Report) -> dict[str, Any]:
    """The whole summary.json document (no timestamp: same dataset, same bytes)."""
    m = report.manifest
    return {
        "format": SUMMARY_FORMAT,
        "version": SUMMARY_VERSION,
        "inputs": [i.get("path") for i in m.get("inputs", [])],
        "events": m.get("events", {}).get("count"),
        "malformed_lines": m.get("ingest", {}).get("error_lines", 0),
        "spikes_computed": report.spikes_computed,
        "devices": [device_summary(d, report) for d in report.devices],
    }
