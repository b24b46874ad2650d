"""What a command prints, in the one format it was asked for: text for people, or `--json`,
`--csv`, `--nl` (JSON lines) for machines. Every command's result goes through `emit`, so the
formats look the same everywhere and untrusted text is escaped in one place."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import typer

from blkscope.cli._app import fail, say, say_json
from blkscope.errors import OptionError
from blkscope.reports.rows_text import Rows, csv_text, json_lines, json_text, table_text

__all__ = ["CsvFlag", "NlFlag", "Rows", "emit", "json_flag", "output_format"]


def json_flag(what: str = "The result") -> Any:
    """The --json option, saying what it prints."""
    return typer.Option("--json", help=f"{what} as JSON.")


CsvFlag = Annotated[bool, typer.Option("--csv", help="Rows as CSV with a header.")]
NlFlag = Annotated[bool, typer.Option("--nl", help="Rows as JSON, one object a line.")]


def output_format(as_json: bool = False, as_csv: bool = False, as_nl: bool = False) -> str:
    """'json', 'csv', 'nl' or 'table' (the text for people); an option error (exit 2) when
    several are given, rather than a silent pick."""
    chosen = [f for f, on in (("json", as_json), ("csv", as_csv), ("nl", as_nl)) if on]
    if len(chosen) > 1:
        raise fail(
            OptionError(
                "--" + chosen[1], f"conflicts with --{chosen[0]}", hint="give one output format"
            )
        )
    return chosen[0] if chosen else "table"


_NO_DOC = object()


def emit(
    fmt: str,
    *,
    text: Callable[[], str] | None = None,
    rows: Rows | None = None,
    doc: Any = _NO_DOC,
) -> None:
    """Print a command's result as fmt: `text()` for people (default: rows as a table), `doc`
    as JSON (default: rows as a list of objects), rows as CSV or JSON lines."""
    if fmt == "json":
        shown = rows.objects() if doc is _NO_DOC and rows is not None else doc
        say_json(json_text(shown), nl=False)
    elif fmt == "table":
        if text is not None:
            say(text())
        elif rows is not None and rows.names:
            say(table_text(rows), nl=False)
    elif rows is not None and rows.names:  # no names: a statement that returns no relation
        if fmt == "nl":
            say_json(json_lines(rows), nl=False)
        else:
            say(csv_text(rows), nl=False)
