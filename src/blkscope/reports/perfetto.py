"""`blkscope export --perfetto`: an analysed dataset as a Perfetto trace (TrackEvent protobuf),
for users who want every IO as a slice in the Perfetto UI.

Protobuf rather than the Chrome JSON trace format: Perfetto's native format, opened by the UI as
it is, with names interned once per trace instead of repeated as text in every event, typed
fields instead of JSON text, and written packet by packet: the UI's JSON importer must hold and
parse the whole text of a trace whose every IO is an event. What goes in, per device (a parent track named like the page, `vda (254,0)`):
- every request as a slice from its first Q (else G, D, C) to its C, with its stages as
  children (queued: to the first D; requeued: to the last D; device: D to C), on lanes (child
  tracks) so that overlapping requests never share one; a request the trace cut (no C) ends at
  the device's last event;
- the writeback work items of the writeback log (writeback_events), on lanes of their own;
- the latency episodes (episodes table): start, end, cause and the reason sentence;
- each user series (the application's own log) as a counter track, values in ns.
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import duckdb

from blkscope.analyze.crosscheck import crosscheck
from blkscope.analyze.devices import device_names
from blkscope.analyze.views import relations
from blkscope.dataset import Dataset
from blkscope.errors import DatasetError
from blkscope.reports.protobuf_wire import message, string, uint
from blkscope.store.writer import temp_file

# perfetto_trace.proto field numbers
TRACE_PACKET = 1
PKT_TIMESTAMP, PKT_SEQUENCE_ID, PKT_TRACK_EVENT, PKT_INTERNED = 8, 10, 11, 12
PKT_SEQUENCE_FLAGS, PKT_STATE_CLEARED, PKT_TRACK_DESCRIPTOR = 13, 41, 60
SEQ_CLEARED, SEQ_NEEDS_STATE = 1, 2
TD_UUID, TD_NAME, TD_PARENT, TD_COUNTER, TD_RANK, TD_CHILD_ORDERING = 1, 2, 5, 8, 12, 11
CHILD_ORDERING_EXPLICIT = 3
COUNTER_UNIT, UNIT_TIME_NS = 3, 1
TE_TYPE, TE_NAME_IID, TE_TRACK, TE_ANNOTATIONS, TE_COUNTER = 9, 10, 11, 4, 30
SLICE_BEGIN, SLICE_END, INSTANT, COUNTER = 1, 2, 3, 4
DA_NAME_IID, DA_INT, DA_STRING = 1, 4, 6
INTERNED_EVENT_NAMES, INTERNED_ANNOTATION_NAMES = 2, 3
SEQUENCE = 1

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class Exported:
    """What the export wrote."""

    path: Path
    requests: int
    episodes: int
    writeback: int
    user_samples: int
    bytes: int


class _Interned:
    """Names interned once in the trace: iid 1, 2, ... in order of first use."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def __call__(self, name: str) -> int:
        return self.ids.setdefault(name, len(self.ids) + 1)


@dataclass
class _Event:
    """One track event, with the order it takes among events at the same time: ends before
    begins, an outer slice begun before and ended after the ones it holds."""

    ts: int
    order: tuple[int, int]
    body: bytes


class _Trace:
    """The packets of one trace: track descriptors first, then every event in time order."""

    def __init__(self) -> None:
        self.names = _Interned()
        self.annotation_names = _Interned()
        self.tracks: list[bytes] = []
        self.events: list[_Event] = []
        self._uuid = 0

    def track(
        self, name: str, parent: int | None = None, rank: int = 0, counter: bool = False
    ) -> int:
        self._uuid += 1
        body = uint(TD_UUID, self._uuid) + string(TD_NAME, name) + uint(TD_RANK, rank)
        body += uint(TD_CHILD_ORDERING, CHILD_ORDERING_EXPLICIT)
        if parent is not None:
            body += uint(TD_PARENT, parent)
        if counter:
            body += message(TD_COUNTER, uint(COUNTER_UNIT, UNIT_TIME_NS))
        self.tracks.append(message(PKT_TRACK_DESCRIPTOR, body))
        return self._uuid

    def annotations(self, values: dict[str, Any]) -> bytes:
        out = b""
        for name, v in values.items():
            if v is None:
                continue
            body = uint(DA_NAME_IID, self.annotation_names(name))
            body += string(DA_STRING, v) if isinstance(v, str) else uint(DA_INT, int(v))
            out += message(TE_ANNOTATIONS, body)
        return out

    def slice(
        self, track: int, start: int, end: int, name: str, depth: int = 0, **notes: Any
    ) -> None:
        head = uint(TE_TRACK, track) + uint(TE_NAME_IID, self.names(name))
        begin = uint(TE_TYPE, SLICE_BEGIN) + head + self.annotations(notes)
        self.events.append(_Event(int(start), (1, depth), begin))
        self.events.append(_Event(int(end), (0, -depth), uint(TE_TYPE, SLICE_END) + head))

    def counter(self, track: int, ts: int, value: int) -> None:
        body = uint(TE_TYPE, COUNTER) + uint(TE_TRACK, track) + uint(TE_COUNTER, value)
        self.events.append(_Event(int(ts), (2, 0), body))

    def packets(self) -> Iterator[bytes]:
        interned = b"".join(
            message(INTERNED_EVENT_NAMES, uint(1, iid) + string(2, name))
            for name, iid in self.names.ids.items()
        ) + b"".join(
            message(INTERNED_ANNOTATION_NAMES, uint(1, iid) + string(2, name))
            for name, iid in self.annotation_names.ids.items()
        )
        yield (
            uint(PKT_SEQUENCE_ID, SEQUENCE)
            + uint(PKT_STATE_CLEARED, 1)
            + uint(PKT_SEQUENCE_FLAGS, SEQ_CLEARED | SEQ_NEEDS_STATE)
            + message(PKT_INTERNED, interned)
        )
        for descriptor in self.tracks:
            yield uint(PKT_SEQUENCE_ID, SEQUENCE) + descriptor
        self.events.sort(key=lambda e: (e.ts, e.order))
        head = uint(PKT_SEQUENCE_ID, SEQUENCE) + uint(PKT_SEQUENCE_FLAGS, SEQ_NEEDS_STATE)
        for e in self.events:
            yield uint(PKT_TIMESTAMP, e.ts) + head + message(PKT_TRACK_EVENT, e.body)


def _lanes(intervals: list[tuple[int, int]]) -> list[int]:
    """A lane per interval (in the given order, sorted by start) so that no two overlap on
    one lane: the first lane free by then, the fewest lanes an interval graph needs."""
    free: list[tuple[int, int]] = []  # (end, lane)
    out, lanes = [], 0
    for start, end in intervals:
        if free and free[0][0] <= start:
            _, lane = heapq.heappop(free)
        else:
            lane, lanes = lanes, lanes + 1
        heapq.heappush(free, (end, lane))
        out.append(lane)
    return out


def _rows(
    con: duckdb.DuckDBPyConnection, sql: str, params: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    rel = con.execute(sql, params or {})
    names = [d[0] for d in rel.description]
    return [dict(zip(names, r, strict=True)) for r in rel.fetchall()]


_REQUESTS = """
SELECT coalesce(q_time_ns, g_time_ns, first_d_time_ns, c_time_ns) AS start_ns,
       coalesce(c_time_ns, $last) AS end_ns, first_d_time_ns, d_time_ns, c_time_ns,
       CASE WHEN kind = 'data' THEN op_class(op, flags, sector) ELSE kind END AS name,
       process, pid, sector, nsectors, requeues, error, flags
FROM requests WHERE dev_major = $major AND dev_minor = $minor
ORDER BY start_ns, end_ns, d_eid NULLS LAST, c_eid NULLS LAST
"""


def _requests(
    trace: _Trace, con: duckdb.DuckDBPyConnection, dev: tuple[int, int], last_ns: int, parent: int
) -> int:
    rows = _rows(con, _REQUESTS, {"last": int(last_ns), "major": dev[0], "minor": dev[1]})
    spans = [(r["start_ns"], max(r["end_ns"], r["start_ns"])) for r in rows]
    lanes = _lanes(spans)
    tracks = [
        trace.track(f"requests {k + 1:02d}", parent, rank=1 + k)
        for k in range(max(lanes, default=-1) + 1)
    ]
    for r, (start, end), lane in zip(rows, spans, lanes, strict=True):
        track = tracks[lane]
        trace.slice(
            track, start, end, r["name"], process=r["process"], pid=r["pid"], sector=r["sector"],
            sectors=r["nsectors"], rwbs=r["flags"], requeues=r["requeues"] or None,
            error=r["error"] or None, cut_by_trace_end=1 if r["c_time_ns"] is None else None,
        )  # fmt: skip
        # the stages, each inside the request's slice (a child may not outlive its parent)
        first_d, last_d, done = r["first_d_time_ns"], r["d_time_ns"], r["c_time_ns"]
        stages = (("queued", start, first_d), ("requeued", first_d, last_d),
                  ("device", last_d, done))  # fmt: skip
        for name, a, b in stages:
            if a is not None and b is not None and start <= a < b <= end:
                trace.slice(track, a, b, name, depth=1)
    return len(rows)


def _episodes(trace: _Trace, con: duckdb.DuckDBPyConnection, where: str, parent: int) -> int:
    rows = _rows(con, f"SELECT * FROM episodes WHERE {where} ORDER BY start_ns, episode_id")
    if rows:
        track = trace.track("latency episodes", parent, rank=0)
        for e in rows:
            trace.slice(
                track, e["start_ns"], e["end_ns"], f"episode: {e.get('cause')}",
                episode=e.get("episode_id"), reason=e.get("reason"), metrics=e.get("metrics"),
                worst_metric=e.get("worst_metric"), peak_latency_ns=e.get("peak_latency_ns"),
                peak_ns=e.get("peak_ns"),
            )  # fmt: skip
    return len(rows)


def _writeback(trace: _Trace, con: duckdb.DuckDBPyConnection, where: str, parent: int) -> int:
    if "writeback_events" not in relations(con):
        return 0
    rows = _rows(con, f"SELECT * FROM writeback_events WHERE {where} ORDER BY start_ns, end_ns")
    lanes = _lanes([(w["start_ns"], w["end_ns"]) for w in rows])
    tracks = [
        trace.track(f"writeback work {k + 1}", parent, rank=1000 + k)
        for k in range(max(lanes, default=-1) + 1)
    ]
    for w, lane in zip(rows, lanes, strict=True):
        trace.slice(tracks[lane], w["start_ns"], w["end_ns"], "writeback work",
                    pages=w.get("pages"), reason=w.get("reason"))  # fmt: skip
    return len(rows)


def _user_series(trace: _Trace, con: duckdb.DuckDBPyConnection) -> int:
    from blkscope.reports.chart_series import user_series

    samples = 0
    for s in user_series(con):
        if not s.t_ns.size:
            continue
        track = trace.track(f"{s.name} (ns)", counter=True, rank=0)
        for t, v in zip(s.t_ns.tolist(), s.value_ns.tolist(), strict=True):
            trace.counter(track, t, round(v))
        samples += s.t_ns.size
    return samples


def export_perfetto(dataset: Dataset, out: Path, progress: Progress | None = None) -> Exported:
    """Write the dataset's requests, writeback work, episodes and user series as a Perfetto
    trace at out (through a temp name)."""
    con = dataset.con
    manifest = dataset.manifest
    checks = crosscheck(con, set(manifest.tables))  # names the report's way: biosnoop's disks
    matched = {r["dev"]: r["disk"] for r in checks.get("biosnoop") or [] if r["dev"]}
    names = device_names(con, dict(manifest.doc), matched)
    trace = _Trace()
    counts = {"requests": 0, "episodes": 0, "writeback": 0}
    for k, d in enumerate(manifest.devices):
        dev = (d.major, d.minor)
        if progress:
            progress("perfetto", k, len(manifest.devices))
        name = names.get(dev)
        title = f"{name.name} ({d.major},{d.minor})" if name else f"{d.major},{d.minor}"
        parent = trace.track(title, rank=k)
        where = f"dev_major = {int(d.major)} AND dev_minor = {int(d.minor)}"
        counts["episodes"] += _episodes(trace, con, where, parent)
        counts["requests"] += _requests(trace, con, dev, d.last_ns or 0, parent)
        counts["writeback"] += _writeback(trace, con, where, parent)
    samples = _user_series(trace, con)
    size = _write(out, trace)
    if progress:
        progress("perfetto", len(manifest.devices), len(manifest.devices))
    return Exported(out, counts["requests"], counts["episodes"], counts["writeback"], samples, size)


def _write(out: Path, trace: _Trace) -> int:
    tmp = temp_file(out)
    try:
        with tmp.open("wb") as f:
            size = _write_packets(f, trace)
        os.replace(tmp, out)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise DatasetError(str(out), f"cannot write: {exc.strerror}") from None
    return size


def _write_packets(f: BinaryIO, trace: _Trace) -> int:
    size = 0
    batch: list[bytes] = []
    for packet in trace.packets():
        batch.append(message(TRACE_PACKET, packet))
        if len(batch) >= 4096:
            size += f.write(b"".join(batch))
            batch.clear()
    size += f.write(b"".join(batch))
    return size
