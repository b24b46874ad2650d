"""`blkscope check`: thresholds, exact output and exit codes, folders of datasets and captures."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from blkscope.cli import app
from blkscope.errors import InputFormatError
from blkscope.reports.check import parse_threshold
from blkscope.reports.make_report import Written


def _check(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["check", *args])
    return result.exit_code, result.stdout, result.stderr


def test_thresholds_that_hold_pass_with_exit_0(mq_report: Written) -> None:
    ds = str(mq_report.dataset)
    code, out, _ = _check(ds, "--max", "d2c.p99=30ms", "--max", "q2c.max=0.06s",
                          "--max", "requeues=126", "--max", "errors=0", "--max", "d2c.p50=67696ns")  # fmt: skip
    assert code == 0
    w = len(ds)
    assert out.splitlines() == [
        f"{'target'.ljust(w)}  device  metric    threshold   actual     result",
        f"{ds}  vda     d2c.p99   <= 30ms     27.426 ms  PASS",
        f"{ds}  vda     q2c.max   <= 0.06s    53.065 ms  PASS",
        f"{ds}  vda     requeues  <= 126      126        PASS",
        f"{ds}  vda     errors    <= 0        0          PASS",
        f"{ds}  vda     d2c.p50   <= 67696ns  67.696 us  PASS",
        "PASS: all 5 checks passed",
    ]


def test_a_broken_threshold_fails_with_exit_1(mq_report: Written) -> None:
    ds = str(mq_report.dataset)
    code, out, _ = _check(ds, "--max", "d2c.p99=5ms", "--max", "q2c.p50=1ms")
    assert code == 1
    assert [line.split()[1:] for line in out.splitlines()[1:-1]] == [
        ["vda", "d2c.p99", "<=", "5ms", "27.426", "ms", "FAIL"],
        ["vda", "q2c.p50", "<=", "1ms", "89.615", "us", "PASS"],
    ]
    assert out.splitlines()[-1] == "FAIL: 1 of 2 checks failed"


def test_json_output_carries_values_in_ns(mq_report: Written) -> None:
    code, out, _ = _check(str(mq_report.dataset), "--max", "q2c.p999=40ms", "--json")
    assert code == 1
    doc = json.loads(out)
    assert doc["passed"] is False and doc["failed"] == 1
    (c,) = doc["checks"]
    assert (c["metric"], c["limit"], c["actual"], c["passed"]) == (
        "q2c.p999",
        40_000_000,
        41_016_458,
        False,
    )


def test_spike_count_gate_on_the_mq_capture(mq_report: Written) -> None:
    """The bundled capture has 4 block-level and 6 prober spikes in 6 latency episodes: a 'no
    spikes' gate fails, counting episodes."""
    code, out, _ = _check(str(mq_report.dataset), "--max", "spikes=0")
    assert code == 1
    assert out.splitlines()[1].split()[-4:] == ["<=", "0", "6", "FAIL"]
    code, _, _ = _check(str(mq_report.dataset), "--max", "spikes=6")
    assert code == 0


def test_a_folder_fails_when_any_capture_or_dataset_fails(
    mq_report: Written, cut_dataset: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "many"
    folder.mkdir()
    shutil.copytree(mq_report.dataset, folder / "a-mq30")
    shutil.move(cut_dataset, folder / "b-cut")
    (folder / "notes.txt").write_text("not a capture")
    code, out, _ = _check(str(folder), "--max", "d2c.p99=25ms")  # mq30 27.4 ms, the cut 21.5 ms
    assert code == 1
    rows = [line.split() for line in out.splitlines()[1:-1]]
    assert [(Path(r[0]).name, r[-1]) for r in rows] == [("a-mq30", "FAIL"), ("b-cut", "PASS")]
    assert not (folder / "b-cut" / "manifest.json").exists()  # captures are checked read-only


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("d2c.p98=5ms", "error: option --max: unknown metric 'd2c.p98'"),
        ("d2c.p99=5min", "error: option --max: unknown unit 'min' in 'd2c.p99=5min'"),
        ("spikes=1ms", "error: option --max: spikes is a count: got 'spikes=1ms'"),
        ("d2c.p99", "error: option --max: cannot read 'd2c.p99'"),
    ],
)
def test_bad_thresholds_exit_2_with_the_reason(mq_report: Written, spec: str, message: str) -> None:
    code, out, err = _check(str(mq_report.dataset), "--max", spec)
    assert code == 2 and out == ""
    assert err.splitlines()[0] == message


def test_a_folder_without_datasets_is_bad_input(tmp_path: Path) -> None:
    code, _, err = _check(str(tmp_path), "--max", "spikes=0")
    assert code == 2
    assert err.splitlines() == [
        f"error: {tmp_path}: holds no dataset (manifest.json) and no capture (blkparse.txt[.zst])",
        "hint: pass a dataset, a capture, or a folder of them",
    ]


def test_threshold_units() -> None:
    assert parse_threshold("q2c.max=1.5s").limit == 1_500_000_000
    assert parse_threshold("d2c.p90=250us").limit == 250_000
    assert parse_threshold("D2C.P99 = 7 ms").limit == 7_000_000
    with pytest.raises(InputFormatError):
        parse_threshold("periods=1.5")
