"""Each input is opened once per command (issue 35): recognising a file's format and reading it
share one open. Counted by strace (every open, Rust and C++ ones too; CI installs it), and by wrapping
Python's opens around the command run in-process (which runs where strace cannot)."""

from __future__ import annotations

import builtins
import collections
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from blkscope.cli import app

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
# the opens strace prints: openat(AT_FDCWD, "PATH", ...) = FD (a failed one ends in an errno)
_OPENAT = re.compile(r'\bopen(?:at2?)?\((?:AT_FDCWD|-?\d+), "((?:[^"\\]|\\.)*)".*\) = \d+')


def _strace_works() -> bool:
    if shutil.which("strace") is None:
        return False
    done = subprocess.run(["strace", "-f", "-o", os.devnull, "true"], capture_output=True)
    return done.returncode == 0  # ptrace may be refused in a container


def _args(command: str, folder: Path, out: Path) -> list[str]:
    if command == "ingest":
        return ["ingest", str(folder), "-o", str(out / "ds"), "-q"]
    return ["report", str(folder), "-o", str(out / "report.html"), "-q"]


def _opens_by_strace(args: list[str], log: Path) -> collections.Counter[str]:
    command = [sys.executable, "-m", "blkscope", *args]
    done = subprocess.run(
        ["strace", "-f", "-qq", "-e", "trace=open,openat,openat2", "-o", str(log), *command],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    opened: collections.Counter[str] = collections.Counter()
    for line in log.read_text().splitlines():
        m = _OPENAT.search(line)
        if m:
            opened[os.path.realpath(m.group(1))] += 1
    return opened


def _opens_in_process(args: list[str], monkeypatch: pytest.MonkeyPatch) -> collections.Counter[str]:
    opened: collections.Counter[str] = collections.Counter()
    real_open, real_os_open = builtins.open, os.open

    def counted(path: Any) -> None:
        if isinstance(path, str | bytes | os.PathLike):
            opened[os.path.realpath(os.fsdecode(path))] += 1

    def open_(file: Any, *a: Any, **k: Any) -> Any:
        f = real_open(file, *a, **k)
        counted(file)
        return f

    def os_open(path: Any, *a: Any, **k: Any) -> int:
        fd = real_os_open(path, *a, **k)
        counted(path)
        return fd

    # io.open is builtins.open, and Path.open calls io.open
    monkeypatch.setattr(builtins, "open", open_)
    monkeypatch.setattr("io.open", open_)
    monkeypatch.setattr(os, "open", os_open)
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return opened


@pytest.mark.slow
@pytest.mark.parametrize("how", ["strace", "python"])
@pytest.mark.parametrize("command", ["ingest", "report"])
@pytest.mark.parametrize("capture", ["mq-writeback-30s", "loop-split-merge-tail"])
def test_each_file_of_a_capture_folder_is_opened_once(
    how: str, command: str, capture: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if how == "strace" and not _strace_works():
        pytest.skip("strace is not installed, or may not trace here (the python count runs)")
    # a copy: report writes its dataset beside the folder
    folder = Path(shutil.copytree(FIXTURES / capture, tmp_path / capture)).resolve()
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    args = _args(command, folder, tmp_path)
    if how == "strace":
        opened = _opens_by_strace(args, tmp_path / "strace.log")
    else:
        opened = _opens_in_process(args, monkeypatch)
    counts = {p.relative_to(folder).as_posix(): opened[str(p)] for p in files}
    assert counts == {name: 1 for name in counts}
    # the capture's every file: its trace in both forms, its side logs and btt's output
    assert len(counts) == {"mq-writeback-30s": 16, "loop-split-merge-tail": 3}[capture]


@pytest.mark.parametrize(
    "names",
    [["blkparse.txt.zst"], ["trace"], ["trace.blktrace.0.zst", "trace.blktrace.1.zst"]],
    ids=["text", "prefix", "binaries"],
)
def test_each_trace_file_given_is_opened_once(
    names: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # telling binaries from text reads a file's first bytes; its reader goes on from them
    folder = (FIXTURES / "loop-split-merge-tail").resolve()
    inputs = [str(folder / n) for n in names]
    opened = _opens_in_process(["ingest", *inputs, "-o", str(tmp_path / "ds"), "-q"], monkeypatch)
    text = names == ["blkparse.txt.zst"]
    assert {p.name: opened[str(p)] for p in sorted(folder.iterdir())} == {
        "blkparse.txt.zst": 1 if text else 0,
        "trace.blktrace.0.zst": 0 if text else 1,
        "trace.blktrace.1.zst": 0 if text else 1,
    }
