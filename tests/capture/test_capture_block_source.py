"""Which block source a capture records with (capture/block_source.py), and what capture.json
says of it (runner._manifest, its one writer): no root or tracefs needed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from blkscope.capture import block_source, runner
from blkscope.capture.blktrace_native import BlktraceProcess
from blkscope.capture.block_source import (
    Blktrace,
    FtraceBlk,
    Tracepoints,
    choose_block_source,
)
from blkscope.capture.tracefs import TracefsJournal
from blkscope.errors import CaptureError


class FakeBlktrace(BlktraceProcess):
    """blktrace that runs (start says None) or fails with a message, and counts its starts."""

    def __init__(self, out: Path, fails: str | None) -> None:
        super().__init__(["vda"], out, "trace", 65536)
        self.fails, self.starts = fails, 0

    def start(self) -> str | None:
        self.starts += 1
        return self.fails


def _choose(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, method: str, blktrace: str | None,
    blk_tracer: str | None,
) -> tuple[block_source.BlockSource, FakeBlktrace]:  # fmt: skip
    """The source choose_block_source picks when blktrace fails with `blktrace` (None: runs)
    and the blk tracer is unusable for the reason `blk_tracer` (None: usable)."""
    monkeypatch.setattr(block_source, "blk_tracer_unusable", lambda root, devices: blk_tracer)
    native = FakeBlktrace(tmp_path, blktrace)
    journal = TracefsJournal(tmp_path / "journal.json")
    chosen = choose_block_source(
        method, native, tmp_path / "tracing", journal, ["vda"], tmp_path, 65536, "trace"
    )
    return chosen, native


def test_auto_takes_blktrace_when_it_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    chosen, native = _choose(tmp_path, monkeypatch, "auto", None, None)
    assert isinstance(chosen, Blktrace) and chosen.process is native and native.starts == 1
    assert chosen.facts() == {"block_source": "blktrace"}
    assert chosen.blktrace_unavailable is None


def test_auto_falls_back_to_the_blk_tracer_then_the_tracepoints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chosen, _ = _choose(tmp_path, monkeypatch, "auto", "relay: permission denied", None)
    assert isinstance(chosen, FtraceBlk)
    facts = chosen.facts()
    assert (facts["block_source"], facts["blktrace_unavailable_because"]) == (
        "ftrace-blk", "relay: permission denied"
    )  # fmt: skip
    chosen, _ = _choose(tmp_path, monkeypatch, "auto", "relay: permission denied", "no blk")
    assert isinstance(chosen, Tracepoints)
    facts = chosen.facts()
    assert {k: facts[k] for k in list(facts)[:4]} == {
        "block_source": "tracepoints",
        "blktrace_unavailable_because": "relay: permission denied",
        "blk_tracer_unavailable_because": "no blk",
        "trace_clock": "mono",
    }


def test_a_method_that_names_a_source_never_tries_blktrace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chosen, native = _choose(tmp_path, monkeypatch, "tracepoints", None, None)
    assert isinstance(chosen, Tracepoints) and native.starts == 0
    assert chosen.facts()["blktrace_unavailable_because"] == "not tried (--method tracepoints)"
    assert chosen.facts()["blk_tracer_unavailable_because"] == "not tried (--method tracepoints)"
    chosen, native = _choose(tmp_path, monkeypatch, "ftrace", None, None)
    assert isinstance(chosen, FtraceBlk) and native.starts == 0
    assert chosen.facts()["blktrace_unavailable_because"] == "not tried (--method ftrace)"


@pytest.mark.parametrize(
    ("method", "blktrace", "blk_tracer", "message", "hint"),
    [
        ("blktrace", "relay: permission denied", None,
         "blktrace: blktrace failed: relay: permission denied",
         "use --method auto to fall back to the ftrace blk tracer"),
        ("ftrace", None, "no blk tracer in this kernel",
         "ftrace blk tracer: no blk tracer in this kernel", "use --method tracepoints"),
    ],
)  # fmt: skip
def test_a_source_that_cannot_run_is_an_error_with_a_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, method: str, blktrace: str | None,
    blk_tracer: str | None, message: str, hint: str,
) -> None:  # fmt: skip
    with pytest.raises(CaptureError) as caught:
        _choose(tmp_path, monkeypatch, method, blktrace, blk_tracer)
    assert (str(caught.value), caught.value.hint) == (message, hint)


class StoppedSource(block_source.BlockSource):
    """A source that recorded, as the manifest sees it."""

    name, label = "tracepoints", "block tracepoints"

    def facts(self) -> dict[str, Any]:
        return {"block_source": self.name, "ring_buffer_stats": {"cpu0": {"overrun": 2}}}


def test_the_manifest_is_built_from_what_the_recording_learned(tmp_path: Path) -> None:
    out = tmp_path / "cap"
    out.mkdir()
    (out / "trace.blktrace.0").write_bytes(b"")
    run = runner._Run(runner.CaptureOptions(["vda"], out, duration_s=1.0))
    rec = run.recording
    rec.setup = {"host": {"kernel": "6.18"}, "devices": [{"name": "vda"}]}
    rec.source = StoppedSource()
    rec.writeback, rec.writeback_events = False, None
    rec.limits = {"disk_cap_mib": 10, "kernel_buffers_kib": 128}
    rec.tools = {"iostat": True, "vmstat": False}
    rec.start, rec.stop, rec.end = (5, 1_700_000_000_000_000_000), (7, 0), (9, 0)
    rec.stop_reason, rec.command_exit_code = "duration", None
    rec.finished = {"overrun_events": 2}
    rec.blktrace_files = ["trace.blktrace.0"]
    m = runner._manifest(run)
    assert list(m)[:3] == ["format", "format_version", "host"]
    assert m["block_source"] == "tracepoints" and m["overrun_events"] == 2
    assert m["writeback_source"] is None and "writeback_events" not in m
    assert m["clock"] == {"mono_ns": 5, "wall_ns": 1_700_000_000_000_000_000,
                          "clock": "CLOCK_MONOTONIC"}  # fmt: skip
    assert (m["start_mono_ns"], m["stop_mono_ns"], m["end_mono_ns"]) == (5, 7, 9)
    assert m["start_wall"] == "2023-11-14T22:13:20+00:00"
    assert (m["iostat"], m["vmstat"], m["complete"]) == (True, False, False)
    assert m["not_recorded"] == [
        "vmstat.txt: vmstat is not installed (package procps)",
        "writeback events: this kernel's tracefs has no writeback tracepoints or instances",
    ]
    assert m["files"] == ["trace.blktrace.0"]
