"""Progress on stderr: bars on a terminal with short labels, and a line every few seconds when
stderr is not a terminal (a log, CI), so a long run never looks hung (issue 34)."""

from __future__ import annotations

import io
import re
import sys
import time

import pytest

from blkscope import progress
from blkscope.progress import progress_bar, short_label


def test_a_path_label_is_its_file_name() -> None:
    path = "/work/shared/captures/a-capture-with-a-long-name/blkparse.txt.zst"
    assert short_label(path) == "blkparse.txt.zst"


def test_a_long_label_keeps_its_step_to_fit_80_columns() -> None:
    label = "analyze production-db-2026-11-21.dataset: building stage_stats"
    assert short_label(label) == "analyze p….dataset: building stage_stats"
    compiling = "analyze mq.dataset events: compiling the pass (once after an install, 1-2 min)"
    assert short_label(compiling) == "analyze mq.dataset events: compiling th…"
    assert len(short_label(compiling)) == progress.LABEL_WIDTH == 40
    assert short_label("files: spikes") == "files: spikes"


def test_a_label_from_a_traced_machine_is_escaped() -> None:
    assert short_label("/captures/\x1b[2Jtrace") == "\\x1b[2Jtrace"


def test_without_a_terminal_a_line_comes_every_few_seconds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setattr(progress, "LINE_EVERY_S", 0.05)
    with progress_bar() as update:
        assert update is not None
        update("/data/x/blkparse.txt.zst", 3 * 2**20, 12 * 2**20)
        time.sleep(0.18)
        update("analyze x.dataset", 2, 9, unit="steps", label="analyze x.dataset: depth")
        time.sleep(0.18)
    lines = err.getvalue().splitlines()
    assert len(lines) >= 4
    assert re.fullmatch(r"blkparse\.txt\.zst: 3\.0 of 12\.0 MiB \(25%\) \(\d+ s\)", lines[0])
    assert re.fullmatch(r"analyze x\.dataset: depth: 2/9 steps \(\d+ s\)", lines[-1])


def test_without_a_terminal_nothing_is_said_before_the_first_interval(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setattr(progress, "LINE_EVERY_S", 60.0)
    with progress_bar() as update:
        assert update is not None
        update("ingest", 1, 2, unit="steps")
    assert err.getvalue() == ""


def test_disabled_progress_is_no_callback() -> None:
    with progress_bar(enabled=False) as update:
        assert update is None
