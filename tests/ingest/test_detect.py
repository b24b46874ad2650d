"""detect_format judges content, never names: every sample and capture file maps to its parser."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from blkscope.ingest.detect import detect_format
from tests.conftest import capture_folder
from tests.ingest.formats_golden import DATA

SAMPLES = {
    "mq30.blktrace.0": "blktrace",
    "bfq.blktrace.1": "blktrace",
    "mq30.blkparse.txt": "blkparse",
    "loop.blkparse.txt": "blkparse",
    "iostat_new_mt.txt": "iostat",
    "iostat_old.txt": "iostat",
    "iostat_x_no_t.txt": "iostat",
    "iostat_dxk.txt": "iostat",
    "vmstat_capture.txt": "vmstat",
    "vmstat_t.txt": "vmstat",
    "vmstat_a.txt": "vmstat",
    "meminfo_capture.txt": "meminfo",
    "meminfo_snapshots.txt": "meminfo",
    "writeback.txt": "writeback",
    "writeback_ns.txt": "writeback_ns",
    "biosnoop_capture.txt": "biosnoop",
    "biosnoop_que.txt": "biosnoop",
    "biosnoop_lost.txt": "biosnoop",
    "biosnoop_bt.txt": "biosnoop_bt",
    "bt_hist.txt": "hist_bpftrace",
    "bt_hist_interval.txt": "hist_bpftrace",
    "bt_hist.json": "hist_json",
    "bcc_biolatency_j.txt": "hist_json",
    "bcc_biolatency_DT.txt": "hist_bcc",
    "prober.csv": "series_csv",
    "README.md": None,
    "cut_blktrace.py": None,
}


@pytest.mark.parametrize(("name", "expected"), sorted(SAMPLES.items()))
def test_samples(name: str, expected: str | None) -> None:
    assert detect_format(str(DATA / name)) == expected


def test_name_does_not_matter(tmp_path: Path) -> None:
    misleading = tmp_path / "iostat.txt"
    shutil.copy(DATA / "writeback_ns.txt", misleading)
    assert detect_format(str(misleading)) == "writeback_ns"
    assert detect_format(str(tmp_path)) is None
    assert detect_format(str(tmp_path / "missing")) is None


def test_shared_capture_files() -> None:
    folder = capture_folder("mq-writeback-30s")
    found = {p.name: detect_format(str(p)) for p in sorted(folder.iterdir())}
    assert found == {
        "biosnoop.txt.zst": "biosnoop",
        "blkparse.txt.zst": "blkparse",
        "btt": None,
        "clock.txt": None,
        "cmdlines.txt": None,
        "iostat.txt": "iostat",
        "meminfo.txt": "meminfo",
        "prober.csv": "series_csv",
        "trace.blktrace.0.zst": "blktrace",
        "trace.blktrace.1.zst": "blktrace",
        "vmstat.txt": "vmstat",
        "writeback.txt": "writeback",
        "writeback_ns.txt": "writeback_ns",
    }
