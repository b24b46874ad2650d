"""A writeback-heavy workload captured with `blkscope capture` reports its writeback with no
clock hints: the flusher's period (set short here), and kworker IO inside writeback events."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from blkscope.analyze.views import query_table
from blkscope.capture.runner import CaptureOptions, run_capture
from blkscope.capture.tracefs import find_tracefs
from blkscope.dataset import Dataset
from blkscope.reports.make_report import make_report

pytestmark = [
    pytest.mark.usefixtures("exclusive_tracefs"),
    pytest.mark.skipif(os.geteuid() != 0, reason="capture needs root (tracefs, losetup, sysctl)"),
    pytest.mark.skipif(find_tracefs() is None, reason="tracefs is not mounted"),
    pytest.mark.skipif(
        shutil.which("losetup") is None or shutil.which("mkfs.ext4") is None,
        reason="needs losetup and mkfs.ext4 (util-linux, e2fsprogs)",
    ),
]
SYSCTLS = {"vm.dirty_writeback_centisecs": "100", "vm.dirty_expire_centisecs": "200"}
WORKLOAD = """
import os, sys, time
d, log, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
stop = time.monotonic() + secs
bulk = os.open(f"{d}/bulk", os.O_WRONLY | os.O_CREAT)
probe = os.open(f"{d}/probe", os.O_WRONLY | os.O_CREAT)
chunk, page = os.urandom(256 << 10), os.urandom(4096)
with open(log, "w") as out:
    out.write("mono_ns,latency_us\\n")
    while time.monotonic() < stop:
        os.write(bulk, chunk)  # never flushed: the flusher threads write it
        t0 = time.monotonic_ns()
        os.pwrite(probe, page, 0)
        os.fdatasync(probe)
        out.write(f"{t0},{(time.monotonic_ns() - t0) // 1000}\\n")
        time.sleep(0.02)
"""


def _sysctl(name: str) -> str:
    return Path("/proc/sys", *name.split(".")).read_text().strip()


@pytest.fixture
def ext4_loop(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A 256 MiB ext4 loop device mounted in tmp_path, with short writeback intervals."""
    backing = tmp_path / "disk.img"
    with open(backing, "wb") as fh:
        fh.truncate(256 << 20)
    done = subprocess.run(
        ["losetup", "--find", "--show", str(backing)], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        pytest.skip(f"cannot create a loop device: {done.stderr.strip()}")
    dev, mnt = done.stdout.strip(), tmp_path / "mnt"
    mnt.mkdir()
    saved = {name: _sysctl(name) for name in SYSCTLS}
    try:
        subprocess.run(["mkfs.ext4", "-q", "-F", dev], check=True)
        subprocess.run(["mount", dev, str(mnt)], check=True)
        for name, value in SYSCTLS.items():
            subprocess.run(["sysctl", "-qw", f"{name}={value}"], check=True)
        yield Path(dev).name, mnt
    finally:
        for name, value in saved.items():
            subprocess.run(["sysctl", "-qw", f"{name}={value}"], check=False)
        subprocess.run(["umount", str(mnt)], check=False)
        subprocess.run(["losetup", "-d", dev], check=False)


@pytest.mark.slow
def test_capture_to_report_ties_writeback_to_the_trace(
    ext4_loop: tuple[str, Path], tmp_path: Path
) -> None:
    dev, mnt = ext4_loop
    log = tmp_path / "prober.csv"
    script = tmp_path / "workload.py"
    script.write_text(WORKLOAD)
    cap = tmp_path / "cap"
    run_capture(
        CaptureOptions(
            [dev],
            cap,
            duration_s=30,
            command=[sys.executable, str(script), str(mnt), str(log), "10"],
        )
    )
    shutil.copy(log, cap / "prober.csv")
    done = make_report(cap, tmp_path / "report.html", timestamp=False)
    con = Dataset(done.dataset).con
    major, minor = con.execute("SELECT dev_major, dev_minor FROM events LIMIT 1").fetchall()[0]
    # The writeback log landed on the trace's clock without any hint from us.
    assert (
        done.summary_doc
        and con.execute(
            "SELECT count(*), count(t_ns) FROM writeback WHERE dev_major = ? AND dev_minor = ?",
            [major, minor],
        ).fetchall()[0][1]
        >= 5
    )
    # The flusher wakes every second (dirty_writeback_centisecs=100, read from capture.json).
    periods = query_table(
        con, "SELECT * FROM periods WHERE series = 'writeback_events'"
    ).to_pylist()
    assert periods, "the writeback events' period is found"
    assert abs(periods[0]["period_ns"] / 1e9 - 1.0) <= 0.2
    assert "vm.dirty_writeback_centisecs" in periods[0]["knobs"]
    # Flusher (kworker) write bursts fall inside writeback events on the one clock.
    work = query_table(
        con,
        f"SELECT t_ns - duration_ns AS s, t_ns AS e FROM writeback WHERE "
        f"dev_major = {major} AND dev_minor = {minor} AND t_ns IS NOT NULL",
    )
    starts, ends = work["s"].to_numpy(), work["e"].to_numpy()
    kworker = query_table(
        con,
        f"SELECT q_time_ns FROM bios WHERE op = 'W' AND comm LIKE "
        f"'kworker/u%' AND dev_major = {major}",
    )["q_time_ns"].to_numpy()
    assert len(kworker) > 50
    slack = 50_000_000
    inside = [bool(np.any((starts - slack <= t) & (t <= ends + slack))) for t in kworker]
    print(
        f"kworker bios {len(kworker)}, inside writeback {np.mean(inside):.1%}, period {periods[0]['period_ns'] / 1e9:.3f} s"
    )
    assert np.mean(inside) >= 0.8
    assert "writeback_events every" in done.report.read_text()
