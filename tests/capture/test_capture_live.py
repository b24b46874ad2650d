"""Live captures of a loop device (root, tracefs): event counts, tracefs restored on every exit."""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from blkscope.capture import ftrace_blk as ftrace_mod
from blkscope.capture import runner
from blkscope.capture import tracefs as tracefs_mod
from blkscope.capture.runner import CaptureOptions, run_capture
from blkscope.capture.tracefs import (
    SETTINGS,
    device_enable_path,
    find_tracefs,
    restorable,
    snapshot,
)
from blkscope.capture.writeback import WritebackSession
from blkscope.errors import CaptureError
from blkscope.ingest.block_events import ingest_blkparse

REPO = Path(__file__).resolve().parents[2]
TRACEFS = find_tracefs()
pytestmark = [
    pytest.mark.usefixtures("exclusive_tracefs"),
    pytest.mark.skipif(os.geteuid() != 0, reason="capture needs root (tracefs, losetup)"),
    pytest.mark.skipif(TRACEFS is None, reason="tracefs is not mounted"),
    pytest.mark.skipif(
        shutil.which("losetup") is None or shutil.which("dd") is None,
        reason="needs losetup and dd (util-linux, coreutils)",
    ),
]
WRITES = 300


def _traceable() -> list[str]:
    return sorted(p.name for p in Path("/sys/block").iterdir() if (p / "trace/enable").exists())


def _state() -> dict[str, str]:
    """The settings capture touches, buffer_size_kb as restore leaves it (see the test below)."""
    assert TRACEFS is not None
    state = snapshot(TRACEFS, _traceable())
    state["buffer_size_kb"] = restorable(state["buffer_size_kb"])
    return state


def _raw_settings() -> dict[str, bytes]:
    """The bytes of every tracefs setting capture changes, and of the device switches."""
    assert TRACEFS is not None
    raw = {name: (TRACEFS / name).read_bytes() for name in SETTINGS}
    raw |= {dev: device_enable_path(dev).read_bytes() for dev in _traceable()}
    return raw


@pytest.fixture
def loop_dev(tmp_path: Path) -> Iterator[str]:
    """A 16 MiB loop device on a file in tmp_path, detached afterwards."""
    backing = tmp_path / "loop.img"
    with open(backing, "wb") as fh:
        fh.truncate(16 << 20)
    done = subprocess.run(
        ["losetup", "--find", "--show", str(backing)], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        pytest.skip(f"cannot create a loop device: {done.stderr.strip()}")
    dev = done.stdout.strip()
    try:
        yield Path(dev).name
    finally:
        subprocess.run(["losetup", "-d", dev], check=False)


def _dd(dev: str, count: int) -> list[str]:
    return [
        "dd",
        "if=/dev/zero",
        f"of=/dev/{dev}",
        "bs=4k",
        f"count={count}",
        "oflag=direct",
        "status=none",
    ]


@pytest.mark.skipif(shutil.which("blkparse") is None, reason="needs blkparse (apt blktrace)")
def test_capture_counts_every_issued_4k_direct_write(loop_dev: str, tmp_path: Path) -> None:
    before = _state()
    out = tmp_path / "cap"
    m = run_capture(CaptureOptions([loop_dev], out, duration_s=60, command=_dd(loop_dev, WRITES)))
    assert _state() == before
    assert m["stop_reason"] == "command exited with 0"
    assert m["block_source"] in ("ftrace-blk", "blktrace")
    assert m["tracefs_restore_problems"] == []
    saved = json.loads((out / "capture.json").read_text())
    assert saved["devices"][0]["name"] == loop_dev
    assert saved["devices"][0]["backing_file"] == str(tmp_path / "loop.img")
    mono, wall = (int(v) for v in (out / "clock.txt").read_text().split())
    assert (mono, wall) == (saved["clock"]["mono_ns"], saved["clock"]["wall_ns"])
    ingest_blkparse([str(out / "blkparse.txt")], tmp_path / "ds", strict=True)
    ev = pq.read_table(tmp_path / "ds" / "events.parquet").to_pylist()
    minor = int((Path("/sys/block") / loop_dev / "dev").read_text().split(":")[1])
    queued_4k_writes = [
        e
        for e in ev
        if e["action"] == "Q"
        and e["op"] == "W"
        and e["nsectors"] == 8
        and (e["dev_major"], e["dev_minor"]) == (7, minor)
    ]
    assert len(queued_4k_writes) == WRITES
    assert sorted(e["sector"] for e in queued_4k_writes) == list(range(0, WRITES * 8, 8))


def test_every_setting_comes_back_byte_for_byte(loop_dev: str, tmp_path: Path) -> None:
    """Including a ring buffer never used since boot, which reads "7 (expanded: 1408)": the
    kernel refuses that string and cannot shrink a buffer back to unexpanded (new instances
    are born expanded, at 1410), so restore writes the 1408 KiB a first use grows it to."""
    before = _raw_settings()
    run_capture(
        CaptureOptions([loop_dev], tmp_path / "cap", duration_s=60, command=_dd(loop_dev, 8))
    )
    after = _raw_settings()
    shown = before.pop("buffer_size_kb").decode().strip()
    kb = int(after.pop("buffer_size_kb"))
    if shown.isdigit():
        assert kb == int(shown)
    else:  # unexpanded: the kernel rounds the 1408 written up to whole pages (reads 1410)
        assert 0 <= kb - int(restorable(shown)) < 8, (shown, kb)
    assert after == before


def test_failing_command_still_finishes_and_restores(loop_dev: str, tmp_path: Path) -> None:
    before = _state()
    m = run_capture(
        CaptureOptions([loop_dev], tmp_path / "cap", duration_s=30, command=["sh", "-c", "exit 3"])
    )
    assert (m["stop_reason"], m["command_exit_code"]) == ("command exited with 3", 3)
    assert (tmp_path / "cap" / "capture.json").exists()
    assert _state() == before


def test_missing_command_is_an_error_and_restores(loop_dev: str, tmp_path: Path) -> None:
    before = _state()
    with pytest.raises(CaptureError) as err:
        run_capture(
            CaptureOptions(
                [loop_dev], tmp_path / "cap", duration_s=30, command=["/nonexistent/prog"]
            )
        )
    assert str(err.value) == "/nonexistent/prog: cannot run the command: No such file or directory"
    assert _state() == before
    manifest = json.loads((tmp_path / "cap" / "capture.json").read_text())
    assert manifest == {"format": "blkscope-capture", "complete": False}
    # An interrupted capture is still ours: --force replaces it.
    m = run_capture(CaptureOptions([loop_dev], tmp_path / "cap", duration_s=0.1, force=True))
    assert (m["complete"], m["stop_reason"]) == (True, "duration")
    assert _state() == before


def test_failure_midway_restores(
    loop_dev: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _state()

    def broken_start(self: WritebackSession) -> None:
        # The block tracer is already on when this runs: the worst moment to fail.
        assert TRACEFS is not None
        assert (TRACEFS / "current_tracer").read_text().strip() == "blk"
        raise OSError(errno.EIO, "Input/output error", str(self.inst))

    monkeypatch.setattr(
        runner,
        "WritebackSession",
        type("BrokenWriteback", (WritebackSession,), {"start": broken_start}),
    )
    with pytest.raises(CaptureError) as err:
        run_capture(CaptureOptions([loop_dev], tmp_path / "cap", duration_s=30, method="ftrace"))
    assert str(err.value).endswith(": Input/output error")
    assert _state() == before


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_stops_cleanly_and_restores(
    sig: signal.Signals, loop_dev: str, tmp_path: Path
) -> None:
    before = _state()
    out = tmp_path / "cap"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "blkscope.cli",
            "capture",
            "--device",
            loop_dev,
            "--duration",
            "120",
            "-o",
            str(out),
        ],
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stderr is not None
    for line in proc.stderr:  # wait until it is really recording
        if line.startswith("recording"):
            break
    subprocess.run(_dd(loop_dev, 10), check=True)
    proc.send_signal(sig)
    stdout, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, stdout
    m = json.loads((out / "capture.json").read_text())
    assert m["stop_reason"] == f"signal {sig.name}"
    assert m["block_events"] >= 10 * 4  # at least Q, G, D, C for each of the 10 writes
    assert _state() == before


def test_max_size_stops_the_capture_and_the_command(loop_dev: str, tmp_path: Path) -> None:
    before = _state()
    forever = ["sh", "-c", "while :; do " + " ".join(_dd(loop_dev, 4096)) + "; done"]
    m = run_capture(
        CaptureOptions(
            [loop_dev],
            tmp_path / "cap",
            duration_s=120,
            command=forever,
            max_size_mb=1,
            method="ftrace",
        )
    )
    assert m["stop_reason"] == "max-size 1 MiB reached"
    assert m["command_exit_code"] == -signal.SIGTERM
    # An event record is 64 bytes with its ftrace header; the 1 MiB also holds the tracer's
    # other records (process notes, messages): 1.2-1.4 % of it in runs here (16,182 and 16,290
    # events), so at least 90 % of it must be block events.
    assert m["block_events"] >= (1 << 20) // 64 * 9 // 10
    assert _state() == before


@pytest.mark.skipif(shutil.which("mkfs.ext4") is None, reason="needs mkfs.ext4 (e2fsprogs)")
def test_manifest_records_mount_and_journal_mode(loop_dev: str, tmp_path: Path) -> None:
    subprocess.run(["mkfs.ext4", "-q", "-F", f"/dev/{loop_dev}"], check=True)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mount", "-o", "data=journal", f"/dev/{loop_dev}", str(mnt)], check=True)
    write_and_sync = ["sh", "-c", f"dd if=/dev/zero of={mnt}/f bs=64k count=16 status=none; sync"]
    try:
        m = run_capture(
            CaptureOptions([loop_dev], tmp_path / "cap", duration_s=30, command=write_and_sync)
        )
    finally:
        subprocess.run(["umount", str(mnt)], check=True)
    (mount,) = m["devices"][0]["mounts"]
    assert (mount["mountpoint"], mount["fstype"], mount["journal_mode"]) == (
        str(mnt),
        "ext4",
        "journal",
    )
    assert m["stop_reason"] == "command exited with 0"
    # sync wakes the flusher for the loop device's bdi: its writeback must be recorded.
    bdi = (Path("/sys/block") / loop_dev / "dev").read_text().strip()
    rows = [line.split() for line in (tmp_path / "cap" / "writeback_ns.txt").open()][1:]
    assert m["writeback_events"] == len(rows) > 0
    ours = [r for r in rows if r[1] == bdi]
    assert "sync" in {r[3] for r in ours}
    assert all(m["start_mono_ns"] <= int(r[0]) <= m["end_mono_ns"] for r in rows)
    assert set(m["vm_sysctls"]) >= {"vm.dirty_expire_centisecs", "vm.dirty_writeback_centisecs"}


def test_busy_tracefs_is_refused_without_touching_anything(
    loop_dev: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert TRACEFS is not None
    writes: list[str] = []
    real_write = tracefs_mod.write_setting
    monkeypatch.setattr(
        tracefs_mod, "write_setting", lambda path, value: writes.append(f"{path}={value}")
    )
    monkeypatch.setattr(
        ftrace_mod, "write_setting", lambda path, value: writes.append(f"{path}={value}")
    )
    real_write(TRACEFS / "current_tracer", "blk")  # someone else's tracer, with no device on
    try:
        before = _state()
        with pytest.raises(CaptureError) as err:
            run_capture(CaptureOptions([loop_dev], tmp_path / "cap", duration_s=5, method="ftrace"))
        after = _state()
    finally:
        real_write(TRACEFS / "current_tracer", "nop")
    assert str(err.value) == f"{TRACEFS}/current_tracer: another tracer (blk) is active"
    assert writes == []
    assert after == before


def _children(pid: int) -> list[int]:
    kids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            kids.append(int(stat.parent.name))
    return kids


def _force_back(before: dict[str, str]) -> None:
    """Last resort for this test only: write the snapshot back by hand."""
    assert TRACEFS is not None
    for key in ("options/bin", "current_tracer", "trace_clock", "buffer_size_kb", "tracing_on"):
        if before[key] != tracefs_mod.read_setting(TRACEFS / key):
            tracefs_mod.write_setting(TRACEFS / key, before[key])
    for key, value in before.items():
        if key.endswith("/trace/enable"):
            tracefs_mod.write_setting(Path("/sys/block") / key, value)
    for inst in (TRACEFS / "instances").iterdir():
        if inst.name not in before["instances"].split():
            inst.rmdir()


def _started_group(parent: int, wait_s: float = 10.0) -> list[int]:
    """The recorded command's processes once `sh -c "sleep 1000 & exec sleep 1001"` has forked
    and exec'd: "recording" is printed before the shell runs, so under load it may not yet have
    (polls up to wait_s; returns what it saw last)."""
    deadline = time.monotonic() + wait_s
    while True:
        group = []
        for pid in _children(parent):
            try:
                if Path(f"/proc/{pid}/cmdline").read_bytes() == b"sleep\x001001\x00":
                    group = [pid, *_children(pid)]
            except OSError:
                continue
        if len(group) == 2 or time.monotonic() > deadline:
            return group
        time.sleep(0.05)


def _dies(pid: int, wait_s: float = 10.0) -> bool:
    """True once the process is gone or a zombie (polls up to wait_s)."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return True
        if state == "Z" or time.monotonic() > deadline:
            return state == "Z"
        time.sleep(0.05)


def test_sigkill_leaves_a_journal_for_capture_restore(loop_dev: str, tmp_path: Path) -> None:
    before = _state()
    out = tmp_path / "cap"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cli = [sys.executable, "-m", "blkscope.cli"]
    proc = subprocess.Popen(
        [*cli, "capture", "--device", loop_dev, "--duration", "120", "-o", str(out)],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            if line.startswith("recording"):
                break
        tools = _children(proc.pid)
        proc.kill()
        proc.wait()
        assert _state()["current_tracer"] == "blk"  # SIGKILL cannot be caught
        done = subprocess.run(
            [*cli, "capture-restore", str(out)], capture_output=True, text=True, env=env
        )
        assert (done.returncode, done.stdout) == (0, "tracefs settings restored\n")
        assert _state() == before
        assert not (out / "tracefs_saved.json").exists()
        # iostat and vmstat die with the capture (setpriv --pdeathsig); the signal is
        # delivered asynchronously, so a loaded machine may need a moment
        assert all(_dies(pid) for pid in tools)
    finally:
        if proc.poll() is None:
            proc.kill()
        if _state() != before:
            _force_back(before)


def test_sigkill_of_capture_ends_the_recorded_command(loop_dev: str, tmp_path: Path) -> None:
    """`capture -- CMD` SIGKILLed: CMD's whole process group (a shell's background child too)
    is gone within the guard's grace; the limits were printed before recording began."""
    before = _state()
    out = tmp_path / "cap"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cli = [sys.executable, "-m", "blkscope.cli"]
    command = ["sh", "-c", "sleep 1000 & exec sleep 1001"]
    proc = subprocess.Popen(
        [*cli, "capture", "--device", loop_dev, "--duration", "120", "-o", str(out), "--",
         *command],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )  # fmt: skip
    said = []
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            said.append(line)
            if line.startswith("recording"):
                break
        group = _started_group(proc.pid)  # sleep 1001 (the shell, exec'd) and sleep 1000
        assert len(group) == 2
        proc.kill()
        proc.wait()
        assert all(_dies(pid, wait_s=30) for pid in group)
        limits = [line for line in said if line.startswith("limits: ")]
        assert len(limits) == 1
        assert re.fullmatch(
            r"limits: the block trace stops at [\d,]+ MiB on disk( \(90% of the free space, "
            r"under --max-size\))?; kernel trace buffers hold at most [\d,.]+ MiB\n",
            limits[0],
        )
        done = subprocess.run(
            [*cli, "capture-restore", str(out)], capture_output=True, text=True, env=env
        )
        assert (done.returncode, done.stdout) == (0, "tracefs settings restored\n")
        assert _state() == before
    finally:
        if proc.poll() is None:
            proc.kill()
        if _state() != before:
            _force_back(before)
