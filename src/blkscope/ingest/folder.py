"""Ingest a whole capture folder: block events plus every recognised log, on one clock."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from blkscope.errors import BlkscopeError, InputFormatError
from blkscope.files.attach import CAPTURE_MAP, read_capture_map
from blkscope.ingest.block_events import Progress, build_manifest, write_blkparse, write_blktrace
from blkscope.ingest.capture_doc import capture_section
from blkscope.ingest.detect import FORMAT_NAMES, Detected, detect
from blkscope.ingest.duplicates import (
    Fingerprint,
    events_fingerprint,
    first_events,
    first_events_how,
)
from blkscope.ingest.logs.registry import PARSERS
from blkscope.ingest.logs.spool import drop_pages, spooling
from blkscope.ingest.sources import Source, iter_chunks, read_block
from blkscope.ingest.timeline.clock_model import (
    ClockHints,
    LogSource,
    TraceZero,
    read_clock_pair,
    resolve_trace_zero,
    source_offset,
    with_t_ns,
)
from blkscope.ingest.timeline.completeness import note_cpu_count
from blkscope.ingest.timeline.digest import TraceDigest
from blkscope.schemas import TABLES
from blkscope.store.manifest import MANIFEST, is_dataset
from blkscope.store.writer import DatasetWriter

# Text formats of block events: blkparse, and the tracepoint texts read into the same events.
BLOCK_TEXT = ("blkparse", "ftrace", "trace-cmd", "perf")
_TEXT_NAMES = {
    "blkparse": "blkparse text",
    "ftrace": "ftrace text",
    "trace-cmd": "trace-cmd report",
    "perf": "perf script",
}
_PER_CPU = re.compile(r"\.blktrace\.(\d+)(?:\.[A-Za-z0-9]+)?$")
_BTT_AVG = re.compile(r"^=+ All Devices =+$", re.M)
_PAIRS = re.compile(r"\A(?:[\d.]+ [\d.]+\n)+\Z")
_PROC_VMSTAT = re.compile(r"\A\d+\.\d+ \w+=\d+ \w+=\d+")
_CMDLINES = re.compile(r"\A(?:\d+ \S.*\n)+\Z")
# Files detect_format does not know but ingest still reads.
_UNKNOWN_FORMATS = {"clock hint": "clock_pair", "capture manifest": "capture_json"}
# the spilled side logs' folder inside the new version (empty and removed before the commit)
SPOOL_FOLDER = ".spool"
# rows per write of a side-log table into the dataset
WRITE_ROWS = 1 << 18
TIMELINE = "ns since the trace's first block event (events.time_ns)"
_OF_BINARIES = " of the blktrace binaries, which carry the absolute clock"


@dataclass
class Entry:
    """One file of the capture folder and what ingest makes of it."""

    name: str
    path: str
    fmt: str | None
    role: str
    reason: str = ""
    # skipped, and something the capture meant to say is lost with it (a log that does not
    # parse, a link out of the folder...): a warning on every output, not only a line in the
    # skipped list
    lost: bool = False
    # the file, opened once to recognise it: its reader continues from there
    found: Detected | None = field(default=None, repr=False, compare=False)
    # a blkparse text skipped as the binaries' own: its first events (None: it has no text), to
    # hold against theirs
    text_events: Fingerprint | None = field(default=None, repr=False, compare=False)

    @property
    def source(self) -> Source:
        """The open source of this file, for its one reader."""
        if self.found is None:  # only regular files are recognised, and read
            raise InputFormatError(self.path, "not a regular file")
        return self.found.source

    def head(self) -> str:
        """The file's first 4 KiB as text ("" when it has none or cannot be read)."""
        return self.found.text() if self.found is not None else ""

    def skip(self, reason: str, lost: bool = True) -> None:
        """Leave this file out, saying why."""
        self.role, self.reason, self.lost = "skipped", reason, lost


def _unknown_reason(name: str, head: str) -> tuple[str, str]:
    # (role, reason) of a file detect_format does not know.
    if read_clock_pair(head) is not None:
        return "clock hint", "MONO_NS WALL_NS clock pair"
    if _BTT_AVG.search(head):
        return "skipped", "btt output, not an input"
    if name == CAPTURE_MAP:
        return "file map", "blkscope capture's file map -> file_extents"
    if name.endswith(".json") and '"blkscope-capture"' in head:
        return "capture manifest", "blkscope capture manifest (sysctls kept)"
    if _PROC_VMSTAT.match(head):
        return "skipped", "/proc/vmstat counter samples: blkscope has no parser for them yet"
    if "\x00" in head:
        return "skipped", "binary, not a format blkscope reads"
    whole = head[: head.rfind("\n") + 1]
    if whole and _PAIRS.match(whole):
        return "skipped", "two-column numbers (btt data output), not an input"
    if whole and _CMDLINES.match(whole):
        return "skipped", "pid -> process name table, not a time series"
    if not head:
        return "skipped", "empty or unreadable"
    return "skipped", UNKNOWN_REASON


def _not_a_file(name: str, path: Path) -> Entry:
    """A folder entry that is no regular file: a link to nothing, a FIFO, a socket, a device,
    or a link to a folder (whose files, inside the capture folder, are read where they are)."""
    if path.is_symlink() and not path.exists():
        return Entry(name, str(path), None, "skipped", "a symbolic link to nothing: not read", True)
    if path.is_dir():
        return Entry(name, str(path), None, "skipped", "a link to a folder: read where it is")
    return Entry(
        name, str(path), None, "skipped", "not a regular file (a FIFO, socket or device)", True
    )


def _pick_per_cpu_set(binaries: list[Entry]) -> list[Entry]:
    # One trace is one NAME.blktrace.N set; any other blktrace stream (another set, or a merged
    # `blkparse -d` dump of the same events) would count every event twice.
    sets: dict[str, list[Entry]] = {}
    for e in binaries:
        m = _PER_CPU.search(e.name)
        if m is not None:
            sets.setdefault(e.name[: m.start()], []).append(e)
    if not sets:
        return binaries
    name, chosen = max(sets.items(), key=lambda kv: len(kv[1]))
    for e in binaries:
        if e not in chosen:
            e.role = "skipped"
            e.reason = f"blktrace stream outside the per-CPU set {name}.blktrace.N (a merged "
            e.reason += "dump or another trace): its events would be counted twice"
    chosen.sort(key=lambda e: int(_PER_CPU.search(e.name).group(1)))  # type: ignore[union-attr]
    return chosen


OUTSIDE_LINK_REASON = "a symbolic link out of the capture folder: not read"
UNKNOWN_REASON = "unknown format"
# Reasons of the skipped files whose content is lost to the dataset (not a file ingest knows is
# no input: btt's output, the pid table, a dataset, the text of the binaries).
_LOST_REASONS = (
    OUTSIDE_LINK_REASON,
    UNKNOWN_REASON,
    "binary, not a format blkscope reads",
    "unreadable",
)


def _inside(path: Path, root: Path) -> bool:
    """Whether path, with every link in it followed, stays under root (itself resolved)."""
    try:
        return path.resolve().is_relative_to(root)
    except (OSError, RuntimeError):  # a link loop
        return False


def _walk(folder: Path) -> list[Path]:
    """Files and links under folder, sorted; links to folders are listed, never entered (one
    to / would list the whole machine)."""
    found = []
    for top, dirs, files in os.walk(folder):
        here = Path(top)
        found += [here / name for name in files]
        found += [here / name for name in dirs if (here / name).is_symlink()]
    return sorted(found)


def survey(folder: Path) -> list[Entry]:
    """Classify every file under `folder` (sorted, hidden files ignored) by its content. The
    files ingest reads stay open (`Entry.source`) until `close_entries`."""
    if not folder.is_dir():
        raise InputFormatError(str(folder), "not a folder")
    entries: list[Entry] = []
    try:
        _classify(folder, entries)
        for e in entries:
            if e.role == "skipped" and e.fmt == "blkparse" and e.reason.endswith(_OF_BINARIES):
                chunk = _first_chunk(e)
                e.text_events = first_events(chunk) if chunk else None
    except BaseException:
        close_entries(entries)
        raise
    for e in entries:
        if e.found is not None and e.role == "skipped":  # (the others are read, then closed)
            e.found.close()
    return entries


def close_entries(entries: list[Entry]) -> None:
    """Close every file survey left open."""
    for e in entries:
        if e.found is not None:
            e.found.close()


def _classify(folder: Path, entries: list[Entry]) -> None:
    """survey's work, appending to entries as it goes (so that what it opened is closed if it
    raises)."""
    root = folder.resolve()
    datasets = {
        p.parent for p in _walk(folder) if p.name == MANIFEST and _inside(p, root)
        and is_dataset(p.parent)
    } - {folder}  # fmt: skip
    hidden = set()
    for path in _walk(folder):
        rel = path.relative_to(folder)
        first_hidden = next((i for i, part in enumerate(rel.parts) if part.startswith(".")), None)
        if first_hidden is not None:
            # named once per hidden file or folder (.git holds thousands), never read
            top = Path(*rel.parts[: first_hidden + 1]).as_posix()
            if top not in hidden:
                hidden.add(top)
                whole = top + ("/" if first_hidden + 1 < len(rel.parts) else "")
                entries.append(Entry(whole, str(folder / top), None, "skipped", "hidden: not read"))
            continue
        if not _inside(path, root):
            # A capture comes from another machine: a link in it may name any file of this one
            # (/etc/shadow, another user's trace). Named, never read.
            entry = Entry(rel.as_posix(), str(path), None, "skipped", OUTSIDE_LINK_REASON, True)
            entries.append(entry)
            continue
        if not path.is_file():
            entries.append(_not_a_file(rel.as_posix(), path))
            continue
        inside = [d for d in datasets if d in path.parents]
        if inside:
            # A dataset written into the capture folder: say so once, not per Parquet file.
            if path.name == MANIFEST:
                name = inside[0].relative_to(folder).as_posix() + "/"
                entries.append(Entry(name, str(inside[0]), None, "skipped", "a blkscope dataset"))
            continue
        found = detect(str(path))
        fmt = found.fmt
        if fmt is None:
            role, reason = _unknown_reason(rel.name, found.text())
            if reason == "empty or unreadable":
                reason = "empty" if found.readable else "unreadable"
            fmt = _UNKNOWN_FORMATS.get(role)
        elif fmt in BLOCK_TEXT or fmt == "blktrace":
            role, reason = "block events", FORMAT_NAMES[fmt]
        else:
            role, reason = "side log", FORMAT_NAMES[fmt]
        lost = role == "skipped" and reason in _LOST_REASONS
        if role == "skipped":  # never read: let go of it now
            found.close()
        entries.append(Entry(rel.as_posix(), str(path), fmt, role, reason, lost, found))
    if not entries:
        raise InputFormatError(
            str(folder), "the folder holds no files", hint="point at a capture folder"
        )
    binaries = _pick_per_cpu_set([e for e in entries if e.fmt == "blktrace"])
    for e in entries:
        if e.fmt in BLOCK_TEXT and binaries:
            e.role = "skipped"
            e.reason = f"{_TEXT_NAMES[e.fmt]}{_OF_BINARIES}"
    texts = [e.name for e in entries if e.role == "block events" and e.fmt in BLOCK_TEXT]
    if len(texts) > 1:
        # Each text counts from its own first event: two texts are two timelines.
        raise InputFormatError(
            str(folder),
            f"several block event texts ({', '.join(texts)}): a capture folder holds one trace",
            hint="ingest them as files instead: blkscope ingest FILE... -o DATASET",
        )
    if not any(e.role == "block events" for e in entries):
        raise InputFormatError(
            str(folder),
            "no block events: neither blktrace per-CPU files nor blkparse text",
            hint="add trace.blktrace.N files or blkparse.txt (blkparse -i trace -o blkparse.txt)",
        )


def _read_once(entries: list[Entry], duplicates: list[dict[str, str]]) -> None:
    """Per-CPU files the decoder read once because another holds their records: skipped."""
    by_path = {d["path"]: d for d in duplicates}
    for e in entries:
        if e.path in by_path:
            e.skip(by_path[e.path]["reason"], lost=False)


def _compare_texts(entries: list[Entry], binaries: Fingerprint) -> None:
    """The blkparse text beside the binaries is skipped as their text: say whether its events
    are theirs (compared by content); a text of other events is named as lost."""
    for e in entries:
        if e.role != "skipped" or e.fmt != "blkparse" or not e.reason.endswith(_OF_BINARIES):
            continue
        if e.text_events == binaries:  # (None, no text, is no match)
            e.reason += first_events_how(binaries)
        else:
            e.skip(
                "blkparse text whose events are not the blktrace binaries' (its first events "
                "differ): not read, as a capture folder holds one trace; ingest it on its own"
            )


def _first_chunk(e: Entry) -> bytes:
    try:
        source = e.source
    except BlkscopeError:
        return b""
    try:
        return next(iter_chunks(source), b"")
    except BlkscopeError:
        return b""
    finally:
        source.close()


def _tracepoint_clock(capture: dict[str, Any] | None, doc: dict[str, Any]) -> dict[str, Any] | None:
    """The monotonic zero of tracepoint text that blkscope capture recorded on trace_clock mono."""
    if (
        capture is not None
        and doc.get("clock_base_ns") is not None
        and capture.get("block_source") == "tracepoints"
        and capture.get("trace_clock") == "mono"
    ):
        return {
            "base_time_ns": doc["clock_base_ns"],
            "how": "tracepoint text on trace_clock mono: first event's time",
        }
    return None


def _parse_logs(entries: list[Entry], strict: bool) -> list[LogSource]:
    logs = []
    for e in entries:
        if e.role != "side log" or e.fmt not in PARSERS:
            continue
        try:
            logs.append(LogSource(e.name, e.fmt, PARSERS[e.fmt](e.source)))
        except BlkscopeError as exc:
            if strict:
                raise
            e.skip(f"{FORMAT_NAMES[e.fmt]} that does not parse: {exc}")
    return logs


def _read_capture(entries: list[Entry], strict: bool) -> dict[str, Any] | None:
    """The first capture manifest that reads with the expected shape (others are skipped)."""
    found = None
    for e in entries:
        if e.role != "capture manifest":
            continue
        if found is not None:
            e.skip("a second capture manifest")
            continue
        try:
            found = capture_section(e.source)
        except BlkscopeError as exc:
            if strict:
                raise
            e.skip(f"capture manifest that does not parse: {exc}")
    return found


def _read_map(e: Entry) -> pa.Table:
    """blkscope capture's file map, from the file survey opened."""
    source = e.source
    try:
        return read_capture_map(Path(e.path), read_block(source))
    finally:
        source.close()


def _hints(entries: list[Entry], trace_start_ns: int | None, offsets: dict[str, int]) -> ClockHints:
    hints = ClockHints(trace_start_ns=trace_start_ns, offsets_ns=offsets)
    for e in entries:
        if e.role == "clock hint" and hints.pair is None:
            hints.pair, hints.pair_source = read_clock_pair(e.head()), e.name
    return hints


def _shift(doc: dict[str, Any], source: str, table: str, hints: ClockHints) -> None:
    # --offset names a table or a file (with or without its folder): it shifts that source.
    stem = Path(source).name
    for key in (source, stem, stem.split(".")[0], table):
        if key in hints.offsets_ns:
            doc["shift_ns"] = hints.offsets_ns[key]
            doc["offset_ns"] = (doc["offset_ns"] or 0) + hints.offsets_ns[key]
            doc["method"] = f"{doc['method']}; shifted by --offset {key}"
            return


def _write_side_table(ds: DatasetWriter, name: str, table: pa.Table) -> None:
    # a batch at a time, letting go of a spilled table's pages as they are written
    sink = ds.table(name, TABLES[name])
    for batch in table.to_batches(max_chunksize=WRITE_ROWS):
        sink.write(pa.Table.from_batches([batch]))
        drop_pages(table)


def ingest_folder(
    folder: Path,
    out: Path,
    strict: bool = False,
    progress: Progress | None = None,
    trace_start_ns: int | None = None,
    offsets_ns: dict[str, int] | None = None,
) -> dict[str, Any]:
    """Ingest a capture folder into one dataset with every table on the trace timeline; each
    file in it is opened once."""
    entries = survey(folder)
    try:
        hints = _hints(entries, trace_start_ns, dict(offsets_ns or {}))
        return _ingest_entries(folder, entries, out, strict, progress, hints)
    finally:
        close_entries(entries)


def _ingest_entries(
    folder: Path,
    entries: list[Entry],
    out: Path,
    strict: bool,
    progress: Progress | None,
    hints: ClockHints,
) -> dict[str, Any]:
    capture = _read_capture(entries, strict)
    block = [e for e in entries if e.role == "block events"]
    if block[0].fmt == "blktrace":
        block = _pick_per_cpu_set(block)
    with DatasetWriter(out) as ds:
        with spooling(ds.tmp / SPOOL_FOLDER):  # emptied and removed before the commit
            # big side logs spill into the new version's folder until the clock is known
            logs = _parse_logs(entries, strict)
            digest = TraceDigest()
            if block[0].fmt == "blktrace":
                first: list[pa.Table] = []

                def seen(events: pa.Table) -> None:
                    digest.add(events)
                    if not first:
                        first.append(events)

                docs, tally, hints.blktrace = write_blktrace(
                    ds, [e.source for e in block], progress, seen
                )
                _read_once(entries, tally.duplicates)
                _compare_texts(entries, events_fingerprint(first[0]) if first else ())
            else:
                docs, tally = write_blkparse(
                    ds, [e.source for e in block], strict, progress, digest.add
                )
                hints.blktrace = _tracepoint_clock(capture, docs[0])
            zero = resolve_trace_zero(hints, logs, digest)
            sources = []
            for log in logs:
                for name, table in log.tables.items():
                    doc = source_offset(name, table, zero, digest, logs)
                    _shift(doc, log.name, name, hints)
                    _write_side_table(ds, name, with_t_ns(name, table, doc))
                    sources.append({"source": log.name, "table": name, **doc})
        manifest = build_manifest(docs, tally, strict)
        if hints.blktrace is not None and block[0].fmt == "blktrace":
            manifest["ingest"]["error_lines"] = 0
            manifest["trace_clock"] = hints.blktrace
        _describe(manifest, folder, entries, docs, logs, zero, sources)
        # a skipped file that took what the capture meant to say with it: on every output
        manifest["completeness"]["warnings"] += [
            f"{e.name}: {e.reason}" for e in entries if e.role == "skipped" and e.lost
        ]
        for e in entries:
            if e.role == "file map":  # which file owns each sector: read by blkscope files
                manifest.setdefault("tables", {})["file_extents"] = ds.put(
                    "file_extents", _read_map(e)
                )
        if capture is not None:
            manifest["capture"] = capture
            cpus = (capture.get("host") or {}).get("cpus")
            if isinstance(cpus, int) and not isinstance(cpus, bool) and 0 < cpus < 1 << 20:
                note_cpu_count(manifest, cpus)
        ds.commit(manifest)
    return manifest


def _describe(
    manifest: dict[str, Any],
    folder: Path,
    entries: list[Entry],
    block_docs: list[dict[str, Any]],
    logs: list[LogSource],
    zero: TraceZero,
    sources: list[dict[str, Any]],
) -> None:
    by_path = {d["path"]: d for d in block_docs}
    tables = {log.name: log.tables for log in logs}
    inputs = []
    for e in entries:
        if e.role == "skipped":
            continue
        doc: dict[str, Any] = {
            "name": e.name,
            "path": e.path,
            "format": e.fmt,
            "description": e.reason,
            "role": e.role,
        }
        doc.update(by_path.get(e.path, {}))
        if e.name in tables:
            doc["tables"] = {name: t.num_rows for name, t in tables[e.name].items()}
        inputs.append(doc)
    manifest["folder"] = str(folder)
    manifest["inputs"] = inputs
    manifest["skipped"] = [
        {"name": e.name, "reason": e.reason} for e in entries if e.role == "skipped"
    ]
    manifest["clock"] = {
        "timeline": TIMELINE,
        "trace_zero": {
            "monotonic_ns": zero.mono_ns,
            "monotonic_how": zero.mono_how,
            "wall_ns": zero.wall_ns,
            "wall_how": zero.wall_how,
            "wall_minus_monotonic_ns": zero.wall_minus_mono_ns,
            "wall_minus_monotonic_how": zero.pair_how,
            "date_known": zero.date_known,
            "alignments": zero.alignments,
        },
        "sources": [
            {
                "source": "events",
                "table": "events",
                "kind": "relative",
                "offset_ns": 0,
                "method": "defines the timeline",
            },
            *sources,
        ],
    }
