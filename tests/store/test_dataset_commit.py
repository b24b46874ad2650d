"""A dataset changes as a whole or not at all: one writer at a time, leftovers of killed writers
cleaned, a kill at any point of `analyze` leaves the dataset as it was, and a rerun completes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from blkscope.errors import DatasetError
from blkscope.ingest.block_events import ingest_blkparse
from blkscope.pipeline import analyze
from blkscope.store import folder_swap
from blkscope.store.folder_swap import WriteLock
from blkscope.store.manifest import read_manifest_doc as read_manifest
from blkscope.store.writer import DatasetWriter
from tests.conftest import LOOP_TAIL, ROOT

MESSAGE = "interrupted: nothing is left half-written\n"
ANALYSIS = [
    "bio_counts",
    "bios",
    "bursts",
    "depth",
    "depth_bins",
    "episodes",
    "io_dist",
    "iostat",
    "latency_heatmap",
    "latency_hist",
    "periodogram",
    "periods",
    "request_counts",
    "requests",
    "spikes",
    "stage_stats",
    "writeback_verdict",
]


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    out = tmp_path / "ds"
    ingest_blkparse([str(LOOP_TAIL / "blkparse.txt.zst")], out)
    return out


def _files(folder: Path) -> dict[str, tuple[int, int]]:
    """Each file's (inode, size): a rewrite in place or a replacement both show."""
    return {p.name: (p.stat().st_ino, p.stat().st_size) for p in folder.iterdir()}


def test_analyze_swaps_in_a_whole_new_version(dataset: Path) -> None:
    events = (dataset / "events.parquet").stat().st_ino
    keep = dataset.parent / "old-manifest"
    os.link(dataset / "manifest.json", keep)  # the old version's manifest, by inode
    old_manifest = keep.read_text()
    analyze(dataset).close()
    assert sorted(read_manifest(dataset)["tables"]) == sorted(
        ["events", "blkparse_summary", "ingest_errors", "last_plugs", *ANALYSIS]
    )
    assert (dataset / "events.parquet").stat().st_ino == events  # linked, never copied
    assert keep.read_text() == old_manifest  # the old version was never written through a link
    assert sorted(p.name for p in dataset.parent.iterdir()) == ["ds", "old-manifest"]


def test_leftovers_of_killed_writers_are_cleaned(dataset: Path) -> None:
    for stale in (".ds.tmp-1-deadbeef", ".ds.old-cafecafe"):
        (dataset.parent / stale).mkdir()
        (dataset.parent / stale / "events.parquet").write_bytes(b"half")
    analyze(dataset).close()
    assert sorted(p.name for p in dataset.parent.iterdir()) == ["ds"]


def test_a_kill_between_two_renames_is_undone(dataset: Path) -> None:
    """Where the file system cannot exchange, the old version is renamed aside first; a kill
    right then leaves only `.ds.old-*`, and the next reader puts it back."""
    manifest = (dataset / "manifest.json").read_text()
    os.rename(dataset, dataset.parent / ".ds.old-0123abcd")
    assert read_manifest(dataset) == json.loads(manifest)
    assert sorted(p.name for p in dataset.parent.iterdir()) == ["ds"]


def test_without_exchange_the_swap_still_replaces(
    dataset: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(folder_swap, "exchange", lambda a, b: False)
    analyze(dataset).close()
    assert "bios" in read_manifest(dataset)["tables"]
    assert sorted(p.name for p in dataset.parent.iterdir()) == ["ds"]


def test_a_second_writer_is_refused(dataset: Path) -> None:
    with WriteLock(dataset), pytest.raises(DatasetError) as err:
        DatasetWriter(dataset, keep=True)
    assert str(err.value) == f"{dataset}: another blkscope process is writing this dataset"
    assert err.value.hint == "wait for it to finish, or write to another folder"


@pytest.mark.slow
@pytest.mark.parametrize("when_s", [0.3, 1.0, 1.7, 2.5])
def test_kill_during_analyze_leaves_the_dataset_as_it_was(dataset: Path, when_s: float) -> None:
    before = _files(dataset)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "blkscope.cli", "analyze", str(dataset), "-q"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(when_s)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    after = _files(dataset)
    if after != before:  # killed after its commit: the whole new version is there
        tables = read_manifest(dataset)["tables"]
        assert set(ANALYSIS) <= set(tables)
        assert all((dataset / t["file"]).is_file() for t in tables.values())
    analyze(dataset).close()  # a rerun completes it and cleans what the kill left
    assert set(ANALYSIS) <= set(read_manifest(dataset)["tables"])
    assert sorted(p.name for p in dataset.parent.iterdir()) == ["ds"]


def test_ctrl_c_during_analyze_exits_130_and_leaves_the_dataset(dataset: Path) -> None:
    """SIGINT while the pairing pass or the statistics run: one line, exit 130, nothing changed
    (the pass checks for signals between slices of 32 K events)."""
    before = _files(dataset)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "blkscope.cli", "analyze", str(dataset), "-q"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    # Signal once the analysis has begun (its next version appears beside the dataset): a
    # fixed delay was sometimes still in start-up or already exiting on a loaded machine.
    deadline = time.monotonic() + 60
    while not list(dataset.parent.glob(".ds.tmp-*")) and proc.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate()
    if _files(dataset) != before:
        # The signal came after the commit: the whole new version is there, and the exit is
        # 130 (still in the command) or 0 (the command had returned: Ctrl-C is ignored then).
        assert set(ANALYSIS) <= set(read_manifest(dataset)["tables"])
        assert (proc.returncode, err.decode()) in ((130, MESSAGE), (0, ""))
        return
    assert proc.returncode == 130
    assert err.decode() == MESSAGE
    assert _files(dataset) == before
    assert sorted(p.name for p in dataset.parent.iterdir()) == ["ds"]
