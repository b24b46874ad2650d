"""Ctrl-C exits 130 with one line in every command, whatever it was doing: reading input,
pairing events, a DuckDB query (which DuckDB turns into RuntimeError("Query interrupted")).

Each test signals the real `python -m blkscope.cli` once its work has begun, seen from outside
(a temp version beside the dataset, DuckDB loaded), never after a fixed delay: under the full
suite's load a delay falls in start-up or after the end.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from blkscope import interrupts
from blkscope.cli import app
from blkscope.ingest.block_events import ingest_blkparse
from tests.conftest import LOOP_TAIL, MQ30, ROOT, read_zst

MESSAGE = b"interrupted: nothing is left half-written\n"
SLOW_QUERY = "SELECT sum((a.sector * b.sector * c.sector) % 7) FROM events a, events b, events c"


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    out = tmp_path / "ds"
    ingest_blkparse([str(LOOP_TAIL / "blkparse.txt.zst")], out)
    return out


def _state(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file's (inode, size) in the folder and its parent: what a write would change."""
    return {
        str(p.relative_to(folder.parent)): (p.stat().st_ino, p.stat().st_size)
        for p in sorted(folder.parent.rglob("*"))
        if p.is_file()
    }


def _loaded(pid: int, library: str) -> bool:
    try:
        return library in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


def _interrupt(
    args: list[str], begun: Callable[[subprocess.Popen[bytes]], bool], **popen: object
) -> tuple[int, bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "blkscope.cli", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        **popen,  # type: ignore[call-overload]
    )
    try:
        deadline = time.monotonic() + 120
        while not begun(proc):
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else b""
            assert time.monotonic() < deadline
            time.sleep(0.01)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, err


def _temp_version_of(dataset: Path) -> Callable[[subprocess.Popen[bytes]], bool]:
    return lambda proc: bool(list(dataset.parent.glob(f".{dataset.name}.tmp-*")))


def test_ingest_waiting_for_more_input(tmp_path: Path) -> None:
    """stdin is a pipe the test keeps open: the ingest is mid-input when the signal comes.

    Then the pipe closes, as it does at a terminal, where Ctrl-C stops the whole pipeline
    (`zstdcat x | blkscope ingest -`): a signal the kernel hands to one of Arrow's threads
    cannot interrupt the main thread's read, which returns at the pipe's end, and Python then
    runs the handler. It must still be an interrupt, not a complete dataset of half the input."""
    out = tmp_path / "ds"
    ingest_blkparse([str(LOOP_TAIL / "blkparse.txt.zst")], out)
    before = _state(out)
    text = read_zst(MQ30 / "blkparse.txt.zst")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "blkscope.cli", "ingest", "-", "-o", str(out), "-q"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stderr is not None
    proc.stdin.write(text[: len(text) // 2])
    proc.stdin.flush()
    deadline = time.monotonic() + 120
    while not _temp_version_of(out)(proc):
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    proc.stdin.close()
    err = proc.stderr.read()
    proc.wait(timeout=60)
    assert (proc.returncode, err) == (130, MESSAGE)
    assert _state(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds"]  # the temp version is gone


@pytest.mark.slow
@pytest.mark.parametrize(
    "command",
    [
        ["spikes", "{ds}"],
        ["periods", "{ds}"],
        ["report", "{ds}", "-o", "{out}/r.html"],
        ["compare", "{ds}", "{ds}"],
        ["check", "{ds}", "--max", "spikes=0"],
    ],
    ids=lambda c: c[0],
)
def test_commands_that_analyze_first(dataset: Path, tmp_path: Path, command: list[str]) -> None:
    """The dataset has only its ingested tables, so each command analyses it first: signalled
    while that runs (its next version is being built beside it)."""
    before = _state(dataset)
    args = [a.format(ds=dataset, out=tmp_path) for a in command]
    code, err = _interrupt(args, _temp_version_of(dataset))
    assert (code, err.splitlines()[-1]) == (130, MESSAGE.strip())
    assert b"Traceback" not in err
    assert _state(dataset) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds"]  # no report, no leftovers


def test_sql_during_a_duckdb_query(dataset: Path) -> None:
    """DuckDB reports the signal as RuntimeError("Query interrupted"): still 130, one line."""
    before = _state(dataset)
    started: dict[str, float] = {}

    def querying(proc: subprocess.Popen[bytes]) -> bool:
        # DuckDB is loaded inside the command, just before the query; the query (3,625 cubed
        # rows) then runs for minutes, so a second later it is surely executing.
        if "t" not in started and _loaded(proc.pid, "duckdb"):
            started["t"] = time.monotonic()
        return "t" in started and time.monotonic() > started["t"] + 1.0

    code, err = _interrupt(["sql", str(dataset), SLOW_QUERY], querying)
    assert (code, err) == (130, MESSAGE)
    assert _state(dataset) == before


def test_an_error_caused_by_the_interrupt_is_reported_as_the_interrupt(
    dataset: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In process: once SIGINT came, the exception it caused (here DuckDB's, wrapped by the
    library or not) ends the command as an interrupt, not as a failure with a traceback."""
    from blkscope.analyze import query

    def stopped(*args: object) -> str:
        interrupts._came.set()
        raise RuntimeError("Query interrupted")

    monkeypatch.setattr(query, "run_query", stopped)
    try:
        result = CliRunner().invoke(app, ["sql", str(dataset), "SELECT 1"])
    finally:
        interrupts._came.clear()
    assert (result.exit_code, result.stderr) == (130, MESSAGE.decode())
