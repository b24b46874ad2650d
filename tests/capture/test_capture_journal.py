"""The tracefs journal restores the first-seen value of every setting, on plain files (no root)."""

from __future__ import annotations

from pathlib import Path

from blkscope.capture.blktrace_native import BlktraceProcess
from blkscope.capture.tracefs import TracefsJournal, read_setting


def _files(tmp_path: Path) -> dict[str, Path]:
    files = {
        "current_tracer": "nop",
        "trace_clock": "local global [mono] boot",
        "buffer_size_kb": "65538",
        "tracing_on": "1",
    }
    out = {}
    for name, value in files.items():
        out[name] = tmp_path / name
        out[name].write_text(value + "\n")
    return out


def test_restore_puts_back_first_seen_values(tmp_path: Path) -> None:
    f = _files(tmp_path)
    j = TracefsJournal()
    j.set(f["tracing_on"], "0")
    j.set(f["trace_clock"], "mono")  # already mono: not written, still journaled
    j.set(f["current_tracer"], "blk")
    j.set(f["buffer_size_kb"], "8192")
    j.set(f["tracing_on"], "1")
    j.set(f["tracing_on"], "0")
    inst = tmp_path / "instances" / "blkscope-wb-1"
    inst.mkdir(parents=True)
    j.made_dir(inst)
    assert read_setting(f["current_tracer"]) == "blk"
    assert j.restore() == []
    assert {k: read_setting(p) for k, p in f.items()} == {
        "current_tracer": "nop",
        "trace_clock": "mono",
        "buffer_size_kb": "65538",
        "tracing_on": "1",
    }
    assert not inst.exists()
    assert j.restore() == []  # a second restore (atexit) has nothing left to do


def test_restore_reports_what_it_could_not_put_back(tmp_path: Path) -> None:
    f = _files(tmp_path)
    j = TracefsJournal()
    j.set(f["current_tracer"], "blk")
    f["current_tracer"].unlink()
    (problem,) = j.restore()
    assert problem.startswith(f"{f['current_tracer']}: could not restore 'nop': ")


def test_blktrace_dropped_counts_sum_the_device_totals(tmp_path: Path) -> None:
    (tmp_path / "blktrace.log").write_text(
        "=== sda ===\n  CPU  0:  1 events,  1 KiB data\n  Total:  12 events (dropped 3),"
        "  1 KiB data\n=== sdb ===\n  Total:  5 events (dropped 0),  1 KiB data\n"
    )
    assert BlktraceProcess.dropped_in(tmp_path) == 3
    assert BlktraceProcess.dropped_in(tmp_path / "missing") is None
