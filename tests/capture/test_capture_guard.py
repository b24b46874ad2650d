"""The recorded command's whole process group dies with capture, even when capture is
SIGKILLed (the live version with a real capture is in test_capture_live.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import ROOT

# Stands for capture: runs the command in its own group under a guard, prints the group's id
# and waits to be killed.
_CAPTURE = """
import os, subprocess, sys, time
from blkscope.capture.guard import CommandGuard
proc = subprocess.Popen(["sh", "-c", "sleep 1000 & exec sleep 1001"], start_new_session=True)
guard = CommandGuard(proc.pid)
print(proc.pid, guard.proc.pid, flush=True)

def members(group):
    n = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        n += int(fields[2]) == group and fields[0] != "Z"
    return n

if sys.argv[1] == "release":
    while members(proc.pid) < 2:  # the background sleep is forked (a TERM before would beat it)
        time.sleep(0.01)
    proc.terminate(); proc.wait(); guard.release(); print("released", flush=True)
time.sleep(1000)
"""


def _group(pgid: int) -> list[int]:
    """Live (not zombie) processes of a process group."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            pids.append(int(stat.parent.name))
    return pids


def _wait_until(check: object, wait_s: float = 30.0) -> bool:
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


def _start(mode: str) -> tuple[subprocess.Popen[str], int, int]:
    capture = subprocess.Popen(
        [sys.executable, "-c", _CAPTURE, mode],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert capture.stdout is not None
    group, watchdog = (int(x) for x in capture.stdout.readline().split())
    return capture, group, watchdog


def test_sigkill_of_capture_kills_the_command_group() -> None:
    capture, group, watchdog = _start("hold")
    try:
        assert _wait_until(lambda: len(_group(group)) == 2)  # both sleeps run
        capture.send_signal(signal.SIGKILL)
        capture.wait()
        assert _wait_until(lambda: _group(group) == [])  # SIGTERM at once, no grace needed
        assert _wait_until(lambda: _group(watchdog) == [])  # and the watchdog is gone too
    finally:
        capture.kill()
        for pid in _group(group):
            os.kill(pid, signal.SIGKILL)


def test_a_released_guard_sends_nothing() -> None:
    """After capture stopped the command itself, the watchdog leaves quietly: the group's id
    may have been reused by then."""
    capture, group, watchdog = _start("release")
    try:
        assert capture.stdout is not None
        assert capture.stdout.readline() == "released\n"
        assert _group(watchdog) == []
        # `capture` stopped only the group's leader here (exec'd sleep 1001): the background
        # sleep 1000 is still there, so the watchdog sent the group nothing
        left = _group(group)
        assert [Path(f"/proc/{p}/cmdline").read_bytes() for p in left] == [b"sleep\x001000\x00"]
    finally:
        capture.kill()
        for pid in _group(group):
            os.kill(pid, signal.SIGKILL)
