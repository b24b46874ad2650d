"""Every numeric option goes through one parser: nan, inf, 0, negative and absurd values are one
line `error: option --x: ...` with a hint and exit 2, before any work starts."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from blkscope.cli import app
from blkscope.errors import OptionError
from blkscope.ingest.block_events import ingest_blkparse
from blkscope.units import MAX_DURATION_NS, option_duration_ns, option_number
from tests.conftest import LOOP_TAIL

runner = CliRunner()
DURATION_HINT = "hint: e.g. {} 1s, 100ms, 250us"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("options") / "ds"
    ingest_blkparse([str(LOOP_TAIL / "blkparse.txt.zst")], out)
    return out


def _run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    ("value", "line"),
    [
        ("nan", "not a duration: 'nan'"),
        ("inf", "not a duration: 'inf'"),
        ("-1", "not a duration: '-1'"),
        ("0", "must be more than 0, got '0'"),
        ("0ms", "must be more than 0, got '0ms'"),
        ("1e3", "not a duration: '1e3'"),
    ],
)
def test_analyze_interval(dataset: Path, value: str, line: str) -> None:
    code, out, err = _run("analyze", str(dataset), "--interval", value)
    assert (code, out) == (2, "")
    assert err == f"error: option --interval: {line}\n{DURATION_HINT.format('--interval')}\n"
    assert sorted(p.name for p in dataset.iterdir()) == [  # nothing was analysed
        "blkparse_summary.parquet",
        "events.parquet",
        "ingest_errors.parquet",
        "last_plugs.parquet",
        "manifest.json",
    ]


def test_analyze_interval_as_a_duration(dataset: Path, tmp_path: Path) -> None:
    # "500ms" and a bare "0.5" (seconds, as before) are the same interval
    code, out, _ = _run("analyze", str(dataset), "--interval", "500ms", "--json")
    assert code == 0
    assert '"devices"' in out


@pytest.mark.parametrize(
    ("args", "err"),
    [
        (["--window", "0"], "error: option --window: must be more than 0, got '0'\n"
         + DURATION_HINT.format("--window") + "\n"),
        (["--window", "nan"], "error: option --window: not a duration: 'nan'\n"
         + DURATION_HINT.format("--window") + "\n"),
        (["--window", "9" * 30 + "s"], f"error: option --window: '{'9' * 30}s' is too long "
         "(at most 146 years)\n"),
        (["--k", "nan"], "error: option --k: must be a finite number, got 'nan'\n"
         "hint: e.g. --k 5\n"),
        (["--k", "inf"], "error: option --k: must be a finite number, got 'inf'\n"
         "hint: e.g. --k 5\n"),
        (["--k", "-2"], "error: option --k: must be at least 0, got '-2'\n"),
        (["--k", "five"], "error: option --k: not a number: 'five'\nhint: e.g. --k 5\n"),
        (["--threshold", "0"], "error: option --threshold: must be more than 0, got '0'\n"
         + DURATION_HINT.format("--threshold") + "\n"),
        (["--metric", "q2d"], "error: option --metric: must be q2c or d2c, got 'q2d'\n"),
    ],
)  # fmt: skip
def test_spikes_options(dataset: Path, args: list[str], err: str) -> None:
    assert _run("spikes", str(dataset), *args) == (2, "", err)


@pytest.mark.parametrize(
    ("spec", "err"),
    [
        ("d2c.p99=" + "9" * 400 + "s", "error: option --max: '" + "9" * 400 + "' is too long "
         "(at most 146 years)\n"),
        ("d2c.p99=10", "error: option --max: d2c.p99=10 needs a unit: ns, us, ms or s\n"
         "hint: e.g. d2c.p99=10ms\n"),
        ("spikes=" + "9" * 5000, "error: option --max: spikes of " + "9" * 24
         + " is out of range\n"),
    ],
)  # fmt: skip
def test_check_thresholds_out_of_range(dataset: Path, spec: str, err: str) -> None:
    """float('9' * 400) is inf: round() of it was an OverflowError traceback."""
    assert _run("check", str(dataset), "--max", spec) == (2, "", err)


def test_partitions_device(dataset: Path) -> None:
    code, _, err = _run("partitions", str(dataset), "/proc/partitions", "--device", "sda")
    assert code == 2
    assert err == "error: option --device: expected MAJOR,MINOR like 8,0, got 'sda'\n"


@pytest.mark.parametrize("value", ["nan", "inf", "-5", "0"])
def test_capture_duration(tmp_path: Path, value: str) -> None:
    """Refused before anything is checked or touched (no root needed, no folder made)."""
    code, _, err = _run("capture", "-d", "loop0", "-o", str(tmp_path / "cap"), "--duration", value)
    assert code == 2
    assert err.startswith("error: option --duration: ")
    assert not (tmp_path / "cap").exists()


def test_the_parsers_directly() -> None:
    assert option_duration_ns("1.5", "--x") == 1_500_000_000
    assert option_duration_ns("250us", "--x") == 250_000
    assert option_duration_ns("0", "--x", zero_ok=True) == 0
    assert option_duration_ns(f"{MAX_DURATION_NS}ns", "--x") == MAX_DURATION_NS
    assert option_number("0", "--k") == 0.0
    with pytest.raises(OptionError) as err:
        option_number("1e999", "--k")  # float() reads it as inf
    assert str(err.value) == "option --k: must be a finite number, got '1e999'"
