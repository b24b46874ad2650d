"""`blkscope capture --files` live on a fresh ext4 loop device: the file written during the
capture is mapped and its bytes attributed, the journal labelled, tracefs as it was before."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from blkscope.analyze.file_usage import During, file_usage
from blkscope.capture.tracefs import find_tracefs, snapshot
from blkscope.dataset import Dataset
from blkscope.ingest.folder import ingest_folder
from blkscope.pipeline import analyze

REPO = Path(__file__).parents[2]
TRACEFS = find_tracefs()
pytestmark = [
    pytest.mark.usefixtures("exclusive_tracefs"),
    pytest.mark.skipif(os.geteuid() != 0, reason="capture needs root (tracefs, losetup, mount)"),
    pytest.mark.skipif(TRACEFS is None, reason="tracefs is not mounted"),
    pytest.mark.skipif(
        any(shutil.which(t) is None for t in ("losetup", "mkfs.ext4", "mount", "dumpe2fs")),
        reason="needs losetup, mount and e2fsprogs",
    ),
]


@pytest.fixture
def ext4_loop(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A 64 MiB ext4 (4 KiB blocks) on a loop device, mounted; unmounted and detached after."""
    image = tmp_path / "ext4.img"
    with open(image, "wb") as fh:
        fh.truncate(64 << 20)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-b", "4096", str(image)], check=True)
    done = subprocess.run(["losetup", "--find", "--show", str(image)], capture_output=True,
                          text=True, check=False)  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot create a loop device: {done.stderr.strip()}")
    dev = done.stdout.strip()
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    try:
        if subprocess.run(["mount", dev, str(mnt)], check=False).returncode != 0:
            pytest.skip("cannot mount ext4 here")
        try:
            (mnt / "data").mkdir()
            yield Path(dev).name, mnt
        finally:
            subprocess.run(["umount", str(mnt)], check=False)
    finally:
        subprocess.run(["losetup", "-d", dev], check=False)


WRITER = (
    "import os, sys\n"
    "with open(sys.argv[1], 'wb') as f:\n"
    "    f.write(b'TAG:f;' * (1 << 18)); f.flush(); os.fsync(f.fileno())\n"
)


def test_capture_files_maps_the_written_file_and_the_journal(
    ext4_loop: tuple[str, Path], tmp_path: Path
) -> None:
    dev, mnt = ext4_loop
    assert TRACEFS is not None
    before = snapshot(TRACEFS, [dev])
    out = tmp_path / "cap"
    target = mnt / "data" / "f"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "blkscope.cli", "capture", "-d", dev, "-o", str(out),
         "--duration", "20", "--files", str(mnt / "data"), "--",
         sys.executable, "-c", WRITER, str(target)],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "file map: 2 files, " in done.stderr
    assert snapshot(TRACEFS, [dev]) == before
    doc = json.loads((out / "capture.json").read_text())["file_map"]
    assert (doc["files_mapped"], doc["left_out"], doc["skipped"]) == (2, [], {})
    ds = tmp_path / "ds"
    ingest_folder(out, ds)
    analyze(ds).close()
    usage = file_usage(Dataset(ds).con, During())
    by_path = {f["path"]: f for f in usage["files"]}
    written = by_path[str(target)]
    assert written["write_bytes"] == 6 << 18  # 1.5 MiB of tags, every byte attributed
    assert any(f["kind"] == "journal" and f["path"] == f"<{dev}: journal>" for f in
               usage["files"])  # fmt: skip
    assert sum(k["bytes"] for k in usage["by_kind"]) == usage["bytes"]
