"""One capture into one fleet partition: the task a process-pool worker or a Spark executor runs.

`build_partition` takes and returns plain dicts (picklable, small) and never raises for a bad
capture: its error is the result, so one broken capture never stops the others.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from blkscope.errors import BlkscopeError, DatasetError
from blkscope.fleet import fleet_folder
from blkscope.fleet.names import partition_value
from blkscope.schemas.fleet import (
    CAPTURE_LABELS,
    CAPTURE_SUMMARY,
    CAPTURE_TABLES,
    CAPTURES,
    DIRTY_KNOBS,
)
from blkscope.store.manifest import read_manifest_doc
from blkscope.store.writer import write_parquet_atomic, write_text_atomic

SUMMARY_FILE = "summary.json"


@dataclass
class Job:
    """What to add: a capture folder (or trace, or dataset) as host/capture of fleet."""

    source: str
    fleet: str
    capture: str
    host: str | None = None  # None: capture.json's host.hostname
    labels: list[tuple[str, str]] = field(default_factory=list)


def build_partition(job_doc: dict[str, Any]) -> dict[str, Any]:
    """Ingest and analyse one capture into its partition; the outcome as a JSON-able dict."""
    job = Job(**job_doc)
    started = time.monotonic()
    result: dict[str, Any] = {"source": job.source, "host": job.host, "capture": job.capture}
    fleet = Path(job.fleet)
    staged = fleet_folder.new_staging(fleet)
    try:
        dataset = staged / "partition"
        _make_dataset(Path(job.source), dataset)
        manifest = read_manifest_doc(dataset)
        host = job.host or _host_of(manifest, job.source)
        result["host"] = host
        summary = _write_fleet_tables(dataset, manifest, job)
        where = fleet_folder.publish(dataset, fleet, host, job.capture)
        result.update(
            ok=True,
            partition=str(where),
            events=manifest["events"]["count"],
            ingest_errors=manifest["ingest"]["error_lines"],
            devices=len(summary["devices"]),
        )
    except BlkscopeError as exc:
        result.update(ok=False, error=str(exc), hint=exc.hint)
    except Exception as exc:  # a bug or an input nobody foresaw: this capture fails, not the batch
        result.update(
            ok=False, error=f"internal error: {type(exc).__name__}: {exc}", hint=_BUG_HINT
        )
        result["traceback"] = traceback.format_exc()
    finally:
        shutil.rmtree(staged, ignore_errors=True)
    result["seconds"] = round(time.monotonic() - started, 3)
    return result


_BUG_HINT = "this is a blkscope bug: please report it with the capture"


def _make_dataset(source: Path, dataset: Path) -> None:
    """Ingest (unless source is a dataset already) and analyse, with the report's own steps."""
    from blkscope.dataset import Dataset
    from blkscope.pipeline import ensure_analyzed, ingested
    from blkscope.store.manifest import is_dataset

    if source.is_dir() and is_dataset(source):
        shutil.copytree(source, dataset)
        handle = Dataset(dataset)
    else:
        handle, _ = ingested(source, dataset)
    handle, _ = ensure_analyzed(handle)
    handle.close()


def _host_of(manifest: dict[str, Any], source: str) -> str:
    hostname = ((manifest.get("capture") or {}).get("host") or {}).get("hostname")
    if not hostname:
        raise DatasetError(
            source,
            "capture.json does not name the host",
            hint="pass --host H to say which host it came from",
        )
    return partition_value("host", str(hostname), where=f"{source}: capture.json host.hostname")


def _write_fleet_tables(dataset: Path, manifest: dict[str, Any], job: Job) -> dict[str, Any]:
    """The fleet's tables and summary.json, written into the partition being built."""
    from blkscope.dataset import Dataset
    from blkscope.reports.model import load_report
    from blkscope.reports.summary_json import build_summary

    with Dataset(dataset) as handle:
        summary = build_summary(load_report(handle))
    write_text_atomic(dataset / SUMMARY_FILE, json.dumps(summary, indent=2) + "\n")
    tables = {name: info["rows"] for name, info in manifest["tables"].items()}
    rows = {
        "captures": [_capture_row(manifest, job, tables)],
        "capture_labels": [{"key": k, "value": v} for k, v in job.labels],
        "capture_tables": [{"table_name": n, "rows": r} for n, r in sorted(tables.items())],
        "capture_summary": [_summary_row(d) for d in summary["devices"]],
    }
    schemas = {
        "captures": CAPTURES,
        "capture_labels": CAPTURE_LABELS,
        "capture_tables": CAPTURE_TABLES,
        "capture_summary": CAPTURE_SUMMARY,
    }
    for name, schema in schemas.items():
        table = pa.Table.from_pylist(rows[name], schema=schema)
        write_parquet_atomic(table, dataset / f"{name}.parquet")
    return summary


SIDE_LOG_TABLES = ("writeback", "biosnoop", "histogram", "series", "iostat_log", "iostat_cpu",
                   "vmstat", "meminfo", "partitions")  # fmt: skip


def _capture_row(manifest: dict[str, Any], job: Job, tables: dict[str, int]) -> dict[str, Any]:
    capture = manifest.get("capture") or {}
    zero = (manifest.get("clock") or {}).get("trace_zero") or {}
    wall = zero.get("wall_ns") if zero.get("date_known", True) else None
    events = manifest["events"]
    first, last = events.get("first_time_ns"), events.get("last_time_ns")
    devices = capture.get("devices") or []
    schedulers = [f"{d.get('name') or d.get('dev')}:{d['scheduler']}" for d in devices
                  if d.get("scheduler")]  # fmt: skip
    knobs = capture.get("vm_sysctls") or {}
    row: dict[str, Any] = {
        "source": job.source,
        "start_utc": None if wall is None else _utc(wall),
        "start_wall_ns": wall,
        "duration_ns": None if first is None or last is None else last - first,
        "kernel": (capture.get("host") or {}).get("kernel"),
        "scheduler": ",".join(schedulers) or None,
        "workload": dict(job.labels).get("workload"),
        "events": int(events.get("count") or 0),
        "requests": tables.get("requests", 0),
        "bios": tables.get("bios", 0),
        "ingest_errors": int(manifest["ingest"]["error_lines"]),
        "side_logs": ",".join(t for t in SIDE_LOG_TABLES if t in tables),
    }
    for knob in DIRTY_KNOBS:
        row[knob.replace(".", "_")] = _int_or_none(knobs.get(knob))
    return row


def _utc(wall_ns: int) -> dt.datetime:
    """wall_ns as a naive UTC datetime, to the microsecond (exactly: integer arithmetic)."""
    return dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=wall_ns // 1000)


def _int_or_none(value: Any) -> int | None:
    try:
        number = int(str(value).strip())
    except ValueError:
        return None
    return number if -(1 << 63) <= number < 1 << 63 else None


def _summary_row(dev: dict[str, Any]) -> dict[str, Any]:
    major, minor = (int(x) for x in dev["dev"].split(","))
    verdict = dev.get("writeback_verdict") or {}
    return {
        "dev_major": major,
        "dev_minor": minor,
        "name": dev["name"],
        "ios": dev["ios"],
        "requests": dev["requests"],
        **{f"{s}_{p}_ns": dev[s][f"{p}_ns"] for s in ("d2c", "q2c") for p in ("p50", "p99", "max")},
        "episodes": dev["spikes"],
        "periods": len(dev["periods"]),
        "writeback_explains": verdict.get("explains"),
    }


def job_doc(job: Job) -> dict[str, Any]:
    return asdict(job)
