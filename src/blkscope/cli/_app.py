"""The Typer app, its error printing and helpers shared by the command modules."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup

from blkscope import interrupts
from blkscope.cli.declare import no_type_on_flags
from blkscope.cli.light_typer import convert_plainly, light_help_module
from blkscope.errors import BadQueryError, BlkscopeError, InputFormatError, ParseError
from blkscope.safe_text import json_printable, printable
from blkscope.version import __version__

if TYPE_CHECKING:
    from blkscope.dataset import Dataset

EXIT_BAD_INPUT = 2
EXIT_FAILED = 1
EXIT_INTERRUPTED = 130
INTERRUPTED_MESSAGE = "interrupted: nothing is left half-written"


def say(text: str, err: bool = False, nl: bool = True) -> None:
    """Print the command's output. Tables and summaries carry names from traced machines
    (process names, paths, hosts): their control characters and undecodable bytes are shown
    as escapes here, once for every command, so none reaches the terminal as is."""
    typer.echo(printable(text), err=err, nl=nl)


def say_json(text: str, nl: bool = True) -> None:
    """Print JSON text made by json.dumps (ensure_ascii): every string in it is already escaped
    but DEL, which is written as JSON's own escape so the text stays valid JSON."""
    typer.echo(json_printable(text), nl=nl)


def watch_sigint() -> None:
    """Install the SIGINT handling of the command line (see blkscope.interrupts)."""
    interrupts.watch()


def interrupted() -> typer.Exit:
    say(INTERRUPTED_MESSAGE, err=True)
    return typer.Exit(EXIT_INTERRUPTED)


class _Commands(TyperGroup):
    """The command group: Ctrl-C anywhere in a command is one line on stderr and exit 130.

    Every write is a temp file or folder renamed into place, so stopping anywhere leaves each
    output whole (as it was, or new if already committed); there is nothing to undo here.
    """

    def get_params(self, ctx: Any) -> list[Any]:
        return no_type_on_flags(convert_plainly(super().get_params(ctx)))

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            raise interrupted() from None
        except (typer.Exit, typer.Abort):
            raise  # already the command's own ending (fail() sees the flag too)
        except BlkscopeError as exc:  # the one place a library error becomes an exit
            raise fail(exc) from None
        except Exception:
            if interrupts.came():  # an exception the interrupt caused (DuckDB's)
                raise interrupted() from None
            raise


light_help_module()


def fail(exc: BlkscopeError) -> typer.Exit:
    if interrupts.came():  # e.g. a query DuckDB stopped, reported by the library as an error
        return interrupted()
    say(f"error: {exc}", err=True)
    if exc.hint:
        say(f"hint: {exc.hint}", err=True)
    bad_input = isinstance(exc, ParseError | InputFormatError | BadQueryError)
    return typer.Exit(EXIT_BAD_INPUT if bad_input else EXIT_FAILED)


def _version(value: bool) -> None:
    if value:
        say(f"blkscope {__version__}")
        raise typer.Exit()


def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Offline analysis of Linux block-layer traces (blkparse text, bpftrace logs)."""


def command_group() -> typer.Typer:
    """The `blkscope` group with its own options (--version, shell completion), no command yet."""
    group = typer.Typer(
        cls=_Commands,
        name="blkscope",
        help="Offline analysis of Linux block-layer traces (blkparse text, bpftrace logs).",
        no_args_is_help=True,
        add_completion=True,  # --install-completion, --show-completion
        pretty_exceptions_enable=False,
    )
    group.callback()(_main)
    return group


app = command_group()


def analyzed_dataset(path: Path) -> Dataset:
    """The dataset at path, analyzed first (with progress) when it lacks any analysis table."""
    from blkscope.dataset import Dataset
    from blkscope.pipeline import analyze, is_analyzed
    from blkscope.progress import progress_bar

    dataset = Dataset(path)
    if is_analyzed(dataset):
        return dataset
    say(f"analyzing {path} first", err=True)
    with progress_bar() as progress:
        return analyze(dataset, progress=progress)


def duration(text: str, option: str, *, zero_ok: bool = False) -> int:
    """A duration option's value in ns (bare numbers are seconds); exit 2 with a hint if bad."""
    from blkscope.units import option_duration_ns

    return option_duration_ns(text, option, zero_ok=zero_ok)


def number(text: str, option: str, *, at_least: float = 0.0) -> float:
    """A plain number option's value (finite, at least at_least); exit 2 with a hint if bad."""
    from blkscope.units import option_number

    return option_number(text, option, at_least=at_least)


TIMEOUT_OPTION = typer.Option(
    "--timeout",
    metavar="DURATION",
    help="Stop the query after this long, e.g. 30s or 600 (bare: seconds).",
)
MEMORY_OPTION = typer.Option(
    "--memory-limit",
    metavar="SIZE",
    help="Stop the query when it takes more memory than this (DuckDB's, and the rows), e.g. 4GB.",
)


def query_limits(timeout: str | None, memory: str | None) -> Any:
    """The QueryLimits of `sql` and `fleet sql` from their options (defaults when not given)."""
    from blkscope.analyze.query import QueryLimits
    from blkscope.units import option_bytes

    default = QueryLimits()
    seconds = duration(timeout, "--timeout") / 1e9 if timeout else default.seconds
    size = option_bytes(memory, "--memory-limit") if memory else default.memory_bytes
    return QueryLimits(seconds, size)
