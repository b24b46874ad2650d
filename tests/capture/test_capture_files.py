"""Capture file writers on real recorded samples: blk tracer binary -> blktrace files, writeback."""

from __future__ import annotations

import io
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from blkscope.blk_io_trace import RECORD_STRUCT
from blkscope.capture.blkbin import (
    TN_PROCESS,
    TN_TIMESTAMP,
    convert,
    read_cmdlines,
)
from blkscope.capture.samplers import meminfo_line, vmstat_line
from blkscope.capture.writeback import WritebackRecorder
from blkscope.errors import InputFormatError
from tests.capture.ftrace_bin import iter_records
from tests.golden import golden_text

DATA = Path(__file__).parents[1] / "data" / "capture"
GOLDEN = Path(__file__).parents[1] / "golden" / "capture"
LOOP0 = (7 << 20) | 0


def _clock() -> tuple[int, int]:
    mono, wall = (DATA / "dd20_clock.txt").read_text().split()
    return int(mono), int(wall)


def _records(path: Path) -> list[tuple[list[int], bytes]]:
    data, out, pos = path.read_bytes(), [], 0
    while pos < len(data):
        rec = list(RECORD_STRUCT.unpack_from(data, pos))
        end = pos + RECORD_STRUCT.size + rec[10]
        out.append((rec, data[pos + RECORD_STRUCT.size : end]))
        pos = end
    return out


def test_raw_sample_parses_into_144_records() -> None:
    with open(DATA / "dd20_raw.bin", "rb") as fh:
        recs = list(iter_records(fh, "dd20_raw.bin"))
    assert len(recs) == 144
    assert {r[7] for r, _ in recs} == {LOOP0}
    # dd wrote 20 x 4 KiB then read 4 x 64 KiB, all O_DIRECT: one Q (action 1) per IO.
    queued = [(r[4], r[5] & 0xFFFF) for r, _ in recs if r[5] & 0xFFFF == 1]
    assert sorted(b for b, _ in queued) == [4096] * 20 + [65536] * 4


def test_convert_writes_notes_then_renumbered_events(tmp_path: Path) -> None:
    comms = read_cmdlines(DATA / "dd20_cmdlines.txt")
    res = convert(DATA / "dd20_raw.bin", tmp_path, "trace", comms, _clock())
    assert (res.events, res.cpus, sorted(res.files)) == (
        144,
        {1},
        ["trace.blktrace.0", "trace.blktrace.1"],
    )
    assert (tmp_path / "trace.blktrace.0").stat().st_size == 0
    recs = _records(tmp_path / "trace.blktrace.1")
    assert [r[1] for r, _ in recs] == list(range(1, 149))  # 1 timestamp + 3 comm notes + 144
    stamp, *procs = recs[:4]
    assert stamp[0][5] == TN_TIMESTAMP and stamp[0][2] == res.first_ns
    mono, wall = _clock()
    sec, nsec = struct.unpack("<II", stamp[1])
    assert sec * 10**9 + nsec == wall + res.first_ns - mono
    assert [(r[5], r[6], p.rstrip(b"\0")) for r, p in procs] == [
        (TN_PROCESS, 22, b"ksoftirqd/1"),
        (TN_PROCESS, 18139, b"dd"),
        (TN_PROCESS, 18140, b"dd"),
    ]
    assert not list(tmp_path.glob(".trace.body.*"))


@pytest.mark.skipif(shutil.which("blkparse") is None, reason="blkparse is not installed")
def test_convert_then_blkparse_matches_golden(tmp_path: Path) -> None:
    convert(
        DATA / "dd20_raw.bin",
        tmp_path,
        "trace",
        read_cmdlines(DATA / "dd20_cmdlines.txt"),
        _clock(),
    )
    subprocess.run(
        ["blkparse", "-i", "trace", "-o", "out.txt"], cwd=tmp_path, check=True, capture_output=True
    )
    got = (tmp_path / "out.txt").read_text()
    assert got == golden_text(GOLDEN / "dd20_blkparse.txt", got)


@pytest.mark.parametrize("read", ["convert", "iter_records"])
def test_torn_record_is_reported_with_offset(tmp_path: Path, read: str) -> None:
    torn = tmp_path / "raw.bin"
    torn.write_bytes((DATA / "dd20_raw.bin").read_bytes()[:100])
    with pytest.raises(InputFormatError) as err, open(torn, "rb") as fh:
        if read == "convert":
            convert(torn, tmp_path, "trace", {}, _clock())
        else:
            list(iter_records(fh, str(torn)))
    assert str(err.value) == f"{torn}: byte 64: 36 trailing bytes are a torn record"


@pytest.mark.parametrize("read", ["convert", "iter_records"])
def test_foreign_bytes_are_rejected(tmp_path: Path, read: str) -> None:
    junk = tmp_path / "raw.bin"
    junk.write_bytes(b"  kworker/u8:1-32  [000] ...1.  1101.124054: writeback_start: bdi 254:0\n")
    with pytest.raises(InputFormatError) as err, open(junk, "rb") as fh:
        if read == "convert":
            convert(junk, tmp_path, "trace", {}, _clock())
        else:
            list(iter_records(fh, str(junk)))
    assert str(err.value) == (f"{junk}: byte 0: not a blk tracer record (magic 0x5b202032)")


@pytest.mark.parametrize("window", [16 << 20, 1000, 5000])
def test_lost_event_markers_are_counted_and_skipped(
    tmp_path: Path, window: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """trace_pipe writes `CPU:N [LOST M EVENTS]` into the binary stream after an overrun."""
    comms = read_cmdlines(DATA / "dd20_cmdlines.txt")
    clean = tmp_path / "clean"
    clean.mkdir()
    convert(DATA / "dd20_raw.bin", clean, "trace", comms, _clock())
    data = (DATA / "dd20_raw.bin").read_bytes()
    with open(DATA / "dd20_raw.bin", "rb") as fh:
        cut = sum(64 + len(pdu) for _, pdu in list(iter_records(fh, "dd20"))[:15])
    marked = tmp_path / "raw.bin"
    marked.write_bytes(
        b"CPU:1 [LOST 1560 EVENTS]\n"
        + data[:cut]
        + b"CPU:0 [LOST 7 EVENTS]\n"
        + data[cut:]
        + b"CPU:1 [LOST 2 EVENTS]\n"
    )
    monkeypatch.setattr("blkscope.capture.blkbin.WINDOW", window)
    out = tmp_path / "out"
    out.mkdir()
    res = convert(marked, out, "trace", comms, _clock())
    assert (res.events, res.lost) == (144, {1: 1562, 0: 7})
    assert (out / "trace.blktrace.1").read_bytes() == (clean / "trace.blktrace.1").read_bytes()


def test_writeback_trace_gives_golden_writeback_ns() -> None:
    out, raw = io.StringIO(), io.StringIO()
    rec = WritebackRecorder(out, raw)
    data = (DATA / "writeback_trace.txt").read_bytes()
    rec.feed(data[:333])  # split mid-line, as trace_pipe reads do
    rec.feed(data[333:])
    rec.close()
    assert out.getvalue() == golden_text(GOLDEN / "writeback_ns.txt", out.getvalue())
    assert raw.getvalue() == data.decode()
    assert rec.written == 7


def test_meminfo_and_vmstat_lines() -> None:
    meminfo = "MemTotal: 100 kB\nDirty:      1427920 kB\nWriteback:   12 kB\n"
    assert meminfo_line(meminfo, 1795304269.5) == (
        "1795304269.500000000 Dirty: 1427920 kB Writeback: 12 kB\n"
    )
    assert vmstat_line("nr_dirty 5\nnr_writeback 0\n", 2.0) == (
        "2.000000000 nr_dirty=5 nr_writeback=0\n"
    )


def test_convert_asks_lookup_for_pids_saved_cmdlines_forgot(tmp_path: Path) -> None:
    asked: list[int] = []

    def lookup(pid: int) -> str | None:
        asked.append(pid)
        return {22: "ksoftirqd/1"}.get(pid)

    res = convert(DATA / "dd20_raw.bin", tmp_path, "trace", {18139: "dd"}, _clock(), lookup)
    assert sorted(asked) == [22, 18140]
    assert res.comms == {18139: "dd", 22: "ksoftirqd/1"}
    notes = [r for r, _ in _records(tmp_path / "trace.blktrace.1") if r[5] == TN_PROCESS]
    assert [r[6] for r in notes] == [22, 18139]


def test_small_windows_give_the_same_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    comms = read_cmdlines(DATA / "dd20_cmdlines.txt")
    convert(DATA / "dd20_raw.bin", tmp_path, "trace", comms, _clock())
    whole = (tmp_path / "trace.blktrace.1").read_bytes()
    # 1000 bytes is not a multiple of any record size, so records straddle window edges.
    monkeypatch.setattr("blkscope.capture.blkbin.WINDOW", 1000)
    small = tmp_path / "small"
    small.mkdir()
    res = convert(DATA / "dd20_raw.bin", small, "trace", comms, _clock())
    assert res.events == 144
    assert (small / "trace.blktrace.1").read_bytes() == whole


SHARED = Path(__file__).parents[2] / ".." / "shared" / "captures"


def _leading_notes_stripped(blktrace: bytes) -> bytes:
    """Turn a per-CPU blktrace file back into ftrace's bin stream (header + record, seq 0)."""
    out, pos, leading = [], 0, True
    while pos < len(blktrace):
        rec = list(RECORD_STRUCT.unpack_from(blktrace, pos))
        end = pos + RECORD_STRUCT.size + rec[10]
        leading = leading and rec[5] in (TN_PROCESS, TN_TIMESTAMP)
        if not leading:  # scheduler messages later on are notes too, and stay
            rec[1] = 0
            out.append(
                struct.pack("<IIQ", rec[6], rec[8], rec[2])
                + RECORD_STRUCT.pack(*rec)
                + blktrace[pos + RECORD_STRUCT.size : end]
            )
        pos = end
    return b"".join(out)


def _unzstd(path: Path) -> bytes:
    import zstandard

    with open(path, "rb") as fh:
        return zstandard.ZstdDecompressor().stream_reader(fh).read()


@pytest.mark.skipif(not SHARED.exists(), reason="../shared/captures is not beside the checkout")
def test_shared_capture_files_are_rebuilt_byte_for_byte(tmp_path: Path) -> None:
    """capture-tools/ftrace2blktrace.py made these files; ours must be identical."""
    cap = SHARED / "mq-writeback-30s"
    originals = {cpu: _unzstd(cap / f"trace.blktrace.{cpu}.zst") for cpu in (0, 1)}
    raw = tmp_path / "raw.bin"
    raw.write_bytes(b"".join(_leading_notes_stripped(originals[cpu]) for cpu in (0, 1)))
    mono, wall = (int(v) for v in (cap / "clock.txt").read_text().split())
    out = tmp_path / "out"
    out.mkdir()
    res = convert(raw, out, "trace", read_cmdlines(cap / "cmdlines.txt"), (mono, wall))
    assert res.events == 75532  # blkparse.txt's own total: "Events (trace): 75532 entries"
    for cpu in (0, 1):
        assert (out / f"trace.blktrace.{cpu}").read_bytes() == originals[cpu]
