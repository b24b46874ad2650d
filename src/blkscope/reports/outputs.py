"""JSON Schemas of every command's --json output (`report --json` prints the summary), so that
a machine reading them can validate what it gets: `blkscope schema COMMAND` prints one, and
tests/cli/test_cli_formats.py holds each command's real output to its schema (and fails when a
command gains --json without one here).

Rows that come from a declared Arrow schema take their keys, types and docs from it; documents
built from dataclasses take theirs from the dataclass; the rest are written as shapes (as in
blkscope.store.jsonshape), once, here."""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

import pyarrow as pa

from blkscope.frames import trace_instants
from blkscope.schemas import EPISODES, PERIODS, SPIKES, STAGE_STATS, WRITEBACK_VERDICT
from blkscope.schemas.json_schema import TRACE_START, document, of_dataclass, row_schema
from blkscope.store.jsonshape import of_shape


def _object(props: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": props,
        "required": list(props),
        "additionalProperties": False,
    }


def _rows(item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": item}


_CHECK = _object(
    {
        "target": {"type": "string", "description": "dataset, capture or trace judged"},
        "device": {
            "type": "string",
            "description": "the device's name (vda) when the dataset knows it, else dev",
        },
        "dev": {"type": "string", "description": "'major,minor'"},
        "metric": {"type": "string", "description": "e.g. d2c.p99, spikes"},
        "threshold": {"type": "string", "description": "the limit as written, with its unit"},
        "limit": {"type": "integer", "description": "the limit: ns for latencies, else a count"},
        "actual": {"type": ["integer", "null"], "description": "null: the dataset cannot tell"},
        "passed": {"type": "boolean"},
    }
)


_CHECKS = _object(
    {
        "passed": {"type": "boolean"},
        "failed": {"type": "integer"},
        "checks": _rows(_CHECK),
    }
)
# Any query's rows: one object per row, its columns as keys (values of any JSON type).
_SQL_ROWS = _rows({"type": "object", "description": "one row: column name -> value"})
_STAT_COLUMNS = ("n", "min_ns", "mean_ns", "p50_ns", "p90_ns", "p99_ns", "p999_ns", "max_ns")
_COUNTS = ("queued", "merged_bios", "split_bios", "partial_bios", "requests", "dispatches",
           "completions", "requeues", "partial_requests", "orphan_completions")  # fmt: skip
_OPT_NUMBER = (float, int, type(None))
# One device of `analyze --json` (blkscope.analyze.summary.device_summary, named by the CLI).
_DEVICE_SUMMARY = {
    "dev": str,
    "name": (str, type(None)),
    **dict.fromkeys(_COUNTS, int),
    "merge_ratio": (float, int),
    "depth": {str: {"max": (int, type(None)), "mean": _OPT_NUMBER}},
    "ops": {
        str: {
            "queued": int,
            "dispatches": int,
            "merge_ratio": _OPT_NUMBER,
            "split_ratio": _OPT_NUMBER,
            "requeues": int,
            "sequential_share": _OPT_NUMBER,
        }
    },
}
# `files --json` (blkscope.files.usage.file_usage).
_SHARE = {"path": str, "kind": str, "bytes": int, "share": float}
_FILES = {
    "during": str,
    "bytes": int,
    "writeback_bytes": int,
    "by_kind": [{"kind": str, "bytes": int, "share": float}],
    "files": [
        {
            "path": str,
            "kind": str,
            "inode": (int, type(None)),
            "ios": int,
            "reads": int,
            "writes": int,
            "bytes": int,
            "read_bytes": int,
            "write_bytes": int,
            "other_bytes": int,
            "writeback_bytes": int,
            "q2c_p50_ns": (int, type(None)),
            "q2c_p90_ns": (int, type(None)),
            "q2c_p99_ns": (int, type(None)),
            "processes": [{"comm": str, "bytes": int}],
            "share": float,
            "writeback_share": float,
        }
    ],
    "directories": [{"path": str, "files": int, "bytes": int, "writeback_bytes": int, "ios": int}],
    "writeback": [_SHARE],
    "episodes": [
        {
            "dev_major": int,
            "dev_minor": int,
            "episode_id": int,
            "start_ns": int,
            "end_ns": int,
            "bytes": int,
            "files": [_SHARE],
        }
    ],
}
# One row of the partition_io view (analyze/sql/partition_io.sql says what each column is).
_PARTITION_IO = {
    "dev_major": (int, type(None)), "dev_minor": (int, type(None)), "partition": str,
    "disk": str, "start_sector": int, "sectors": int, "bios": int, "bytes": int, "writes": int,
    "q2c_p99_ns": (int, type(None)), "q2c_max_ns": (int, type(None)),
}  # fmt: skip


def _fleet_add() -> dict[str, Any]:
    """`fleet add --json`: each capture's outcome; an added one says where and how big, a
    failed one why (the keys each may carry are listed, the four every one has required)."""
    opt_str = (str, type(None))
    outcome = of_shape(
        {
            "source": str,
            "host": opt_str,
            "capture": str,
            "ok": bool,
            "partition": str,
            "events": (int, type(None)),
            "ingest_errors": int,
            "devices": int,
            "seconds": float,
            "error": str,
            "hint": opt_str,
            "traceback": str,
        },
    )
    outcome["required"] = ["source", "host", "capture", "ok"]
    return _object({"fleet": {"type": "string"}, "added": {"type": "integer"},
                    "failed": {"type": "integer"}, "captures": _rows(outcome)})  # fmt: skip


def _analyze() -> dict[str, Any]:
    device = of_shape(_DEVICE_SUMMARY)
    stats = pa.schema([STAGE_STATS.field(c) for c in _STAT_COLUMNS])
    device["properties"]["stages"] = {
        "type": "object",
        "description": "per stage (Q2Q ... Q2C): device-level statistics, as in stage_stats",
        "additionalProperties": row_schema(stats),
    }
    device["required"].append("stages")
    return _object(
        {
            "dataset": {"type": "string"},
            "trace_start": TRACE_START,
            "warnings": _rows({"type": "string"}),
            "devices": _rows(device),
        }
    )


def _manifest() -> dict[str, Any]:
    """`ingest --json`: the dataset's manifest.json; the keys the analysis reads are checked
    (blkscope.store.manifest.MANIFEST_SHAPE), the others are shown only."""
    from blkscope.store.manifest import MANIFEST_SHAPE

    body = of_shape(MANIFEST_SHAPE, required=False)
    body["properties"]["kind"] = {"const": "blkscope-dataset"}
    body["required"] = ["kind", "tables", "events", "devices", "ingest"]
    return body


def _compare() -> dict[str, Any]:
    from blkscope.analyze.compare import CaptureP99, LatencyChange, PeriodChange, SpikeCount

    return _object(
        {
            "before": {"type": "string"},
            "after": {"type": "string"},
            "statistics": of_shape({str: str}),
            "latency": _rows(of_dataclass(LatencyChange)),
            "capture_p99": _rows(of_dataclass(CaptureP99)),
            "spikes": _rows(of_dataclass(SpikeCount)),
            "periods": _rows(of_dataclass(PeriodChange)),
            "significant": _rows(of_dataclass(LatencyChange)),
        }
    )


def _crosscheck() -> dict[str, Any]:
    from blkscope.analyze.crosscheck import DiskAgreement, IostatAgreement

    def null_or_rows(item: dict[str, Any]) -> dict[str, Any]:
        return {"anyOf": [{"type": "null"}, _rows(item)], "description": "null: no such log"}

    return _object(
        {
            "biosnoop": null_or_rows(of_dataclass(DiskAgreement)),
            "iostat": null_or_rows(of_dataclass(IostatAgreement)),
        }
    )


@functools.cache
def output_schemas() -> dict[str, dict[str, Any]]:
    """Command (as typed after `blkscope`) -> the JSON Schema of its --json output."""
    summary = json.loads((resources.files("blkscope.reports") / "summary.schema.json").read_text())
    return {
        "ingest": document("blkscope ingest --json", _manifest()),
        "analyze": document("blkscope analyze --json", _analyze()),
        "sql": document("blkscope sql --json", _SQL_ROWS),
        "crosscheck": document("blkscope crosscheck --json", _crosscheck()),
        "compare": document("blkscope compare --json", _compare()),
        "partitions": document("blkscope partitions --json", _rows(of_shape(_PARTITION_IO))),
        "files": document("blkscope files --json", of_shape(_FILES)),
        "fleet add": document("blkscope fleet add --json", _fleet_add()),
        "fleet sql": document("blkscope fleet sql --json", _SQL_ROWS),
        "fleet check": document("blkscope fleet check --json", _CHECKS),
        "report": summary,
        "export": document(
            "blkscope export --json",
            of_shape(
                {
                    "path": str,
                    "requests": int,
                    "episodes": int,
                    "writeback": int,
                    "user_samples": int,
                    "bytes": int,
                }
            ),
        ),
        "spikes": document(
            "blkscope spikes --json",
            _object(
                {
                    "trace_start": TRACE_START,
                    # '<name>_utc' beside each trace instant, as reports.table_rows adds them
                    "episodes": _rows(row_schema(EPISODES, trace_instants("episodes"))),
                    "spikes": _rows(row_schema(SPIKES, trace_instants("spikes"))),
                    "writeback": _rows(row_schema(WRITEBACK_VERDICT)),
                }
            ),
        ),
        "periods": document("blkscope periods --json", _rows(row_schema(PERIODS, ("phase_ns",)))),
        "check": document("blkscope check --json", _CHECKS),
    }
