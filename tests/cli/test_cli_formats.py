"""Every command that prints a table takes --json, --csv and --nl; two of them at once is an
option error (exit 2), not a silent pick; shell completion is offered."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest
import typer.main
from typer.testing import CliRunner

from blkscope.cli import app
from blkscope.reports.outputs import output_schemas

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]
LOOP_CAPTURE = ROOT / "fixtures" / "loop-split-merge-tail"
FILES_CAPTURE = ROOT / "tests" / "data" / "files" / "loop-gpt-ext4"
GPT_LISTING = ROOT / "tests" / "data" / "partitions" / "fdisk_gpt_loop0.txt"
TABLE_COMMANDS = [
    ["sql", "{ds}", "SELECT 1 AS one"],
    ["spikes", "{ds}"],
    ["periods", "{ds}"],
    ["check", "{ds}", "--max", "spikes=100"],
    ["partitions", "{files}", str(GPT_LISTING)],
    ["fleet", "sql", "{fleet}", "SELECT host, count(*) AS bios FROM bios GROUP BY ALL"],
    ["fleet", "check", "{fleet}", "--max", "spikes=100"],
]


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory, mq_dataset: Path) -> Iterator[dict[str, Any]]:
    """Where the commands run: the bundled capture's dataset, a capture with a file map
    (ingested, analysed by the first command that needs it), a one-capture fleet."""
    tmp = tmp_path_factory.mktemp("formats")
    files = tmp / "files.dataset"
    result = runner.invoke(app, ["ingest", str(FILES_CAPTURE), "-o", str(files), "-q"])
    assert result.exit_code == 0, result.output
    yield {"ds": mq_dataset, "files": files, "fleet": tmp / "fleet", "tmp": tmp}


def _args(command: list[str], places: dict[str, Any]) -> list[str]:
    return [a.format(**places) for a in command]


def _name(command: list[str]) -> str:
    """The command as typed after `blkscope` (as output_schemas names it)."""
    return " ".join(command[:2]) if command[0] == "fleet" else command[0]


@pytest.mark.parametrize("command", TABLE_COMMANDS, ids=_name)
@pytest.mark.parametrize("flags", [("--json", "--csv"), ("--csv", "--nl"), ("--nl", "--json")])
def test_two_output_formats_are_an_option_error(
    places: dict[str, Any], command: list[str], flags: tuple[str, str]
) -> None:
    result = runner.invoke(app, [*_args(command, places), *flags])
    assert result.exit_code == 2
    first, second = sorted(flags, key=["--json", "--csv", "--nl"].index)
    assert result.stderr == (
        f"error: option {second}: conflicts with {first}\nhint: give one output format\n"
    )


@pytest.mark.slow
@pytest.mark.parametrize("command", TABLE_COMMANDS, ids=_name)
def test_csv_and_nl_hold_the_same_rows(
    places: dict[str, Any], fleet: Path, command: list[str]
) -> None:
    args = _args(command, places)
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


# Every command with --json, run for real (the fleet's are run after `fleet add` built it).
JSON_COMMANDS = [
    ["ingest", str(LOOP_CAPTURE), "-o", "{tmp}/loop.dataset", "--json"],
    ["analyze", "{ds}", "--json"],
    [
        "sql",
        "{ds}",
        "SELECT dev_major, count(*) AS bios, max(q2c_ns) AS q2c FROM bios GROUP BY 1",
        "--json",
    ],
    ["crosscheck", "{ds}", "--json"],
    ["spikes", "{ds}", "--json"],
    ["periods", "{ds}", "--json"],
    ["compare", "{ds}", "{ds}", "--json"],
    ["partitions", "{files}", str(GPT_LISTING), "--json"],
    ["files", "{files}", "--json"],
    ["report", "{ds}", "-o", "{tmp}/r.html", "--json"],
    ["export", "{ds}", "--perfetto", "{tmp}/r.pftrace", "--json"],
    ["check", "{ds}", "--max", "d2c.p99=5ms", "--max", "spikes=0", "--json"],
    ["fleet", "add", "{fleet}", str(LOOP_CAPTURE), "--host", "h1", "--json"],
    ["fleet", "sql", "{fleet}", "SELECT host, count(*) AS bios FROM bios GROUP BY ALL", "--json"],
    ["fleet", "check", "{fleet}", "--max", "spikes=100", "--json"],
]


@pytest.fixture(scope="module")
def fleet(places: dict[str, Any]) -> Path:
    """The one-capture fleet, built by `fleet add` (whose --json is checked below too)."""
    if not places["fleet"].exists():
        result = runner.invoke(app, _args(JSON_COMMANDS[-3], places))
        assert result.exit_code == 0, result.output
    return Path(places["fleet"])


def _commands_with_json() -> set[str]:
    """Every command (as typed after `blkscope`) that takes --json, found in the app itself."""

    def walk(group: Any, prefix: tuple[str, ...] = ()) -> Iterator[str]:
        for name, command in group.commands.items():
            if hasattr(command, "commands"):
                yield from walk(command, (*prefix, name))
            elif any("--json" in p.opts for p in command.params):
                yield " ".join((*prefix, name))

    return set(walk(typer.main.get_command(app)))


def test_every_json_output_has_a_schema_and_a_test() -> None:
    # A command that gains --json fails here until it has a schema and a run below.
    assert _commands_with_json() == set(output_schemas()) == {_name(c) for c in JSON_COMMANDS}


@pytest.mark.slow
@pytest.mark.parametrize("command", JSON_COMMANDS, ids=_name)
def test_json_output_validates_against_its_schema(
    places: dict[str, Any], fleet: Path, command: list[str]
) -> None:
    result = runner.invoke(app, _args(command, places))
    assert result.exit_code in (0, 1), result.output  # check exits 1: d2c.p99 is 27 ms
    schema = output_schemas()[_name(command)]
    jsonschema.Draft202012Validator.check_schema(schema)
    doc = json.loads(result.stdout)
    jsonschema.validate(doc, schema)
    assert doc  # a real document, not an empty list


def test_schema_prints_each_commands_schema() -> None:
    listed = runner.invoke(app, ["schema"])
    assert listed.exit_code == 0
    assert listed.stdout.splitlines() == list(output_schemas())
    one = runner.invoke(app, ["schema", "fleet", "add"])
    assert json.loads(one.stdout) == output_schemas()["fleet add"]
    unknown = runner.invoke(app, ["schema", "nope"])
    assert unknown.exit_code == 2
    assert unknown.stderr.startswith("error: option COMMAND: no --json output named 'nope'\n")
