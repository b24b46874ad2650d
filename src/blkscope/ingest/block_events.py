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

from blkscope.errors import InputFormatError
from blkscope.ingest.blkparse.event_line import past_last_sector
from blkscope.ingest.blkparse.text_stream import BlkparseTextParser, parse_source
from blkscope.ingest.blktrace.decode import DecodedTrace, decode
from blkscope.ingest.blktrace.records import RecordFile, event_inputs, read_records
from blkscope.ingest.codes import first_sector_past_end, past_last_sector_rows
from blkscope.ingest.duplicates import (
    distinct_streams,
    first_events,
    first_events_how,
    same_events,
)
from blkscope.ingest.events_parquet import EventsParquet
from blkscope.ingest.reconcile import SequenceAudit, reconcile
from blkscope.ingest.sources import (
    Input,
    Source,
    Text,
    close_inputs,
    iter_numbered_chunks,
    opened,
)
from blkscope.ingest.timeline.completeness import assess
from blkscope.ingest.tracepoints.tracepoint_text import trace_text_kind
from blkscope.ingest.tracepoints.write_tracepoints import write_trace_text
from blkscope.schemas import (
    BLKPARSE_SUMMARY,
    EVENTS,
    INGEST_ERRORS,
    LAST_PLUGS,
    SCHEMA_VERSION,
    TRACE_CLOCK,
)
from blkscope.store.writer import DatasetWriter
from blkscope.version import __version__

Progress = Callable[..., None]


@dataclass
class _DeviceStats:
    events: int = 0
    by_action: dict[str, int] = field(default_factory=dict)
    first_ns: int | None = None
    last_ns: int | None = None


@dataclass
class EventTally:
    """What ingest counts as it writes the events: per device, per CPU stream (the audit that
    reconciliation reads), blkparse's summary per input, and the inputs read once only."""

    audit: SequenceAudit
    devices: dict[tuple[int, int], _DeviceStats] = field(default_factory=dict)
    summaries: dict[int, pa.Table] = field(default_factory=dict)
    # {path, name, reason, warning}: inputs left out because another holds the same events
    duplicates: list[dict[str, str]] = field(default_factory=list)

    def add(self, events: pa.Table) -> None:
        """Count one batch of events as written."""
        if events.num_rows == 0:
            return
        _tally(self.devices, self.audit.add(events))


def _tally(devices: dict[tuple[int, int], _DeviceStats], groups: list[dict[str, Any]]) -> None:
    for row in groups:
        d = devices.setdefault((row["dev_major"], row["dev_minor"]), _DeviceStats())
        n = row["events"]
        d.events += n
        d.by_action[row["action"]] = d.by_action.get(row["action"], 0) + n
        lo, hi = row["first_time_ns"], row["last_time_ns"]
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
    inputs: Sequence[Input],
    strict: bool = False,
    progress: Progress | None = None,
    on_events: EventsHook | None = None,
    first_id: int = 0,
) -> tuple[list[dict[str, Any]], EventTally]:
    """Stream text inputs (blkparse, or tracepoint text: each recognised from its content)
    into an open dataset; return input docs and what was counted. An input whose first events
    are another's (the same text twice, plain and compressed) is read once."""
    tally = EventTally(SequenceAudit(per_input=True))
    input_docs = []
    sinks = _TextSinks(ds, tally, on_events)
    seen: dict[tuple[tuple[Any, ...], ...], str] = {}
    input_id = first_id
    for given in inputs:
        source = opened(given)
        path = source.path
        try:
            chunks = iter_numbered_chunks(source)
            numbered_first = next(chunks, None)
            first = None if numbered_first is None else bytes(numbered_first[1])
            kind = trace_text_kind(_head_text(first))
            fingerprint = first_events(first or b"") if kind is None else ()
            if fingerprint in seen:
                how = first_events_how(fingerprint)
                tally.duplicates.append(same_events(path, seen[fingerprint], how))
                continue
            if fingerprint:
                seen[fingerprint] = path
            chunks = itertools.chain([] if numbered_first is None else [numbered_first], chunks)
            on_chunk = None
            if progress is not None:
                on_chunk = functools.partial(progress, path, total=source.size)
            if kind is None:
                doc = _write_blkparse_input(sinks, source, chunks, input_id, strict, on_chunk)
            else:
                texts = (bytes(chunk) for _, chunk in chunks)
                doc = write_trace_text(sinks, source, texts, input_id, kind, strict, on_chunk)
            input_docs.append(doc)
            input_id += 1
        finally:
            source.close()
    write_last_plugs(ds, tally)
    return input_docs, tally


def write_last_plugs(ds: DatasetWriter, tally: EventTally) -> None:
    """Store each task's last P time as the audit counted it over every event written: the
    pass needs it before it starts, and a scan of the events for it costs analyze more."""
    ds.table("last_plugs", LAST_PLUGS).write(tally.audit.last_plugs())


def _head_text(first: bytes | None) -> str:
    head = (first or b"")[:65536]
    if b"\x00" in head[:4096]:
        return ""
    return head.decode("utf-8", "replace")


@dataclass
class _TextSinks:
    """Where text inputs go: the three tables, the device tally and the caller's hook."""

    ds: DatasetWriter
    tally: EventTally
    on_events: EventsHook | None

    def __post_init__(self) -> None:
        self.events = self.ds.table("events", EVENTS, open_writer=EventsParquet)
        self.errors = self.ds.table("ingest_errors", INGEST_ERRORS)
        self.summary = self.ds.table("blkparse_summary", BLKPARSE_SUMMARY)

    def write_events(self, table: pa.Table) -> None:
        self.events.write(table)
        self.tally.add(table)
        if self.on_events is not None:
            self.on_events(table)

    def write_errors(self, errors: list[dict[str, Any]]) -> None:
        # (most chunks have none: the sink writes no empty table, so none is made)
        if errors:
            self.errors.write(pa.Table.from_pylist(errors, schema=INGEST_ERRORS))


def _write_blkparse_input(
    sinks: _TextSinks,
    source: Source,
    chunks: Iterator[tuple[int, Text]],
    input_id: int,
    strict: bool,
    on_chunk: Callable[[int], None] | None,
) -> dict[str, Any]:
    parser = BlkparseTextParser(source.path, input_id, strict)
    lines = events_n = errors_n = unstored_n = summary_n = 0
    order_before = len(sinks.tally.devices)
    for chunk in parse_source(parser, source, on_chunk, chunks):
        sinks.write_events(chunk.events)
        sinks.write_errors(chunk.errors)
        lines += chunk.lines
        events_n += chunk.events.num_rows
        errors_n += len(chunk.errors) + chunk.unstored_errors
        unstored_n += chunk.unstored_errors
        summary_n += chunk.summary_lines
    order = list(sinks.tally.devices)[order_before:] or list(sinks.tally.devices)
    summary = _summary_table(parser.summary.rows, input_id, order)
    sinks.summary.write(summary)
    sinks.tally.summaries[input_id] = summary
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
    inputs: Sequence[Input], out: Path, strict: bool = False, progress: Progress | None = None
) -> dict[str, Any]:
    """Parse blkparse text inputs into the dataset folder `out`; return its manifest."""
    with DatasetWriter(out) as ds:
        input_docs, tally = write_blkparse(ds, inputs, strict, progress)
        manifest = build_manifest(input_docs, tally, strict)
        ds.commit(manifest)
    return manifest


def ingest_events(
    inputs: Sequence[str], out: Path, strict: bool = False, progress: Progress | None = None
) -> dict[str, Any]:
    """Ingest blkparse text, or blktrace per-CPU binaries (files or a NAME prefix)."""
    opened_inputs, binary = event_inputs(inputs)
    try:
        if binary:
            return ingest_blktrace(opened_inputs, out, progress=progress, strict=strict)
        return ingest_blkparse(opened_inputs, out, strict=strict, progress=progress)
    finally:
        close_inputs(opened_inputs)


_EVENT_SLICE = 1 << 20


def write_blktrace(
    ds: DatasetWriter,
    paths: Sequence[Input],
    progress: Progress | None = None,
    on_events: EventsHook | None = None,
) -> tuple[list[dict[str, Any]], EventTally, dict[str, Any]]:
    """Stream one trace's per-CPU blktrace files into an open dataset; a file holding only
    records another one holds (a copy: `trace.blktrace.0` beside `trace.blktrace.0.zst`) is
    read once.

    Returns the input docs, what was counted and the manifest's trace_clock section.
    """
    files = []
    for given in paths:
        files.append(read_records(given))
        if progress:
            progress(files[-1].path, files[-1].raw_bytes, files[-1].raw_bytes)
    tally = EventTally(SequenceAudit(per_input=False))
    files, tally.duplicates = distinct_streams(files)
    trace = decode(files, list(range(len(files))))
    events_sink = ds.table("events", EVENTS, open_writer=EventsParquet)
    counts: dict[int, int] = {}
    for chunk in trace.slices(_EVENT_SLICE):
        _refuse_past_last_sector(chunk, files)
        events_sink.write(chunk)
        tally.add(chunk)
        if on_events is not None:
            on_events(chunk)
        per_input = chunk.group_by("input_id").aggregate([("input_id", "count")])
        for i, n in zip(
            per_input["input_id"].to_pylist(),
            per_input["input_id_count"].to_pylist(),
            strict=True,
        ):
            counts[i] = counts.get(i, 0) + n
    _refuse_damaged_notes(trace, files)
    ds.table("trace_clock", TRACE_CLOCK).write(_clock_table(trace))
    write_last_plugs(ds, tally)
    input_docs = [
        {
            "id": i,
            "path": f.path,
            "format": "blktrace",
            "compression": f.compression,
            "bytes": f.raw_bytes,
            "sha256": f.sha256,
            "records": len(f.offsets),
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
    return input_docs, tally, clock_doc


# trace_clock's cpu column is int32; a record's CPU field is a u32.
_LARGEST_CPU = (1 << 31) - 1


def _refuse_damaged_notes(trace: DecodedTrace, files: Sequence[RecordFile]) -> None:
    """A timestamp note whose CPU no column holds refuses the trace, as the decoder refuses an
    event record's (it checks every record's time, but only events' CPU). Which file held the
    note is not known (its CPU is the damaged field), so every file is named."""
    for note in trace.clock.wall_notes:
        if note["cpu"] > _LARGEST_CPU:
            raise InputFormatError(
                ", ".join(f.path for f in files),
                f"a timestamp note (wall clock {note['wall_ns']} ns): cpu {note['cpu']:,} is out "
                f"of range (largest {_LARGEST_CPU:,})",
                hint="the file is damaged there; blkparse would print a wrong number",
            )


def _refuse_past_last_sector(events: pa.Table, files: Sequence[RecordFile]) -> None:
    """A damaged record's sector past the end of any block device refuses its file, as the
    decoder refuses a field that does not fit its column (text inputs record such a line)."""
    bad = past_last_sector_rows(events)
    if bad is None:
        return
    row = events.filter(bad).slice(0, 1).to_pylist()[0]
    name, start, length = first_sector_past_end(row)
    raise InputFormatError(
        files[row["input_id"]].path,
        f"the record of CPU {row['cpu']}, sequence {row['seq']} ({row['action']} at "
        f"{row['time_ns']} ns): {past_last_sector(name, start, length)}",
        hint="the file is damaged there; blkparse would print a wrong number",
    )


def ingest_blktrace(
    paths: Sequence[Input], out: Path, progress: Progress | None = None, strict: bool = False
) -> dict[str, Any]:
    """Read the per-CPU blktrace files of one trace into the dataset folder `out`."""
    with DatasetWriter(out) as ds:
        input_docs, tally, clock_doc = write_blktrace(ds, paths, progress)
        manifest = build_manifest(input_docs, tally, strict)
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


def build_manifest(inputs: list[dict[str, Any]], tally: EventTally, strict: bool) -> dict[str, Any]:
    """The manifest of a dataset from its input docs and what was counted. With strict, a
    trace that disagrees with itself (reconcile) is an error here, before the commit."""
    devices = tally.devices
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
    names = {int(i["id"]): Path(str(i.get("path"))).name for i in inputs if "id" in i}
    reconciliation = reconcile(tally.audit, tally.summaries, names)
    completeness = assess(inputs, by_action, device_docs)
    completeness["warnings"] += [d["warning"] for d in tally.duplicates]
    completeness["warnings"] += reconciliation["warnings"]
    if strict and reconciliation["warnings"]:
        raise InputFormatError(
            str(inputs[0].get("path")) if inputs else "input",
            f"the trace disagrees with itself: {reconciliation['warnings'][0]}",
            hint="drop --strict to ingest it anyway (the warning stays on every output)",
        )
    manifest = {
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
        "completeness": completeness,
        "reconciliation": reconciliation,
    }
    if tally.duplicates:
        manifest["skipped"] = [{"name": d["name"], "reason": d["reason"]} for d in tally.duplicates]
    return manifest
