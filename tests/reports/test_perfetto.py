"""`blkscope export --perfetto` on the bundled capture, read back with Perfetto's own schema
(perfetto_trace_pb2 from the perfetto package): every request, episode, writeback work item and
user series sample is there once, with the dataset's own times, and every track's slices nest
as the Perfetto UI needs them to."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from blkscope.cli import app
from blkscope.dataset import Dataset
from blkscope.reports.make_report import Written
from blkscope.reports.perfetto import export_perfetto
from blkscope.reports.protobuf_wire import message, string, uint, varint

pb = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")
BEGIN, END, COUNTER = 1, 2, 4
REQUEST_NAMES = {"read", "write", "discard", "flush", "other", "flush_end"}


class Read:
    """A trace file parsed by the schema, with its tracks and interned names resolved."""

    def __init__(self, path: Path) -> None:
        self.trace = pb.Trace()
        self.trace.ParseFromString(path.read_bytes())
        packets = list(self.trace.packet)
        self.tracks = {p.track_descriptor.uuid: p.track_descriptor for p in packets
                       if p.HasField("track_descriptor")}  # fmt: skip
        interned = [p.interned_data for p in packets if p.HasField("interned_data")]
        self.names = {e.iid: e.name for i in interned for e in i.event_names}
        self.notes = {e.iid: e.name for i in interned for e in i.debug_annotation_names}
        self.events = [(p.timestamp, p.track_event) for p in packets if p.HasField("track_event")]

    def track_name(self, event: Any) -> str:
        return str(self.tracks[event.track_uuid].name)

    def begins(self, track_prefix: str) -> list[tuple[int, Any]]:
        return [(ts, e) for ts, e in self.events
                if e.type == BEGIN and self.track_name(e).startswith(track_prefix)]  # fmt: skip

    def annotations(self, event: Any) -> dict[str, Any]:
        return {
            self.notes[a.name_iid]: a.string_value if a.HasField("string_value") else a.int_value
            for a in event.debug_annotations
        }


@pytest.fixture(scope="module")
def exported(mq_report: Written, tmp_path_factory: pytest.TempPathFactory) -> tuple[Read, Any]:
    out = tmp_path_factory.mktemp("perfetto") / "mq.pftrace"
    with Dataset(mq_report.dataset) as ds:
        done = export_perfetto(ds, out)
    return Read(out), done


def test_the_wire_encoding_matches_protobufs_own() -> None:
    assert varint(0) == b"\x00" and varint(300) == b"\xac\x02"
    assert varint(-1) == b"\xff" * 9 + b"\x01"  # an int64 -1: ten bytes
    event = pb.TrackEvent()
    event.ParseFromString(
        uint(9, 1) + uint(11, 7) + message(4, uint(1, 3) + string(6, "kworker/u8:4"))
    )
    assert (event.type, event.track_uuid) == (1, 7)
    assert event.debug_annotations[0].string_value == "kworker/u8:4"


def test_every_request_and_episode_is_one_slice(
    exported: tuple[Read, Any], mq_report: Written
) -> None:
    read, done = exported
    with Dataset(mq_report.dataset).con as con:
        ((requests,),) = con.execute("SELECT count(*) FROM requests").fetchall()
        ((episodes,),) = con.execute("SELECT count(*) FROM episodes").fetchall()
        ((writeback,),) = con.execute(
            "SELECT count(*) FROM writeback_events WHERE dev_major = 254"
        ).fetchall()
        ((samples,),) = con.execute("SELECT count(t_ns) FROM series").fetchall()
    assert (requests, episodes, writeback, samples) == (12_702, 6, 72, 1_444)
    slices = Counter(read.names[e.name_iid] for _, e in read.begins("requests "))
    assert sum(n for name, n in slices.items() if name in REQUEST_NAMES) == requests
    assert slices == {"read": 5_981, "write": 3_670, "flush": 1_506, "flush_end": 1_506,
                      "discard": 39, "queued": 11_196, "device": 11_196, "requeued": 124}  # fmt: skip
    assert len(read.begins("latency episodes")) == episodes
    assert len(read.begins("writeback work")) == writeback
    counters = [e for _, e in read.events if e.type == COUNTER]
    assert len(counters) == samples and {read.track_name(e) for e in counters} == {
        "user:prober (ns)"
    }
    assert (done.requests, done.episodes, done.writeback, done.user_samples) == (
        requests, episodes, writeback, samples,
    )  # fmt: skip


def test_slices_nest_on_every_track_in_time_order(exported: tuple[Read, Any]) -> None:
    read, _ = exported
    assert [ts for ts, _ in read.events] == sorted(ts for ts, _ in read.events)
    open_slices: dict[int, list[int]] = {}
    for _, e in read.events:
        if e.type == BEGIN:
            open_slices.setdefault(e.track_uuid, []).append(e.name_iid)
        elif e.type == END:
            assert open_slices[e.track_uuid].pop() == e.name_iid  # the last one begun ends first
    assert all(not stack for stack in open_slices.values())
    device = [t for t in read.tracks.values() if not t.HasField("parent_uuid") and
              not t.HasField("counter")]  # fmt: skip
    assert [t.name for t in device] == ["vda (254,0)"]
    children = {re.sub(r" \d+$", "", read.tracks[u].name) for u in read.tracks
                if read.tracks[u].parent_uuid == device[0].uuid}  # fmt: skip
    assert children == {"latency episodes", "requests", "writeback work"}


def test_the_worst_episode_and_the_slowest_request_keep_their_times(
    exported: tuple[Read, Any], mq_report: Written
) -> None:
    read, _ = exported
    with Dataset(mq_report.dataset).con as con:
        ((q, c, comm, sector),) = con.execute(
            "SELECT q_time_ns, c_time_ns, process, sector FROM requests "
            "ORDER BY c_time_ns - q_time_ns DESC LIMIT 1"
        ).fetchall()
    found = [(ts, e) for ts, e in read.begins("requests ") if ts == q
             and read.annotations(e).get("sector") == sector]  # fmt: skip
    assert len(found) == 1
    ts, event = found[0]
    ends = [t for t, e in read.events if e.type == END and e.track_uuid == event.track_uuid
            and t >= ts]  # fmt: skip
    assert c in ends and read.annotations(event)["process"] == comm
    (worst,) = [(ts, e) for ts, e in read.begins("latency episodes")
                if read.annotations(e)["episode"] == 5]  # fmt: skip
    notes = read.annotations(worst[1])
    assert worst[0] == 24_000_000_000 and read.names[worst[1].name_iid] == "episode: writeback"
    assert (notes["worst_metric"], notes["peak_latency_ns"]) == ("user:prober", 76_672_000)
    assert notes["reason"].startswith("user:prober (python3 pid 11562): worst 76.7 ms; ")
    assert "in flight while it waited: writeback (write 111 bios, 670.0 MiB" in notes["reason"]


def test_cli_export_says_what_it_wrote(mq_report: Written, tmp_path: Path) -> None:
    out = tmp_path / "run.pftrace"
    result = CliRunner().invoke(app, ["export", str(mq_report.dataset), "--perfetto", str(out)])
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        f"wrote {out} ({out.stat().st_size:,} bytes): 12,702 requests, 6 episodes, "
        "72 writeback work items, 1,444 user series samples\n"
    )
    assert out.stat().st_size < 4_000_000


def test_cli_export_refuses_a_dash_for_the_trace(mq_report: Written) -> None:
    result = CliRunner().invoke(app, ["export", str(mq_report.dataset), "--perfetto", "-"])
    assert result.exit_code == 1  # as `report -o -`: a DatasetError
    assert result.stderr.splitlines() == [
        "error: -: '-' would be read as stdout, but the trace is written to a path",
        "hint: give the trace a name, e.g. --perfetto run.pftrace",
    ]
