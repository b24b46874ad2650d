"""Every command that prints a table takes --json, --csv and --nl; two of them at once is an
option error (exit 2), not a silent pick; shell completion is offered."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import jsonschema  # type: ignore[import-untyped]
import pytest
from typer.testing import CliRunner

from blkscope.cli import app
from blkscope.reports.outputs import output_schemas

runner = CliRunner()
TABLE_COMMANDS = [
    ["sql", "{ds}", "SELECT 1 AS one"],
    ["spikes", "{ds}"],
    ["periods", "{ds}"],
    ["check", "{ds}", "--max", "spikes=100"],
]


@pytest.mark.parametrize("command", TABLE_COMMANDS, ids=lambda c: c[0])
def test_two_output_formats_are_an_option_error(mq_dataset: Path, command: list[str]) -> None:
    args = [a.format(ds=mq_dataset) for a in command]
    result = runner.invoke(app, [*args, "--json", "--csv"])
    assert result.exit_code == 2
    assert result.stderr == (
        "error: option --csv: conflicts with --json\nhint: give one output format\n"
    )


@pytest.mark.parametrize("command", TABLE_COMMANDS, ids=lambda c: c[0])
def test_csv_and_nl_hold_the_same_rows(mq_dataset: Path, command: list[str]) -> None:
    args = [a.format(ds=mq_dataset) for a in command]
    as_csv = runner.invoke(app, [*args, "--csv"])
    as_nl = runner.invoke(app, [*args, "--nl"])
    assert as_csv.exit_code == as_nl.exit_code == 0, as_csv.output
    table = list(csv.DictReader(io.StringIO(as_csv.stdout)))
    lines = [json.loads(line) for line in as_nl.stdout.splitlines()]
    assert len(table) == len(lines) > 0
    assert list(table[0]) == list(lines[0])
    assert [str(v) for v in lines[0].values()][:2] == list(table[0].values())[:2]


def test_periods_csv_rows(mq_dataset: Path) -> None:
    result = runner.invoke(app, ["periods", str(mq_dataset), "--csv"])
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [(r["series"], r["period_ns"]) for r in rows] == [
        ("kworker_writes", "5121936860"),
        ("writeback_events", "5121936860"),
    ]


def test_shell_completion_is_offered() -> None:
    result = runner.invoke(app, ["--help"])
    assert "--install-completion" in result.stdout and "--show-completion" in result.stdout


@pytest.mark.parametrize(
    "command",
    [
        ["spikes", "{ds}", "--json"],
        ["periods", "{ds}", "--json"],
        ["check", "{ds}", "--max", "d2c.p99=5ms", "--max", "spikes=0", "--json"],
        ["report", "{ds}", "-o", "{tmp}/r.html", "--json"],
    ],
    ids=lambda c: c[0],
)
def test_json_output_validates_against_its_schema(
    mq_dataset: Path, tmp_path: Path, command: list[str]
) -> None:
    args = [a.format(ds=mq_dataset, tmp=tmp_path) for a in command]
    result = runner.invoke(app, args)
    assert result.exit_code in (0, 1), result.output  # check exits 1: d2c.p99 is 27 ms
    schema = output_schemas()[command[0]]
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(json.loads(result.stdout), schema)
