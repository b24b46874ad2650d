"""Clock hints: the binary's notes, clock.txt, and the --trace-start / --offset flags."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from blkscope.errors import InputFormatError
from blkscope.ingest.timeline.clock_model import parse_offset, parse_trace_start
from tests.clock_truth import (
    MQ,
    capture,
    clock_pair,
    column,
    ingest_subset,
    trace_zero_mono,
    writeback_truth,
)

MS = 1_000_000
SIDE = ["writeback_ns.txt", "writeback.txt", "prober.csv", "meminfo.txt", "iostat.txt"]


def _prober_truth(folder: Path, dataset: Path) -> tuple[np.ndarray, np.ndarray]:
    series = pq.read_table(dataset / "series.parquet")
    return series["t_ns"].to_numpy(), series["time_ns"].to_numpy() - trace_zero_mono(folder)


def _meminfo_truth(folder: Path, dataset: Path) -> tuple[np.ndarray, np.ndarray]:
    mono, wall = clock_pair(folder)
    meminfo = pq.read_table(dataset / "meminfo.parquet")
    truth = meminfo["time_ns"].to_numpy() - (trace_zero_mono(folder) + wall - mono)
    return meminfo["t_ns"].to_numpy(), truth


@pytest.fixture(scope="module", params=MQ)
def hinted(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Each capture two ways: its binaries (notes) and its blkparse text with clock.txt."""
    folder = capture(request.param)
    tmp = tmp_path_factory.mktemp(request.param)
    binaries = sorted(p.name for p in folder.glob("trace.blktrace.*"))
    (tmp / "bin").mkdir()
    (tmp / "text").mkdir()
    return {
        "folder": folder,
        "bin": ingest_subset(folder, binaries + SIDE, tmp / "bin"),
        "text": ingest_subset(folder, ["blkparse.txt.zst", "clock.txt", *SIDE], tmp / "text"),
    }


@pytest.mark.parametrize("kind", ["bin", "text"])
def test_monotonic_logs_land_within_a_millisecond(hinted: dict, kind: str) -> None:
    folder, out = hinted["folder"], hinted[kind]
    t_ns, truth = _prober_truth(folder, out)
    assert len(t_ns) > 1000 and np.abs(t_ns - truth).max() < MS
    ns_rows = column(out, "writeback", "t_ns")[-len(writeback_truth(folder)) :]
    assert np.abs(ns_rows - writeback_truth(folder)).max() < MS


@pytest.mark.parametrize("kind", ["bin", "text"])
def test_wall_logs_land_within_their_resolution(hinted: dict, kind: str) -> None:
    folder, out = hinted["folder"], hinted[kind]
    t_ns, truth = _meminfo_truth(folder, out)
    assert np.abs(t_ns - truth).max() < MS  # meminfo stamps carry ns
    wb = column(out, "writeback", "t_ns")[: len(writeback_truth(folder))]
    assert np.abs(wb - writeback_truth(folder)).max() < 600 * MS  # 1 s stamps, centred
    mono, wall = clock_pair(folder)
    zero = trace_zero_mono(folder) + wall - mono
    iostat = pq.read_table(out / "iostat_log.parquet")
    late = iostat["t_ns"].to_numpy() - (iostat["time_ns"].to_numpy() - zero)
    assert np.abs(late - 500 * MS).max() < MS


def test_binary_notes_pin_the_trace_exactly(hinted: dict) -> None:
    manifest = json.loads((hinted["bin"] / "manifest.json").read_text())
    zero = manifest["clock"]["trace_zero"]
    mono, wall = clock_pair(hinted["folder"])
    assert zero["monotonic_ns"] == trace_zero_mono(hinted["folder"])
    assert zero["monotonic_how"] == "blktrace binary: first event's time"
    assert zero["wall_minus_monotonic_how"] == "blktrace wall-clock note"
    assert zero["wall_minus_monotonic_ns"] == wall - mono  # the note and clock.txt agree
    assert zero["alignments"] == {}


def test_text_with_clock_pair_aligns_the_monotonic_log(hinted: dict) -> None:
    zero = json.loads((hinted["text"] / "manifest.json").read_text())["clock"]["trace_zero"]
    assert zero["monotonic_how"] == "automatic alignment of writeback_ns.txt"
    assert zero["wall_how"] == (
        "automatic alignment of writeback_ns.txt + clock.txt (MONO_NS WALL_NS pair)"
    )
    assert abs(zero["monotonic_ns"] - trace_zero_mono(hinted["folder"])) < MS


def test_trace_start_flag_and_offset_flag(tmp_path: Path) -> None:
    folder = capture("mq-writeback-30s")
    mono, wall = clock_pair(folder)
    zero_wall = trace_zero_mono(folder) + wall - mono  # 2026-11-21T23:37:49.326334032Z
    start = parse_trace_start("2026-11-21T23:37:49.326334032Z")
    assert start == zero_wall
    out = ingest_subset(
        folder,
        ["blkparse.txt.zst", "writeback.txt", "meminfo.txt"],
        tmp_path,
        trace_start_ns=start,
        offsets_ns={"meminfo": 2_000_000_000},
    )
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["clock"]["trace_zero"]["wall_how"] == "flag --trace-start"
    assert manifest["clock"]["trace_zero"]["alignments"] == {}
    wb = column(out, "writeback", "t_ns")
    assert np.abs(wb - writeback_truth(folder)).max() < 600 * MS
    t_ns = column(out, "meminfo", "t_ns")
    assert np.array_equal(t_ns, column(out, "meminfo", "time_ns") - zero_wall + 2_000_000_000)
    meminfo = next(s for s in manifest["clock"]["sources"] if s["table"] == "meminfo")
    assert meminfo["shift_ns"] == 2_000_000_000
    assert meminfo["method"].endswith("shifted by --offset meminfo")


def test_flag_parsers() -> None:
    assert parse_trace_start("2026-11-21T23:33:29Z") == 1795304009 * 1_000_000_000
    assert parse_trace_start("2026-11-22T00:33:29.5+01:00") == 1795304009_500_000_000
    assert parse_offset("writeback.txt=-0.25") == ("writeback.txt", -250_000_000)
    assert parse_offset("iostat_log=+3") == ("iostat_log", 3_000_000_000)
    with pytest.raises(InputFormatError) as err:
        parse_offset("iostat=soon")
    assert str(err.value) == "option --offset: expected SOURCE=+-SECONDS, got 'iostat=soon'"
    with pytest.raises(InputFormatError) as err:
        parse_trace_start("yesterday")
    assert str(err.value) == "option --trace-start: not an ISO time: 'yesterday'"
