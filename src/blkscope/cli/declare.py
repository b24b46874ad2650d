"""How a command is declared (`Command`, listed in cli/__init__.py) and shown in help: each
value by the name a user writes (`DATASET`, `DURATION`), flags with none, an example last."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import typer
from typer.core import TyperArgument, TyperCommand

from blkscope.cli.light_typer import convert_plainly


def no_type_on_flags(params: list[Any]) -> list[Any]:
    """params, the flags among them showing no value in help (typer would show `<bool>`)."""
    for param in params:
        if getattr(param, "is_flag", False):
            param.metavar = ""
    return params


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
        return no_type_on_flags(convert_plainly(super().get_params(ctx)))

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if isinstance(param, TyperArgument):
                name = (param.metavar or str(param.name).upper()) + ("..." * (param.nargs != 1))
                pieces.append(name if param.required else f"[{name}]")
        return pieces


# An argument that starts with a dash but holds a blank or a line break is no option (no option
# name does): a query that starts with a comment, "-- why" then SELECT ... (`sql`, `fleet sql`).
# It is hidden from the option parser behind this mark, which the command's callback never sees.
_NOT_AN_OPTION = "\x00"


class QueryCommand(_Command):
    """A command whose arguments may start with a dash (a SQL comment): parsed as arguments,
    while a mistyped option (one word) is still refused as one."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        args = [
            _NOT_AN_OPTION + a if a.startswith("-") and any(c.isspace() for c in a) else a
            for a in args
        ]
        rest: list[str] = super().parse_args(ctx, args)
        for name, value in ctx.params.items():
            if isinstance(value, str) and value.startswith(_NOT_AN_OPTION):
                ctx.params[name] = value[len(_NOT_AN_OPTION) :]
        return rest


@dataclass(frozen=True)
class Command:
    """One command of the command line: its function (the options are its parameters), an
    example for its help, and its name when not the function's."""

    run: Callable[..., None]
    example: str
    name: str | None = None
    context_settings: dict[str, Any] = field(default_factory=dict)
    cls: type[_Command] = _Command  # QueryCommand: arguments that may start with a dash


def command_name(command: Command) -> str:
    """The name a command is run by (typer's: the function's, `_` written `-`)."""
    return command.name or command.run.__name__.replace("_", "-")


def register(group: typer.Typer, commands: list[Command]) -> None:
    """Add the commands to the group, in this order (help lists them so)."""
    for c in commands:
        first = (c.run.__doc__ or "").split("\n\n")[0]
        group.command(
            c.name,
            cls=c.cls,
            short_help=" ".join(first.split()),  # one line in the list, wrapped as it fits
            epilog=f"Example: {c.example}",
            context_settings=c.context_settings or None,
        )(c.run)
