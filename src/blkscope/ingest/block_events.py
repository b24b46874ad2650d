"""Ingest blkparse text inputs into a dataset folder: events, summary, errors, manifest."""

from __future__ import annotations

import datetime as dt
import functools
import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from blkscope.ingest.blkparse.text_stream import BlkparseTextParser, parse_source
from blkscope.ingest.blktrace.decode import DecodedTrace, decode
from blkscope.ingest.blktrace.records import blktrace_inputs, read_records
from blkscope.ingest.sources import Source, iter_chunks, open_source
from blkscope.ingest.timeline.completeness import assess
from blkscope.ingest.tracepoints.tracepoint_text import trace_text_kind
from blkscope.ingest.tracepoints.write_tracepoints import write_trace_text
from blkscope.schemas import (
    BLKPARSE_SUMMARY,
    EVENTS,
    INGEST_ERRORS,
    SCHEMA_VERSION,
    TRACE_CLOCK,
)
from blkscope.store.writer import DatasetWriter
from blkscope.version import __version__

Progress = Callable[..., None]

# Dictionary-encode only the repetitive strings and keep statistics where queries filter:
# integer dictionaries and per-column min/max cost a third of the ingest time for little.
# lz4, not zstd-1 (the other tables' codec): the analysis reads every event, and lz4 decodes
# faster for a larger file (CHANGELOG.md has the measurements).
EVENTS_PARQUET: dict[str, Any] = {
    "compression": "lz4",
    "use_dictionary": ["action", "rwbs", "op", "comm"],
    "write_statistics": ["dev_major", "dev_minor", "time_ns", "sector", "line_no", "input_id"],
    "column_encoding": {c: "DELTA_BINARY_PACKED" for c in ("time_ns", "line_no", "seq")},
}


@dataclass
class _DeviceStats:
    events: int = 0
    by_action: dict[str, int] = field(default_factory=dict)
    first_ns: int | None = None
    last_ns: int | None = None


def _tally(devices: dict[tuple[int, int], _DeviceStats], events: pa.Table) -> None:
    if events.num_rows == 0:
        return
    agg = (
        events.group_by(["dev_major", "dev_minor", "action"])
        .aggregate([("line_no", "count"), ("time_ns", "min"), ("time_ns", "max")])
        .to_pylist()
    )
    for row in agg:
        d = devices.setdefault((row["dev_major"], row["dev_minor"]), _DeviceStats())
        n = row["line_no_count"]
        d.events += n
        d.by_action[row["action"]] = d.by_action.get(row["action"], 0) + n
        lo, hi = row["time_ns_min"], row["time_ns_max"]
        d.first_ns = lo if d.first_ns is None else min(d.first_ns, lo)
        d.last_ns = hi if d.last_ns is None else max(d.last_ns, hi)


def _summary_table(
    rows: list[dict[str, Any]], input_id: int, device_order: list[tuple[int, int]]
) -> pa.Table:
    out = []
    for r in rows:
        major = minor = None
        name = r["device"].strip()
        if "," in name and all(p.strip().isdigit() for p in name.split(",")):
            major, minor = (int(p) for p in name.split(","))
        elif r["group"] < len(device_order) and not r["block"].startswith("process "):
            # (blkparse -s process blocks count all devices together: they have none)
            major, minor = device_order[r["group"]]
        out.append(
            {
                **{k: v for k, v in r.items() if k != "group"},
                "input_id": input_id,
                "dev_major": major,
                "dev_minor": minor,
            }
        )
    return pa.Table.from_pylist(out, schema=BLKPARSE_SUMMARY)


EventsHook = Callable[[pa.Table], None]


def write_blkparse(
    ds: DatasetWriter,
    inputs: Sequence[str],
    strict: bool = False,
    progress: Progress | None = None,
    on_events: EventsHook | None = None,
    first_id: int = 0,
) -> tuple[list[dict[str, Any]], dict[tuple[int, int], _DeviceStats]]:
    """Stream text inputs (blkparse, or tracepoint text: each recognised from its content)
    into an open dataset; return input docs and device stats."""
    devices: dict[tuple[int, int], _DeviceStats] = {}
    input_docs = []
    sinks = _TextSinks(ds, devices, on_events)
    for input_id, path in enumerate(inputs, start=first_id):
        source: Source = open_source(path)
        try:
            chunks = iter_chunks(source)
            first = next(chunks, None)
            kind = trace_text_kind(_head_text(first))
            chunks = itertools.chain([] if first is None else [first], chunks)
            on_chunk = None
            if progress is not None:
                on_chunk = functools.partial(progress, path, total=source.size)
            if kind is None:
                doc = _write_blkparse_input(sinks, source, chunks, input_id, strict, on_chunk)
            else:
                doc = write_trace_text(sinks, source, chunks, input_id, kind, strict, on_chunk)
            input_docs.append(doc)
        finally:
            source.close()
    return input_docs, devices


def _head_text(first: bytes | None) -> str:
    head = (first or b"")[:65536]
    if b"\x00" in head[:4096]:
        return ""
    return head.decode("utf-8", "replace")


@dataclass
class _TextSinks:
    """Where text inputs go: the three tables, the device tally and the caller's hook."""

    ds: DatasetWriter
    devices: dict[tuple[int, int], _DeviceStats]
    on_events: EventsHook | None

    def __post_init__(self) -> None:
        self.events = self.ds.table("events", EVENTS, **EVENTS_PARQUET)
        self.errors = self.ds.table("ingest_errors", INGEST_ERRORS)
        self.summary = self.ds.table("blkparse_summary", BLKPARSE_SUMMARY)

    def write_events(self, table: pa.Table) -> None:
        self.events.write(table)
        _tally(self.devices, table)
        if self.on_events is not None:
            self.on_events(table)

    def write_errors(self, errors: list[dict[str, Any]]) -> None:
        self.errors.write(pa.Table.from_pylist(errors, schema=INGEST_ERRORS))


def _write_blkparse_input(
    sinks: _TextSinks,
    source: Source,
    chunks: Iterator[bytes],
    input_id: int,
    strict: bool,
    on_chunk: Callable[[int], None] | None,
) -> dict[str, Any]:
    parser = BlkparseTextParser(source.path, input_id, strict)
    lines = events_n = errors_n = unstored_n = summary_n = 0
    order_before = len(sinks.devices)
    for chunk in parse_source(parser, source, on_chunk, chunks):
        sinks.write_events(chunk.events)
        sinks.write_errors(chunk.errors)
        lines += chunk.lines
        events_n += chunk.events.num_rows
        errors_n += len(chunk.errors) + chunk.unstored_errors
        unstored_n += chunk.unstored_errors
        summary_n += chunk.summary_lines
    order = list(sinks.devices)[order_before:] or list(sinks.devices)
    sinks.summary.write(_summary_table(parser.summary.rows, input_id, order))
    return {
        "id": input_id,
        "path": source.path,
        "format": "blkparse-text",
        "compression": source.compression,
        "bytes": source.bytes_read,
        "sha256": source.sha256(),
        "lines": lines,
        "event_lines": events_n,
        "summary_lines": summary_n,
        "error_lines": errors_n,
        "error_lines_not_stored": unstored_n,
    }


def ingest_blkparse(
    inputs: Sequence[str], out: Path, strict: bool = False, progress: Progress | None = None
) -> dict[str, Any]:
    """Parse blkparse text inputs into the dataset folder `out`; return its manifest."""
    with DatasetWriter(out) as ds:
        input_docs, devices = write_blkparse(ds, inputs, strict, progress)
        manifest = build_manifest(input_docs, devices, strict)
        ds.commit(manifest)
    return manifest


def ingest_events(
    inputs: Sequence[str], out: Path, strict: bool = False, progress: Progress | None = None
) -> dict[str, Any]:
    """Ingest blkparse text, or blktrace per-CPU binaries (files or a NAME prefix)."""
    binaries = blktrace_inputs(inputs)
    if binaries is None:
        return ingest_blkparse(inputs, out, strict=strict, progress=progress)
    return ingest_blktrace(binaries, out, progress=progress)


_EVENT_SLICE = 1 << 20


def write_blktrace(
    ds: DatasetWriter,
    paths: Sequence[str],
    progress: Progress | None = None,
    on_events: EventsHook | None = None,
) -> tuple[list[dict[str, Any]], dict[tuple[int, int], _DeviceStats], dict[str, Any]]:
    """Stream one trace's per-CPU blktrace files into an open dataset.

    Returns the input docs, the device stats and the manifest's trace_clock section.
    """
    files = []
    for path in paths:
        files.append(read_records(path))
        if progress:
            progress(path, files[-1].raw_bytes, files[-1].raw_bytes)
    trace = decode(files, list(range(len(files))))
    devices: dict[tuple[int, int], _DeviceStats] = {}
    events_sink = ds.table("events", EVENTS, **EVENTS_PARQUET)
    counts: dict[int, int] = {}
    for chunk in trace.slices(_EVENT_SLICE):
        events_sink.write(chunk)
        _tally(devices, chunk)
        if on_events is not None:
            on_events(chunk)
        per_input = chunk.group_by("input_id").aggregate([("input_id", "count")])
        for i, n in zip(
            per_input["input_id"].to_pylist(),
            per_input["input_id_count"].to_pylist(),
            strict=True,
        ):
            counts[i] = counts.get(i, 0) + n
    ds.table("trace_clock", TRACE_CLOCK).write(_clock_table(trace))
    input_docs = [
        {
            "id": i,
            "path": f.path,
            "format": "blktrace",
            "compression": f.compression,
            "bytes": f.raw_bytes,
            "sha256": f.sha256,
            "records": len(f.records),
            "event_records": counts.get(i, 0),
        }
        for i, f in enumerate(files)
    ]
    clock_doc = {
        "base_time_ns": trace.clock.base_time_ns,
        "smallest_record_time_ns": trace.clock.smallest_time_ns,
        "wall_notes": trace.clock.wall_notes,
        "other_notes": trace.other_notes,
        "message_notes": trace.messages,
        "skipped_records_by_action_code": trace.skipped_by_code,
    }
    return input_docs, devices, clock_doc


def ingest_blktrace(
    paths: Sequence[str], out: Path, progress: Progress | None = None
) -> dict[str, Any]:
    """Read the per-CPU blktrace files of one trace into the dataset folder `out`."""
    with DatasetWriter(out) as ds:
        input_docs, devices, clock_doc = write_blktrace(ds, paths, progress)
        manifest = build_manifest(input_docs, devices, strict=False)
        manifest["ingest"]["error_lines"] = 0
        manifest["trace_clock"] = clock_doc
        ds.commit(manifest)
    return manifest


def _clock_table(trace: DecodedTrace) -> pa.Table:
    base = trace.clock.base_time_ns
    rows = [
        {
            "base_time_ns": base,
            "dev_major": n["dev_major"],
            "dev_minor": n["dev_minor"],
            "cpu": n["cpu"],
            "note_time_ns": n["time"],
            "wall_ns": n["wall_ns"],
        }
        for n in trace.clock.wall_notes
    ] or [{"base_time_ns": base}]
    return pa.Table.from_pylist(rows, schema=TRACE_CLOCK)


def build_manifest(
    inputs: list[dict[str, Any]], devices: dict[tuple[int, int], _DeviceStats], strict: bool
) -> dict[str, Any]:
    """The manifest of a dataset from its input docs and per-device event stats."""
    by_action: dict[str, int] = {}
    for d in devices.values():
        for a, n in d.by_action.items():
            by_action[a] = by_action.get(a, 0) + n
    firsts = [d.first_ns for d in devices.values() if d.first_ns is not None]
    lasts = [d.last_ns for d in devices.values() if d.last_ns is not None]
    device_docs = [
        {
            "dev": f"{k[0]},{k[1]}",
            "major": k[0],
            "minor": k[1],
            "events": d.events,
            "by_action": dict(sorted(d.by_action.items())),
            "first_time_ns": d.first_ns,
            "last_time_ns": d.last_ns,
        }
        for k, d in sorted(devices.items())
    ]
    return {
        "kind": "blkscope-dataset",
        "schema_version": SCHEMA_VERSION,
        "blkscope_version": __version__,
        "created_utc": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "inputs": inputs,
        "events": {
            "count": sum(d.events for d in devices.values()),
            "by_action": dict(sorted(by_action.items())),
            "first_time_ns": min(firsts) if firsts else None,
            "last_time_ns": max(lasts) if lasts else None,
        },
        "devices": device_docs,
        "ingest": {
            "strict": strict,
            "error_lines": sum(i.get("error_lines", 0) for i in inputs),
            # past MAX_STORED_ERRORS per input, malformed lines are counted but not stored
            "error_lines_not_stored": sum(i.get("error_lines_not_stored", 0) for i in inputs),
        },
        "completeness": assess(inputs, by_action, device_docs),
    }
