"""What the CLI fuzzer (tests/fuzz/cli.py) found, each with the command line that caused it
(`python -m tests.fuzz.campaign --seed S --replay-cli K` rebuilds one) and the exact output."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from blkscope.cli import app
from blkscope.ingest.block_events import ingest_blkparse
from tests.conftest import ROOT

TRACE = ROOT / "tests" / "data" / "formats" / "syn.blkparse.txt"


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), catch_exceptions=False)
    return result.exit_code, result.stderr


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cli-fuzz") / "ds"
    ingest_blkparse([str(TRACE)], out)
    return out


def test_a_query_that_is_not_utf8_is_refused(dataset: Path) -> None:
    """seed 1 run 27: was TypeError from DuckDB's extract_statements."""
    code, err = _run("sql", str(dataset), "select '\udcff'")
    assert (code, err) == (
        2,  # bad input
        "error: the query is not valid UTF-8 (at character 9)\n"
        "hint: the shell passed bytes that are not UTF-8: use a UTF-8 locale (LANG=C.UTF-8)\n",
    )


def test_a_dataset_path_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    """seed 1 run 15: `ingest -o caf\\xe9\\xff` was UnicodeEncodeError from Arrow's writer."""
    out = os.fsdecode(os.fsencode(str(tmp_path)) + b"/caf\xe9\xff")
    code, err = _run("ingest", str(TRACE), "-o", out, "-q")
    assert (code, err) == (
        1,
        f"error: {tmp_path}/caf\\udce9\\udcff: the dataset's path is not valid UTF-8 (Arrow and "
        "DuckDB cannot open it)\nhint: choose a path whose name is UTF-8\n",
    )
    assert not Path(out).exists()
    code, err = _run("analyze", out)
    assert code == 1 and "the dataset's path is not valid UTF-8" in err


def test_a_dataset_name_too_long_is_an_error_line(tmp_path: Path) -> None:
    """seed 1 run 8: `analyze x*300` was OSError ENAMETOOLONG from Path.exists()."""
    name = str(tmp_path / ("x" * 300))
    code, err = _run("analyze", name)
    assert (code, err) == (1, f"error: {name}: cannot open: File name too long\n")


def test_a_trace_whose_name_is_not_utf8_gets_a_report(tmp_path: Path) -> None:
    """seed 1 run 9: the report of in\\xff.txt was UnicodeEncodeError writing the HTML."""
    trace = Path(os.fsdecode(os.fsencode(str(tmp_path)) + b"/in\xff.txt"))
    trace.write_bytes(TRACE.read_bytes())
    code, err = _run("report", str(trace), "-o", str(tmp_path / "r.html"), "-q")
    assert (code, err) == (0, "")
    html = (tmp_path / "r.html").read_bytes().decode("utf-8")  # valid UTF-8
    assert "in\\udcff.txt" in html


def test_an_input_name_too_long_is_an_error_line(tmp_path: Path) -> None:
    """seed 1 run 14: `ingest x*300` was OSError ENAMETOOLONG from Path.is_dir()."""
    name = str(tmp_path / ("x" * 300))
    code, err = _run("ingest", name, "-o", str(tmp_path / "ds"))
    assert (code, err) == (2, f"error: {name}: cannot open: File name too long\n")


@pytest.mark.parametrize(
    ("command", "what", "example"),
    [("ingest", "dataset", "trace.dataset"), ("report", "report", "report.html")],
)
def test_an_output_named_dash_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, what: str, example: str
) -> None:
    """The CLI fuzzer's `report TRACE -o -` wrote a file '-' and a dataset '-.dataset' into the
    working directory; `ingest TRACE -o -` a dataset '-'."""
    monkeypatch.chdir(tmp_path)
    code, err = _run(command, str(TRACE), "-o", "-")
    assert (code, err) == (
        1,
        f"error: -: '-' would be read as stdout, but the {what} is written to a path\n"
        f"hint: give the {what} a name, e.g. -o {example}\n",
    )
    assert list(tmp_path.iterdir()) == []


def test_a_report_named_nothing_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """seed 1 run 1781: `report TRACE -o ''` was ValueError "PosixPath('.') has an empty name"."""
    monkeypatch.chdir(tmp_path)
    code, err = _run("report", str(TRACE), "-o", "")
    assert (code, err) == (
        1,
        "error: .: is a folder, not a name for the report\nhint: e.g. -o report.html\n",
    )


def test_check_of_a_device_file_reads_it_as_a_trace() -> None:
    """seed 1: `check /dev/null` was NotADirectoryError listing it as a folder."""
    code, err = _run("check", "/dev/null", "--max", "spikes=1")
    assert (code, err) == (
        2,
        "error: /dev/null: empty input: expected blkparse default-format text\n"
        "hint: ingest reads blktrace per-CPU files (NAME.blktrace.N, or their NAME prefix), "
        "blkparse text, or the ftrace text of the blk tracer or the block tracepoints\n",
    )


def test_check_of_a_name_too_long_is_an_error_line(tmp_path: Path) -> None:
    """seed 1: `check x*300` was OSError ENAMETOOLONG from Path.exists()."""
    name = str(tmp_path / ("x" * 300))
    code, err = _run("check", name, "--max", "spikes=1")
    assert (code, err) == (2, f"error: {name}: cannot open: File name too long\n")


def test_check_prints_untrusted_names_escaped(tmp_path: Path) -> None:
    """seed 1: a target name that is not UTF-8 was UnicodeEncodeError printing the table; a
    control character in it would have reached the terminal as is."""
    trace = Path(os.fsdecode(os.fsencode(str(tmp_path)) + b"/in\xff\x1b[2J.txt"))
    trace.write_bytes(TRACE.read_bytes())
    result = CliRunner().invoke(app, ["check", str(trace), "--max", "spikes=100"])
    assert result.exit_code == 0
    assert f"{tmp_path}/in\\udcff\\x1b[2J.txt  8,16    spikes" in result.stdout
    assert "\x1b" not in result.stdout
    code, err = _run("check", str(tmp_path / "gone\x1b[2J"), "--max", "spikes=1")
    assert (code, err) == (2, f"error: {tmp_path}/gone\\x1b[2J: does not exist\n")


def test_partitions_device_out_of_range_is_an_option_error(dataset: Path) -> None:
    """seed 1: `partitions --device 99999999999,1` was ArrowInvalid deep in the join."""
    listing = ROOT / "tests" / "data" / "partitions" / "proc_partitions_vm.txt"
    code, err = _run("partitions", str(dataset), str(listing), "--device", "99999999999,1")
    assert (code, err) == (
        2,
        "error: option --device: MAJOR,MINOR out of range (major < 4096, minor < 1048576), "
        "got '99999999999,1'\n",
    )


def test_a_report_under_a_file_names_the_file(tmp_path: Path) -> None:
    """seed 1: `report -o FILE/r.html` was FileExistsError from mkdir."""
    (tmp_path / "afile").write_text("")
    code, err = _run("report", str(TRACE), "-o", str(tmp_path / "afile" / "r.html"), "-q")
    assert (code, err) == (
        1,
        f"error: {tmp_path}/afile/r.html: cannot write here: {tmp_path}/afile is a file, not "
        "a folder\nhint: choose an -o whose parent folders are folders\n",
    )


def test_a_report_never_overwrites_its_own_trace(tmp_path: Path) -> None:
    """seed 2: `report TRACE -o TRACE` replaced the capture with the page (the fuzzer's run
    overwrote tests/data/formats/syn.blkparse.txt in the checkout); a report or summary.json of
    an earlier run is replaced as before."""
    trace = tmp_path / "t.txt"
    trace.write_bytes(TRACE.read_bytes())
    code, err = _run("report", str(trace), "-o", str(trace), "-q")
    assert (code, err) == (
        1,
        f"error: {trace}: exists and is not one blkscope wrote: not overwritten\n"
        "hint: choose another -o, or move that file away first\n",
    )
    assert trace.read_bytes() == TRACE.read_bytes()
    (tmp_path / "r.summary.json").write_text('{"mine": 1}')
    code, err = _run("report", str(trace), "-o", str(tmp_path / "r.html"), "-q")
    assert code == 1 and err.startswith(f"error: {tmp_path}/r.summary.json: exists and is not")
    (tmp_path / "r.summary.json").unlink()
    for _ in range(2):  # the second run replaces the first's page and summary
        assert _run("report", str(trace), "-o", str(tmp_path / "r.html"), "-q") == (0, "")


def test_a_report_of_a_name_too_long_is_an_error_line(tmp_path: Path) -> None:
    """seed 2 run 1722: `report x*300` was OSError ENAMETOOLONG from Path.is_dir()."""
    name = str(tmp_path / ("x" * 300))
    code, err = _run("report", name, "-o", str(tmp_path / "r.html"), "-q")
    assert (code, err) == (2, f"error: {name}: cannot open: File name too long\n")


def test_spikes_with_a_k_too_large_for_any_window_finds_none(dataset: Path) -> None:
    """seed 2 run 2529: `spikes --window 10ns --k 1e308` was OverflowError (int of infinity)."""
    result = CliRunner().invoke(
        app, ["spikes", str(dataset), "--json", "--window", "10ns", "--k", "1e308"]
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert (doc["spikes"], doc["episodes"]) == ([], [])


def test_a_report_name_too_long_is_an_error_line(dataset: Path, tmp_path: Path) -> None:
    """seed 2 run 2482: `report DS -o x*300` was OSError ENAMETOOLONG from the error handler's
    own unlink of the temp file; a name of 250 bytes, whose temp name alone is over 255, is
    written."""
    name = str(tmp_path / ("x" * 300))
    code, err = _run("report", str(dataset), "-o", name, "-q")
    assert (code, err) == (1, f"error: {name}: cannot write: File name too long\n")
    assert _run("report", str(dataset), "-o", str(tmp_path / ("y" * 250)), "-q") == (0, "")
    assert (tmp_path / ("y" * 250)).read_bytes().startswith(b"<!DOCTYPE html>")
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name]


def test_a_report_name_that_is_not_utf8_is_printed_escaped(dataset: Path, tmp_path: Path) -> None:
    """seed 2 run 5623: the summary line of `report -o caf\\xe9\\xff` was UnicodeEncodeError."""
    out = os.fsdecode(os.fsencode(str(tmp_path)) + b"/caf\xe9\xff")
    result = CliRunner().invoke(app, ["report", str(dataset), "-o", out])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == (
        f"wrote {tmp_path}/caf\\udce9\\udcff and {tmp_path}/caf\\udce9\\udcff.summary.json "
        f"(dataset {dataset})"
    )
