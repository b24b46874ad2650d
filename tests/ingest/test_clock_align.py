"""Automatic alignment: blkparse text + writeback.txt + iostat.txt and no clock hint at all."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from blkscope.ingest.folder import ingest_folder
from tests.clock_truth import (
    MQ,
    capture,
    clock_pair,
    column,
    ingest_subset,
    trace_zero_mono,
    writeback_truth,
)

FILES = ["blkparse.txt.zst", "writeback.txt", "iostat.txt"]


@pytest.fixture(scope="module", params=MQ)
def aligned(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple:
    folder = capture(request.param)
    out = ingest_subset(folder, FILES, tmp_path_factory.mktemp(request.param))
    return folder, out, json.loads((out / "manifest.json").read_text())


def test_writeback_lands_within_its_resolution_of_the_monotonic_truth(aligned: tuple) -> None:
    folder, out, _ = aligned
    error = np.abs(column(out, "writeback", "t_ns") - writeback_truth(folder)) / 1e9
    assert len(error) == len(writeback_truth(folder))
    assert np.median(error) <= 0.6
    assert error.max() <= 1.5


def test_trace_zero_wall_time_is_found_to_well_under_a_second(aligned: tuple) -> None:
    folder, _, manifest = aligned
    mono, wall = clock_pair(folder)
    truth = trace_zero_mono(folder) + wall - mono
    zero = manifest["clock"]["trace_zero"]
    assert zero["wall_how"] == "automatic alignment of writeback.txt within iostat.txt's window"
    assert zero["monotonic_ns"] is None  # no clock pair: the monotonic clock stays unknown
    assert abs(zero["wall_ns"] - truth) < 100_000_000
    wb = zero["alignments"]["writeback.txt"]
    assert wb["matched_rows"] == wb["rows_used"] > wb["runner_up_matched_rows"]
    low, high = wb["interval_ns"]
    assert high - low < 500_000_000  # several 1 s stamps intersected: the vernier at work
    # the flusher's 5 s period gives a runner-up 5 s away; iostat's window rules it out
    searched = wb["searched_within_wall_ns"]
    assert searched[1] - searched[0] == 1_200_000_000 and searched[0] < truth < searched[1]
    iostat = zero["alignments"]["iostat.txt"]
    assert iostat["agrees"] is True
    assert iostat["mismatch"] < 0.01 < iostat["runner_up_mismatch"]


def test_iostat_reports_end_where_the_truth_says(aligned: tuple) -> None:
    folder, out, _ = aligned
    mono, wall = clock_pair(folder)
    truth_zero = trace_zero_mono(folder) + wall - mono
    stamps = column(out, "iostat_log", "time_ns")
    error = column(out, "iostat_log", "t_ns") - (stamps - truth_zero)
    # t_ns is the stamped second's middle: within 0.5 s of the stamp, plus the alignment error
    assert np.all(np.abs(error - 500_000_000) < 100_000_000)


def test_iostat_alone_still_places_the_trace(tmp_path: Path) -> None:
    folder = capture("mq-writeback-60s")
    out = ingest_subset(folder, ["blkparse.txt.zst", "iostat.txt"], tmp_path)
    zero = json.loads((out / "manifest.json").read_text())["clock"]["trace_zero"]
    mono, wall = clock_pair(folder)
    truth = trace_zero_mono(folder) + wall - mono
    assert zero["wall_how"] == "automatic alignment of iostat.txt"
    assert abs(zero["wall_ns"] - truth) < 500_000_000
    low, high = zero["alignments"]["iostat.txt"]["interval_ns"]
    assert low <= truth <= high


@pytest.mark.parametrize(
    ("stamp", "corrupt"),
    [("11/21/26 23:38:00", "12/21/26 23:38:00"), ("11/21/26 23:38:00", "11/21/70 23:38:00")],
    ids=["a-month-off", "44-years-off"],
)
def test_a_corrupt_iostat_stamp_does_not_grow_the_search(
    tmp_path: Path, stamp: str, corrupt: str
) -> None:
    """One iostat report stamped a month off made the shift grid span the month (26 M shifts,
    each tried); decades off it asked for 134 GiB. The grid now covers only shifts
    where enough reports land on the trace: the same shifts, the same answer as without it."""
    from blkscope.ingest.timeline.align import _candidate_shifts

    folder = capture("mq-writeback-30s")
    (tmp_path / "clean").mkdir()
    clean = ingest_subset(folder, ["blkparse.txt.zst", "iostat.txt"], tmp_path / "clean")
    src = tmp_path / "bad" / "capture"
    src.mkdir(parents=True)
    shutil.copy(folder / "blkparse.txt.zst", src)
    text = (folder / "iostat.txt").read_text()
    assert text.count(stamp) == 1
    (src / "iostat.txt").write_text(text.replace(stamp, corrupt))
    bad = tmp_path / "bad" / "dataset"
    ingest_folder(src, bad)
    zeros = [json.loads((d / "manifest.json").read_text())["clock"]["trace_zero"]
             for d in (clean, bad)]  # fmt: skip
    assert zeros[0]["wall_how"] == zeros[1]["wall_how"] == "automatic alignment of iostat.txt"
    assert zeros[1]["wall_ns"] == zeros[0]["wall_ns"]
    found = [z["alignments"]["iostat.txt"] for z in zeros]
    assert found[1]["interval_ns"] == found[0]["interval_ns"]
    assert found[1]["method"] == found[0]["method"]
    # the corrupt report no longer lands on the trace: one report fewer is compared
    assert abs(found[1]["mismatch"] - found[0]["mismatch"]) < 0.001
    # the grid itself: 30 one-second reports over a 30 s trace, one of them far off
    stamps = np.arange(1, 31, dtype=np.int64) * 1_000_000_000
    far = stamps.copy()
    far[9] += 44 * 365 * 86400 * 1_000_000_000
    span = 30 * 1_000_000_000
    assert len(_candidate_shifts(far, span, 15)) <= len(_candidate_shifts(stamps, span, 15)) == 331


def test_a_long_writeback_log_is_sampled_and_still_lands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The search looks at WORK_ROWS work items, spread evenly over a longer log (a 200 MiB
    log took 20 GB): half of the bundled log's items still place every row within 1.5 s."""
    from blkscope.ingest.timeline import align

    folder = capture(MQ[0])
    monkeypatch.setattr(align, "WORK_ROWS", 30)
    out = ingest_subset(folder, FILES, tmp_path)
    wb = json.loads((out / "manifest.json").read_text())["clock"]["trace_zero"]["alignments"]
    assert wb["writeback.txt"]["rows_used"] == 30
    error = np.abs(column(out, "writeback", "t_ns") - writeback_truth(folder)) / 1e9
    assert np.median(error) <= 0.6
    assert error.max() <= 1.5
