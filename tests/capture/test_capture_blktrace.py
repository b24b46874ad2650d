"""The blktrace path's control flow, driven by a stand-in `blktrace` script (no root needed)."""

from __future__ import annotations

import os
import signal
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from blkscope.capture.blktrace_native import BlktraceProcess

RUNNING = """#!/bin/sh
# Like blktrace: per-CPU files appear, SIGINT makes it print totals and exit.
while [ $# -gt 0 ]; do case "$1" in -o) name=$2; shift;; -D) dir=$2; shift;; esac; shift; done
printf 'x' > "$dir/$name.blktrace.0"
trap 'echo "=== loop0 ==="; echo "  Total: 9 events (dropped 2),  1 KiB data"; exit 0' INT
while :; do sleep 0.05; done
"""
FAILING = """#!/bin/sh
while [ $# -gt 0 ]; do case "$1" in -o) name=$2; shift;; -D) dir=$2; shift;; esac; shift; done
: > "$dir/$name.blktrace.0"
echo "Invalid path /dev/loop0 specified: 1/Operation not permitted" >&2
exit 1
"""


@pytest.fixture(autouse=True)
def _sigint_not_ignored() -> Iterator[None]:
    """A run started in the background of a non-interactive shell (`pytest &`) ignores SIGINT,
    and an ignored signal stays ignored in the children: the stand-in would never hear the
    SIGINT that stops it. `blkscope capture` itself handles SIGINT in Python before it starts
    blktrace (capture/runner.py), which a child does not inherit; do the same here."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def _install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "blktrace"
    exe.write_text(script)
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    out = tmp_path / "cap"
    out.mkdir()
    return out


def test_running_blktrace_is_used_and_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = _install(tmp_path, monkeypatch, RUNNING)
    bt = BlktraceProcess(["loop0"], out, "trace", 8192)
    assert bt.start() is None
    assert bt.bytes == 1
    bt.stop()
    assert bt.proc is not None and bt.proc.returncode == 0
    assert BlktraceProcess.dropped_in(out) == 2


def test_failing_blktrace_reports_why_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = _install(tmp_path, monkeypatch, FAILING)
    bt = BlktraceProcess(["loop0"], out, "trace", 8192)
    assert bt.start() == "Invalid path /dev/loop0 specified: 1/Operation not permitted"
    assert list(out.iterdir()) == []
    bt.stop()  # safe after a failed start
