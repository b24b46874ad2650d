"""The Typer app, its error printing and helpers shared by the command modules."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from blkscope import __version__
from blkscope.errors import BlkscopeError, InputFormatError, ParseError

app = typer.Typer(
    name="blkscope",
    help="Offline analysis of Linux block-layer traces (blkparse text, bpftrace logs).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

EXIT_BAD_INPUT = 2
EXIT_FAILED = 1


def fail(exc: BlkscopeError) -> typer.Exit:
    typer.echo(f"error: {exc}", err=True)
    if exc.hint:
        typer.echo(f"hint: {exc.hint}", err=True)
    bad_input = isinstance(exc, ParseError | InputFormatError)
    return typer.Exit(EXIT_BAD_INPUT if bad_input else EXIT_FAILED)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"blkscope {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Offline analysis of Linux block-layer traces (blkparse text, bpftrace logs)."""


def analysed(dataset: Path) -> None:
    """Run the analysis first when a dataset only has its ingested tables."""
    from blkscope.analyze.build import analyze_dataset
    from blkscope.ingest.dataset import read_manifest
    from blkscope.progress import progress_bar

    if "bios" not in read_manifest(dataset).get("tables", {}):
        typer.echo(f"analysing {dataset} first", err=True)
        with progress_bar() as progress:
            analyze_dataset(dataset, progress=progress).close()


def duration(text: str, option: str) -> int:
    from blkscope.units import parse_duration_ns

    try:
        return parse_duration_ns(text)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint=option) from None
