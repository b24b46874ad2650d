"""Faults while a dataset is written: a kill forced at each rename of the commit (strace
injects SIGKILL at the syscall), two writers at once, a full disk, a read-only target, an output
under a file. Each ends in one clear line with the documented exit code, and the previous
dataset is intact (or, after a kill, put back by the next reader)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from blkscope.ingest.block_events import ingest_blkparse
from blkscope.store.manifest import read_manifest_doc as read_manifest
from tests.conftest import LOOP_TAIL, MQ30, ROOT, read_zst

OLD = LOOP_TAIL / "blkparse.txt.zst"  # the previous dataset: 3,625 events
NEW = MQ30 / "blkparse.txt.zst"  # what the faulty run writes over it
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
WRITE_HINT = "hint: check the folder exists, is writable and has free space\n"


def _cli(*args: str, strace: list[str] | None = None) -> subprocess.CompletedProcess[bytes]:
    prefix = ["strace", "-f", "-qq", "-o", "/dev/null", *strace] if strace else []
    return subprocess.run(
        [*prefix, sys.executable, "-m", "blkscope.cli", *args],
        env=ENV,
        capture_output=True,
        check=False,
        timeout=300,
    )


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.fixture
def previous(tmp_path: Path) -> Path:
    out = tmp_path / "ds"
    ingest_blkparse([str(OLD)], out)
    return out


needs_strace = pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")


@pytest.mark.slow
@needs_strace
@pytest.mark.parametrize(
    ("path", "inject"),
    [
        ("exchange", ["-e", "trace=rename", "-e", "inject=rename:signal=KILL:when=1"]),
        ("exchange", ["-e", "trace=renameat2", "-e", "inject=renameat2:signal=KILL:when=1"]),
        *[
            (
                "two renames",
                [
                    "-e",
                    "trace=rename,renameat2",
                    "-e",
                    "inject=renameat2:error=EINVAL",
                    "-e",
                    f"inject=rename:signal=KILL:when={when}",
                ],
            )
            for when in (1, 2, 3)
        ],
    ],
    ids=["manifest-rename", "exchange", "fallback-manifest", "fallback-aside", "fallback-in"],
)
def test_kill_at_each_rename_of_the_commit(previous: Path, path: str, inject: list[str]) -> None:
    """The commit renames the manifest into the temp version, then swaps the folder in: one
    renameat2(RENAME_EXCHANGE), or where the file system refuses it (injected EINVAL) two
    renames: NAME -> .NAME.old-*, then the temp version -> NAME. A SIGKILL at the third leaves
    NAME missing, the previous version aside: the next reader puts it back, the next writer
    cleans the rest."""
    before = _files(previous)
    done = _cli("ingest", str(NEW), "-o", str(previous), "-q", strace=inject)
    assert done.returncode == -9  # strace dies of its tracee's SIGKILL
    leftovers = sorted(p.name.split("-")[0] for p in previous.parent.iterdir())
    if inject[-1].endswith("when=3"):
        assert not previous.exists()  # the window the kill hit: only the copy aside
        assert leftovers == [".ds.lock", ".ds.old", ".ds.tmp"]
    else:
        assert _files(previous) == before
    assert read_manifest(previous)["events"]["count"] == 3625  # recovered by a reader
    assert _files(previous) == before
    again = _cli("ingest", str(NEW), "-o", str(previous), "-q")
    assert again.returncode == 0, again.stderr
    assert read_manifest(previous)["events"]["count"] > 3625
    assert sorted(p.name for p in previous.parent.iterdir()) == ["ds"]  # nothing leaked


def test_two_writers_the_second_is_refused(previous: Path) -> None:
    """The first ingest holds the dataset's lock while it reads (stdin kept open); the second
    is refused at once with the documented message and exit 1; the first then commits, and no
    `.old-*` or temp version is left."""
    text = read_zst(NEW)
    first = subprocess.Popen(
        [sys.executable, "-m", "blkscope.cli", "ingest", "-", "-o", str(previous), "-q"],
        env=ENV,
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert first.stdin is not None
    first.stdin.write(text[: len(text) // 2])
    first.stdin.flush()
    deadline = time.monotonic() + 120
    while not list(previous.parent.glob(".ds.tmp-*")):
        assert first.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)
    second = _cli("ingest", str(OLD), "-o", str(previous), "-q")
    assert second.returncode == 1
    assert second.stderr.decode() == (
        f"error: {previous}: another blkscope process is writing this dataset\n"
        "hint: wait for it to finish, or write to another folder\n"
    )
    first.stdin.write(text[len(text) // 2 :])
    first.stdin.close()
    assert first.wait(timeout=300) == 0
    assert read_manifest(previous)["events"]["count"] > 3625  # the first writer's version
    assert sorted(p.name for p in previous.parent.iterdir()) == ["ds"]


@pytest.fixture
def small_tmpfs(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Path]:
    """A 300 KiB tmpfs (or the size the test's `tmpfs_size` mark says): room for the
    3,625-event dataset (48 KB), not for the 30 s capture's (412 KB)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mark = request.node.get_closest_marker("tmpfs_size")
    size = mark.args[0] if mark else "300k"
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "blkscope-test", str(mnt)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {done.stderr.strip()}")
    try:
        yield mnt
    finally:
        # lazily if this process still holds a file there (a failed test's traceback)
        if subprocess.run(["umount", str(mnt)], capture_output=True, check=False).returncode:
            subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_disk_full_during_ingest(small_tmpfs: Path) -> None:
    out = small_tmpfs / "ds"
    ingest_blkparse([str(OLD)], out)
    before = _files(out)
    done = _cli("ingest", str(NEW), "-o", str(out), "-q")
    assert done.returncode == 1
    assert done.stderr.decode() == f"error: {out}: cannot write: No space left on device\n" + (
        WRITE_HINT
    )
    assert _files(out) == before
    assert sorted(p.name for p in small_tmpfs.iterdir()) == ["ds"]  # the temp version is gone


@pytest.mark.tmpfs_size("1m")
def test_disk_full_during_analyze(small_tmpfs: Path) -> None:
    """The analysis tables come from Arrow's writers and DuckDB: the same one line, not
    Arrow's OSError and a second 'Exception ignored' traceback from its writer's __del__."""
    out = small_tmpfs / "ds"
    ingest_blkparse([str(NEW)], out)  # 412 KB of the 1 MiB: its analysis tables do not fit
    before = _files(out)
    done = _cli("analyze", str(out), "-q")
    assert done.returncode == 1
    assert done.stderr.decode() == f"error: {out}: cannot write: No space left on device\n" + (
        WRITE_HINT
    )
    assert _files(out) == before
    assert sorted(p.name for p in small_tmpfs.iterdir()) == ["ds"]


@pytest.mark.parametrize("command", ["ingest", "analyze", "report"])
def test_read_only_target(small_tmpfs: Path, command: str) -> None:
    out = small_tmpfs / "ds"
    ingest_blkparse([str(OLD)], out)
    before = _files(out)
    subprocess.run(["mount", "-o", "remount,ro", str(small_tmpfs)], check=True)
    args = {
        "ingest": ["ingest", str(NEW), "-o", str(out)],
        "analyze": ["analyze", str(out)],
        "report": ["report", str(out), "-o", str(small_tmpfs / "r.html")],
    }[command]
    done = _cli(*args, "-q")
    assert done.returncode == 1
    assert done.stderr.decode() == f"error: {out}: cannot write here: Read-only file system\n" + (
        WRITE_HINT
    )
    assert _files(out) == before


def test_output_under_a_file(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("not a folder")
    done = _cli("ingest", str(OLD), "-o", str(tmp_path / "afile" / "sub" / "ds"), "-q")
    assert done.returncode == 1
    assert done.stderr.decode() == (
        f"error: {tmp_path}/afile/sub/ds: cannot write here: {tmp_path}/afile is a file, "
        "not a folder\nhint: choose an -o whose parent folders are folders\n"
    )
    assert (tmp_path / "afile").read_text() == "not a folder"
    assert json.dumps(sorted(p.name for p in tmp_path.iterdir())) == '["afile"]'


@pytest.mark.parametrize("column", ["time_ns", "action"])
def test_a_damaged_events_page_is_bad_input(previous: Path, column: str) -> None:
    """A page of events.parquet that does not decode (the file damaged on disk) is the
    dataset's fault, named by its file in the folder the user gave (not the hidden folder the
    analysis writes into): exit 2 and the hint to ingest again, never "please report"."""
    events = previous / "events.parquet"
    meta = pq.read_metadata(events)
    chunk = meta.row_group(0).column(meta.schema.names.index(column))
    at = chunk.dictionary_page_offset or chunk.data_page_offset
    damaged = bytearray(events.read_bytes())
    damaged[at : at + 16] = b"\xff" * 16  # the page header: no thrift type is 0xF
    events.unlink()  # a new file: the dataset's others stay as ingested
    events.write_bytes(damaged)
    before = _files(previous)
    done = _cli("analyze", str(previous), "-q")
    assert done.returncode == 2
    error, hint, end = done.stderr.decode().split("\n")
    assert error.startswith(f"error: {events}: is not a readable Parquet file (")
    assert "thrift" in error
    assert (
        hint
        == "hint: the dataset is damaged or was not written by blkscope; ingest the capture again"
    )
    assert end == ""
    assert _files(previous) == before
