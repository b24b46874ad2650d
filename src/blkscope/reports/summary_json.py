"""summary.json: the report's headline numbers in a stable, documented schema."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# The report's model (DuckDB, numpy) is imported by what builds a summary, not by `check`,
# which reads the constants here before it finds its targets.
if TYPE_CHECKING:
    from blkscope.reports.model import DeviceFindings, Report

SUMMARY_FORMAT = "blkscope-summary"
SUMMARY_VERSION = 4
PERCENTILES = ["p50", "p90", "p99", "p999", "max"]

# The schema, key by key; docs/report.md ("summary.json") repeats it. Bump SUMMARY_VERSION on any
# change that is not a pure addition. Version 2: `spikes` counts latency episodes (spikes of any
# metric in one window), `worst_spike` became `worst_episode`, and `cause_shares` are shares of
# episodes; times carry their UTC wall-clock form beside them. Version 3: causes come from the
# closed set (concepts.CAUSES), the worst episode names its victim and evidence, and the
# writeback verdict carries the flusher's bytes and its rule. Version 4: `skipped` (the capture
# files not read) and `devices[].lost_events`; the warnings say where the trace disagrees with
# itself.
SUMMARY_SCHEMA: dict[str, str] = {
    "format": f"always '{SUMMARY_FORMAT}'",
    "version": f"schema version, {SUMMARY_VERSION}",
    "inputs": "list of input paths the dataset was ingested from",
    "events": "event lines ingested",
    "malformed_lines": "lines recorded in ingest_errors",
    "trace_start": "{wall_ns, utc, date_known, host_zone}: the trace's time 0 on the wall clock (nulls when unknown)",
    "warnings": "what is missing from the trace or disagrees with it (per-CPU files, completions, sequence numbers, blkparse's own summary, capture files not read), as sentences",
    "skipped": "[{name, reason}]: the files of the capture folder not read, and why (empty for a file input)",
    "spikes_computed": "always true (kept from version 1)",
    "devices": "one object per device with IO, in major,minor order:",
    "devices[].dev": "'major,minor'",
    "devices[].name": "the device's name (vda, nvme0n1, sda1) from capture.json, a partition listing or the biosnoop log; null when unknown",
    "devices[].ios": "bios queued (Q)",
    "devices[].requests": "requests reconstructed (D..C)",
    "devices[].completions": "C events",
    "devices[].requeues": "R events",
    "devices[].errors": "requests completed with a non-zero error",
    "devices[].merged_bios": "bios merged into another request",
    "devices[].split_bios": "bios split by X",
    "devices[].d2c": "{p50_ns, p90_ns, p99_ns, p999_ns, max_ns, n} of D2C (driver+device), int ns",
    "devices[].q2c": "same for Q2C (queue to completion)",
    "devices[].spikes": "number of latency episodes: windows in which one or more metrics spiked",
    "devices[].metric_spikes": "number of spikes counted per metric (q2c, user:<series>), as the spikes table holds them",
    "devices[].periods": "[{series, period_ns, knobs: [str], method}] significant periods, most significant first; method 'periodogram' or 'writeback_events' (bursts overlap the writeback log's periodic events)",
    "devices[].periods_source": "'findings': from the analysis' periods table",
    "devices[].cause_shares": "{cause: share of episodes}",
    "devices[].worst_episode": "{start_ns, end_ns, start_utc, end_utc, metrics, worst_metric, peak_ns, peak_utc, peak_latency_ns, victim, victim_pid, cause, reason, competing, pages_written, writeback_reasons, throttle_messages, processes} or null: the episodes table's row",
    "devices[].writeback_verdict": "{episodes, episodes_with_writeback, episodes_by_chance, coincidence_p_value, median_lag_ns, tail_latency_share, writeback_time_share, flusher_bytes, explains, rule, sentence}: the writeback_verdict table's row",
    "devices[].lost_events": "{missing, orphan_completions}: events missing from the trace (gaps in its sequence numbers; null when the input has none) and completions with no issue (C without D), as blkparse counts skips",
    "devices[].crosscheck": "{biosnoop, iostat}: this device's rows of `blkscope crosscheck --json`, each null without the log",
}
_EPISODE_KEYS = ["start_ns", "end_ns", "metrics", "worst_metric", "peak_ns", "peak_latency_ns",
                 "victim", "victim_pid", "cause", "reason", "competing", "pages_written",
                 "writeback_reasons", "throttle_messages", "processes"]  # fmt: skip


def _latency(dev: DeviceFindings, stage: str) -> dict[str, int | None]:
    s = dev.stages.get(stage, {})
    out: dict[str, int | None] = {
        f"{p}_ns": None if s.get(f"{p}_ns") is None else int(s[f"{p}_ns"]) for p in PERCENTILES
    }
    out["n"] = int(s.get("n") or 0)
    return out


def device_summary(dev: DeviceFindings, report: Report) -> dict[str, Any]:
    """One device's entry."""
    from blkscope.reports.text import cause_shares, worst_episode

    c = dev.counts
    worst = worst_episode(dev.episodes)
    verdict = dev.verdict or {}
    worst_doc = None
    if worst is not None:
        worst_doc = {k: worst[k] for k in _EPISODE_KEYS}
        for key in ("start", "end", "peak"):
            worst_doc[f"{key}_utc"] = report.clock.iso(worst[f"{key}_ns"])
    return {
        "dev": dev.dev,
        "name": dev.name.name if dev.name else None,
        "ios": int(c["queued"]),
        "requests": int(c["requests"]),
        "completions": int(c["completions"]),
        "requeues": int(c["requeues"]),
        "errors": dev.errors,
        "merged_bios": int(c["merged_bios"]),
        "split_bios": int(c["split_bios"]),
        "d2c": _latency(dev, "D2C"),
        "q2c": _latency(dev, "Q2C"),
        "spikes": len(dev.episodes),
        "metric_spikes": len(dev.spikes),
        "periods": [
            {
                "series": p["series"],
                "period_ns": int(p["period_ns"]),
                "knobs": [k.strip() for k in p["knobs"].split(",") if k.strip()],
                "method": p["method"],
            }
            for p in dev.periods
        ],
        "periods_source": "findings",
        "cause_shares": cause_shares(dev.episodes),
        "worst_episode": worst_doc,
        "writeback_verdict": {
            k: v for k, v in verdict.items() if k not in ("dev_major", "dev_minor")
        }
        or None,
        "lost_events": {
            "missing": dev.missing_events,
            "orphan_completions": int(c.get("orphan_completions") or 0),
        },
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
        "trace_start": report.clock.as_doc(),
        "warnings": [*report.warnings, *(w for d in report.every_device for w in d.warnings)],
        "skipped": [
            {"name": str(e.get("name")), "reason": str(e.get("reason"))}
            for e in m.get("skipped", [])
        ],
        "spikes_computed": True,
        "devices": [device_summary(d, report) for d in report.every_device],
    }
