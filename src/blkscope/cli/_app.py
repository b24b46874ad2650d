"""The Typer app, its error printing and helpers shared by the command modules."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup

from blkscope import __version__, interrupts
from blkscope.errors import BadQueryError, BlkscopeError, InputFormatError, ParseError
from blkscope.safe_text import json_printable, printable

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


def _no_type_on_flags(params: list[Any]) -> list[Any]:
    """params, the flags among them showing no value in help (typer would show `<bool>`)."""
    for param in params:
        if getattr(param, "is_flag", False):
            param.metavar = ""
    return params


class _Commands(TyperGroup):
    """The command group: Ctrl-C anywhere in a command is one line on stderr and exit 130.

    Every write is a temp file or folder renamed into place, so stopping anywhere leaves each
    output whole (as it was, or new if already committed); there is nothing to undo here.
    """

    def get_params(self, ctx: Any) -> list[Any]:
        return _no_type_on_flags(super().get_params(ctx))

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


class _Argument(TyperArgument):
    """An argument shown by its metavar alone (`DATASET`), not also by its Python type."""

    def display_type_rich(self, ctx: Any) -> str | None:
        return None


class _Command(TyperCommand):
    """A command whose help names each value as a user writes it (`DATASET`, `DURATION`),
    flags by their name alone, and never a Python type (`<path>`, `<bool>`, `{dataset}`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            if isinstance(param, TyperArgument):
                param.__class__ = _Argument  # typer offers no other way to drop the type

    def get_params(self, ctx: Any) -> list[Any]:
        return _no_type_on_flags(super().get_params(ctx))

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if isinstance(param, TyperArgument):
                name = (param.metavar or str(param.name).upper()) + ("..." * (param.nargs != 1))
                pieces.append(name if param.required else f"[{name}]")
        return pieces


@dataclass(frozen=True)
class Command:
    """One command of the command line: its function (the options are its parameters), an
    example for its help, and its name when not the function's."""

    run: Callable[..., None]
    example: str
    name: str | None = None
    context_settings: dict[str, Any] = field(default_factory=dict)


def register(group: typer.Typer, commands: list[Command]) -> None:
    """Add the commands to the group, in this order (help lists them so)."""
    for c in commands:
        first = (c.run.__doc__ or "").split("\n\n")[0]
        group.command(
            c.name,
            cls=_Command,
            short_help=" ".join(first.split()),  # one line in the list, wrapped as it fits
            epilog=f"Example: {c.example}",
            context_settings=c.context_settings or None,
        )(c.run)


app = typer.Typer(
    cls=_Commands,
    name="blkscope",
    help="Offline analysis of Linux block-layer traces (blkparse text, bpftrace logs).",
    no_args_is_help=True,
    add_completion=True,  # --install-completion, --show-completion
    pretty_exceptions_enable=False,
)


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


def analyzed(path: Path) -> Dataset:
    """The dataset at path, analyzed first (with progress) when it lacks any analysis table."""
    from blkscope.dataset import Dataset
    from blkscope.pipeline import analyse, is_analysed
    from blkscope.progress import progress_bar

    dataset = Dataset(path)
    if is_analysed(dataset):
        return dataset
    say(f"analyzing {path} first", err=True)
    with progress_bar() as progress:
        return analyse(dataset, progress=progress)


def duration(text: str, option: str, *, zero_ok: bool = False) -> int:
    """A duration option's value in ns (bare numbers are seconds); exit 2 with a hint if bad."""
    from blkscope.units import option_duration_ns

    return option_duration_ns(text, option, zero_ok=zero_ok)


def number(text: str, option: str, *, at_least: float = 0.0) -> float:
    """A plain number option's value (finite, at least at_least); exit 2 with a hint if bad."""
    from blkscope.units import option_number

    return option_number(text, option, at_least=at_least)
