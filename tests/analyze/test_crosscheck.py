"""`blkscope crosscheck`: the rebuilt requests against the capture's own biosnoop and iostat."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from blkscope.analyze.crosscheck import crosscheck
from blkscope.cli import app
from blkscope.ingest.block_events import ingest_blkparse
from blkscope.ingest.folder import ingest_folder
from blkscope.pipeline import analyze
from tests.clock_truth import trace_zero_mono
from tests.conftest import MQ30, ROOT

runner = CliRunner()


@pytest.fixture(scope="module")
def mq30(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ds = tmp_path_factory.mktemp("mq30") / "ds"
    ingest_folder(MQ30, ds)
    analyze(ds).close()
    return ds


@pytest.mark.slow
def test_crosscheck_numbers(mq30: Path) -> None:
    """biosnoop: every vda row found; loop0 was not traced. iostat: w/s exact, w_await 6.5% and
    r_await 12.5% short (the probe and bio completions after the traced C, see README)."""
    with analyze(mq30).con as con:
        result = crosscheck(con, {"biosnoop", "iostat_log"})
    assert result["biosnoop"] == [
        {"disk": "loop0", "dev": None, "rows": 96, "found": 0, "agree": 0, "median_c_gap_ns": None},
        {
            "disk": "vda",
            "dev": "254,0",
            "rows": 9256,
            "found": 9256,
            "agree": 9231,
            "median_c_gap_ns": 784,
        },
    ]
    (dev,) = result["iostat"]
    assert (dev["dev"], dev["iostat_device"], dev["phase_ns"], dev["intervals"]) == (
        "254,0",
        "vda",
        -85_000_000,
        34,
    )
    assert (dev["w_seconds"], dev["w_s_error"], dev["r_seconds"], dev["r_s_error"]) == (
        30,
        0,
        30,
        0,
    )
    assert round(dev["w_await_error"], 4) == 0.0654 and round(dev["r_await_error"], 4) == 0.1249
    assert dev["w_await_low_share"] == 26 / 30 and dev["r_await_low_share"] == 27 / 30
    # iostat's await minus blkscope's, per IO: what the kernel counts after the traced C
    assert (dev["w_await_gap_ns"], dev["r_await_gap_ns"]) == (9525, 15433)


def test_fitted_phase_matches_the_capture_clock(mq30: Path) -> None:
    """iostat prints whole seconds; the phase fitted from completions puts the end of its first
    interval 3.0 ms from where clock.txt puts it (iostat started 10 ms after that pair)."""
    zero = trace_zero_mono(MQ30)
    first_end = int((MQ30 / "clock.txt").read_text().split()[0]) - zero + 10_000_000 + 10**9
    with analyze(mq30).con as con:
        t1 = con.execute(
            "SELECT t_ns FROM iostat_log WHERE device = 'vda' AND sample = 1"
        ).fetchall()
        (dev,) = crosscheck(con, {"iostat_log"})["iostat"]
    assert abs(t1[0][0] + dev["phase_ns"] - first_end) == 3_026_152


def test_crosscheck_cli_text_and_json(mq30: Path) -> None:
    result = runner.invoke(app, ["crosscheck", str(mq30)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[2] == (
        "  vda = 254,0: 9,256 rows, found 9,256 (100.0%), D2C within 50 us 9,231 (99.7%),"
        " median C gap 784ns"
    )
    assert lines[5] == (
        "    writes: 30 intervals, w/s median error 0.0%, w_await 6.5% (blkscope's the lower in"
        " 87%, by a median 9.53us per IO)"
    )
    parsed = json.loads(runner.invoke(app, ["crosscheck", "--json", str(mq30)]).output)
    assert parsed["biosnoop"][1]["found"] == 9256 and parsed["iostat"][0]["w_seconds"] == 30


def test_crosscheck_without_logs(tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    ingest_blkparse([str(ROOT / "tests/data/analyze/kyber-split-discard.blkparse.txt")], ds)
    result = runner.invoke(app, ["crosscheck", str(ds)])
    assert (result.exit_code, result.stderr, result.stdout) == (
        0,
        f"analyzing {ds} first\n",
        "biosnoop: no log in this dataset\niostat: no log in this dataset\n",
    )
