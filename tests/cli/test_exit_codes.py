"""Every command ends with the README's exit codes (src/blkscope/cli/_app.py declares them): 2 for
bad usage or input (an unknown option, a folder that is not a dataset or a fleet, a file that
is not a trace), whichever command it is given to; 1 and 130 are held by the tests of each
failure (tests/store/test_faults.py, tests/cli/test_interrupt.py, check's thresholds)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
import typer.main
from typer.testing import CliRunner

import blkscope
from blkscope.analyze.query import query_error
from blkscope.cli import app
from blkscope.cli._app import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_INTERRUPTED, fail
from blkscope.errors import BadQueryError, QueryError

runner = CliRunner()

# Each command given something that is not what it reads ({not_ds}: a folder without a
# manifest; {junk}: a text file that is no trace), and the first line it must print.
NOT_ITS_INPUT = {
    "ingest": (["{junk}", "-o", "{tmp}/x"], "error: {junk}: no blkparse event lines found"),
    "analyze": (["{not_ds}"], "error: {not_ds}: not a blkscope dataset (no manifest.json)"),
    "sql": (["{not_ds}", "SELECT 1"], "error: {not_ds}: not a blkscope dataset"),
    "crosscheck": (["{not_ds}"], "error: {not_ds}: not a blkscope dataset"),
    "spikes": (["{not_ds}"], "error: {not_ds}: not a blkscope dataset"),
    "periods": (["{not_ds}"], "error: {not_ds}: not a blkscope dataset"),
    "compare": (["{not_ds}", "{not_ds}"], "error: {not_ds}: not a blkscope dataset"),
    "partitions": (["{not_ds}", "{junk}"], "error: {not_ds}: not a blkscope dataset"),
    "files": (["{not_ds}"], "error: {not_ds}: not a blkscope dataset"),
    "report": (["{junk}", "-o", "{tmp}/r.html"], "error: {junk}: no blkparse event lines found"),
    "check": (["{junk}", "--max", "spikes=0"], "error: {junk}: no blkparse event lines found"),
    "export": (
        ["{not_ds}", "--perfetto", "{tmp}/x.pftrace"],
        "error: {not_ds}: not a blkscope dataset",
    ),
    "schema": (["nope"], "error: option COMMAND: no --json output named 'nope'"),
    "fleet sql": (["{not_ds}", "SELECT 1"], "error: {not_ds}: not a blkscope fleet"),
    "fleet check": (["{not_ds}", "--max", "spikes=0"], "error: {not_ds}: not a blkscope fleet"),
    "fleet report": (["{not_ds}", "-o", "{tmp}/f.html"], "error: {not_ds}: not a blkscope fleet"),
}
# Commands that do not read a dataset or a file first: `capture` records a live trace (root,
# tracefs); `capture-restore` on a folder without a journal has nothing to do (exit 1, tested
# in tests/capture/test_capture_errors.py); `fleet add` reports each capture's failure in its
# outcome (exit 1, tested in tests/fleet/test_fleet_cli.py).
NO_INPUT_CASE = {"capture", "capture-restore", "fleet add"}


def _leaf_commands() -> list[str]:
    def walk(group: Any, prefix: tuple[str, ...] = ()) -> Iterator[str]:
        for name, command in group.commands.items():
            if hasattr(command, "commands"):
                yield from walk(command, (*prefix, name))
            else:
                yield " ".join((*prefix, name))

    return sorted(walk(typer.main.get_command(app)))


def test_the_codes_are_the_readmes() -> None:
    assert (EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INTERRUPTED) == (1, 2, 130)
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    for code in ("| 0 |", "| 1 |", "| 2 |", "| 130 |"):
        assert code in readme


def test_every_command_has_a_bad_input_case() -> None:
    assert set(_leaf_commands()) == set(NOT_ITS_INPUT) | NO_INPUT_CASE


@pytest.mark.parametrize("command", _leaf_commands())
def test_an_unknown_option_is_exit_2(command: str) -> None:
    result = runner.invoke(app, [*command.split(), "--no-such-option"])
    assert result.exit_code == EXIT_BAD_INPUT
    assert "No such option: --no-such-option" in result.stderr


@pytest.mark.parametrize("command", sorted(NOT_ITS_INPUT))
def test_input_that_is_not_its_own_is_exit_2(command: str, tmp_path: Path) -> None:
    junk = tmp_path / "junk.txt"
    junk.write_text("not a trace\n")
    (tmp_path / "not-a-dataset").mkdir()
    places = {"junk": str(junk), "not_ds": str(tmp_path / "not-a-dataset"), "tmp": str(tmp_path)}
    args, first_line = NOT_ITS_INPUT[command]
    result = runner.invoke(app, [*command.split(), *(a.format(**places) for a in args)])
    assert result.exit_code == EXIT_BAD_INPUT, result.output
    assert result.stderr.splitlines()[0].startswith(first_line.format(**places))
    assert "Traceback" not in result.output


# A user's query that DuckDB cannot parse, bind or convert: bad input, with DuckDB's first line
# and a hint (the query, not a file, is where the mistake is).
BAD_QUERIES = {
    "SELEC 1": (
        'error: query failed: Parser Error: syntax error at or near "SELEC"',
        'hint: the query is DuckDB SQL, quoted whole for the shell: "SELECT count(*) FROM bios"',
    ),
    "SELECT q2c FROM bios": (
        'error: query failed: Binder Error: Referenced column "q2c" not found in FROM clause!',
        "hint: DESCRIBE NAME lists a table's or view's columns and their docs",
    ),
    "SELECT 'x'::INTEGER": (
        "error: query failed: Conversion Error: Could not convert string 'x' to INT32",
        "hint: TRY_CAST gives NULL where a value does not convert",
    ),
}


@pytest.mark.parametrize("query", sorted(BAD_QUERIES))
def test_a_bad_query_is_exit_2_with_duckdbs_message_and_a_hint(
    mq_dataset: Path, query: str
) -> None:
    result = runner.invoke(app, ["sql", str(mq_dataset), query])
    assert result.exit_code == EXIT_BAD_INPUT
    assert result.stderr.splitlines() == list(BAD_QUERIES[query])
    with blkscope.open(mq_dataset, progress=False) as ds, pytest.raises(BadQueryError) as caught:
        ds.sql(query)
    assert f"error: {caught.value}" == BAD_QUERIES[query][0]


def test_a_query_that_fails_while_running_is_exit_1() -> None:
    """Out of memory, a table file that cannot be read, DuckDB's own bug: not the query's
    fault, so a failure (1) and not bad input."""
    for exc in (duckdb.OutOfMemoryException("x"), duckdb.IOException("x"),
                duckdb.InternalException("x")):  # fmt: skip
        err = query_error(exc)
        assert type(err) is QueryError and str(err) == "query failed: x"
        assert fail(err).exit_code == EXIT_FAILED
    assert isinstance(query_error(duckdb.ParserException("x")), BadQueryError)
