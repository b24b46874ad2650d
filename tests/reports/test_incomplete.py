"""A trace missing part of itself is named as such at ingest, in analyze's output and on the
page, never with a traceback: only CPU 0's blktrace file of the bundled capture (its
completions were all logged on CPU 1), and a real blkparse cut with its C lines removed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from blkscope.cli import app
from tests.reports.conftest import CUTS, MQ30_CAPTURE
from tests.reports.page_parser import parse

ONLY_CPU0 = (
    "only CPU 0 of 2 per-CPU files given (C events: 0): the events the other CPUs logged are "
    "missing (files trace.blktrace.N)"
)
NO_COMPLETIONS = (
    "no completions (C events: 0): no latency can be measured, and every dispatched request "
    "counts as in flight to the end of the trace"
)


@pytest.fixture(scope="module")
def cpu0(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """trace.blktrace.0.zst given alone, with trace.blktrace.1.zst beside it."""
    folder = tmp_path_factory.mktemp("cpu0")
    for f in MQ30_CAPTURE.glob("trace.blktrace.*"):
        shutil.copy(f, folder / f.name)
    return folder / "trace.blktrace.0.zst"


def test_ingest_names_the_missing_cpu(cpu0: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["ingest", str(cpu0), "-o", str(tmp_path / "ds"), "-q"])
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [f"warning: {ONLY_CPU0}", f"warning: {NO_COMPLETIONS}"]
    manifest = json.loads((tmp_path / "ds" / "manifest.json").read_text())
    assert manifest["completeness"]["per_cpu_files"] == [
        {"trace": "trace", "cpus_given": [0], "cpus_found": [0, 1]}
    ]
    ensure_analyzed = CliRunner().invoke(app, ["analyze", str(tmp_path / "ds"), "--json"])
    assert ensure_analyzed.exit_code == 0
    assert json.loads(ensure_analyzed.stdout)["warnings"] == [ONLY_CPU0, NO_COMPLETIONS]
    text = CliRunner().invoke(app, ["analyze", str(tmp_path / "ds")]).stdout.splitlines()
    assert text[:2] == [f"WARNING: {ONLY_CPU0}", f"WARNING: {NO_COMPLETIONS}"]


def test_the_page_of_a_single_cpu_ingest_says_so(cpu0: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    result = CliRunner().invoke(app, ["report", str(cpu0), "-o", str(out), "--no-timestamp"])
    assert result.exit_code == 0, result.output
    page = parse(out.read_text())
    text = [t.strip() for t in page.text if t.strip()]
    assert f"Warning: {ONLY_CPU0}" in text and f"Warning: {NO_COMPLETIONS}" in text
    assert "no completions: no latency to draw" in text
    assert page.tags["svg"] == 4  # every still chart drawn, saying what it cannot show
    assert "no completions: no rate to draw" in text  # and the time charts' notes say it too
    summary = json.loads((tmp_path / "r.summary.json").read_text())
    assert summary["warnings"] == [ONLY_CPU0, NO_COMPLETIONS]
    assert summary["devices"][0]["completions"] == 0


def test_the_page_of_a_trace_without_completions_says_so(tmp_path: Path) -> None:
    lines = (CUTS / "mq30-requeue.blkparse.txt").read_text().splitlines(keepends=True)
    kept = [line for line in lines if len(line.split()) < 6 or line.split()[5] != "C"]
    assert len(kept) < len(lines)
    trace = tmp_path / "no-c.txt"
    trace.write_text("".join(kept))
    out = tmp_path / "r.html"
    result = CliRunner().invoke(app, ["report", str(trace), "-o", str(out), "--no-timestamp"])
    assert result.exit_code == 0, result.output
    text = [t.strip() for t in parse(out.read_text()).text if t.strip()]
    assert f"Warning: {NO_COMPLETIONS}" in text
    assert (
        "Trace start: not known on the wall clock (times are seconds since the first event)."
        in (text)
    )
