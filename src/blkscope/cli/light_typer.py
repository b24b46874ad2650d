"""typer, without the two imports that would be most of every command's start-up and that the
command line never needs:

- pydantic: typer converts each value through a pydantic TypeAdapter. Our values are text,
  whole and decimal numbers and paths, converted here as typer would; any other value (a
  number out of range, text that is no plain number, a type we do not convert) still goes to
  typer's own conversion, so its acceptance and its error message stay typer's.
- rich.markdown and rich.traceback in typer's help module (markdown_it, pygments, attrs): help
  here is rich markup, not Markdown, and typer's pretty tracebacks are off. The help module is
  imported with stand-ins that import the real class only if it is ever used.

Both lean on typer's internals (a parameter's `_runtime_param`, `typer.rich_utils`' imports):
pyproject.toml pins typer's minor version, and tests/project/test_footprint.py fails when
either import comes back.
"""

from __future__ import annotations

import importlib.machinery
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, get_args, get_origin

from typer._coercion import RuntimeParam, build_runtime_param
from typer._param_types import coerce_cli_path

_NOT_PLAIN = object()
_WHOLE = re.compile(r"[+-]?[0-9]+")
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)")


@dataclass(frozen=True)
class _PlainValues(RuntimeParam):
    """A parameter's conversion: plain values here, anything else by typer's own."""

    def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
        if get_origin(self.annotation) is list and isinstance(value, list | tuple):
            (item_type,) = get_args(self.annotation)
            items = [self._plain(v, item_type, param, ctx) for v in value]
            if not any(item is _NOT_PLAIN for item in items):
                return items
        else:
            plain = self._plain(value, self.annotation, param, ctx)
            if plain is not _NOT_PLAIN:
                return plain
        typers_own: Any = build_runtime_param(param.type_descriptor)
        return typers_own._coerce_value(value, param, ctx)

    def _plain(self, value: Any, annotation: Any, param: Any, ctx: Any) -> Any:
        info = self.parameter_info
        if info.parser is not None:
            return _NOT_PLAIN
        if annotation is str and isinstance(value, str):
            return value
        if annotation is Path and info.path_type is None and isinstance(value, str | Path):
            # typer's own checks of the path (none of ours asks for any but `readable`)
            return coerce_cli_path(Path(value), info, path_type=Path, param=param, ctx=ctx)
        number = _number(value, annotation)
        if number is _NOT_PLAIN or not _in_range(number, info.min, info.max):
            return _NOT_PLAIN
        return number


def _number(value: Any, annotation: Any) -> Any:
    """value as an int or a float annotation's number, when it plainly is one."""
    if annotation is int:
        if isinstance(value, str) and _WHOLE.fullmatch(value):
            return int(value)
        if type(value) is int:
            return value
    if annotation is float:
        if isinstance(value, str) and _DECIMAL.fullmatch(value):
            return float(value)
        if type(value) is float:
            return value
    return _NOT_PLAIN


def _in_range(number: float, low: float | None, high: float | None) -> bool:
    return (low is None or number >= low) and (high is None or number <= high)


def convert_plainly(params: list[Any]) -> list[Any]:
    """params, typer's among them given the plain conversion (once: they keep it)."""
    for param in params:
        descriptor = getattr(param, "type_descriptor", None)
        if descriptor is not None and getattr(param, "_runtime_param", 0) is None:
            param._runtime_param = _PlainValues(
                parameter_info=descriptor.parameter_info, annotation=descriptor.annotation
            )
    return params


# typer's help module, imported with these in place of the real modules (which it names only
# for Markdown help and for pretty tracebacks).
class _Markdown:
    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        from rich.markdown import Markdown

        return Markdown(*args, **kwargs)


class _Traceback:
    @classmethod
    def from_exception(cls, *args: Any, **kwargs: Any) -> Any:
        from rich.traceback import Traceback

        return Traceback.from_exception(*args, **kwargs)


_STAND_INS = {"rich.markdown": ("Markdown", _Markdown), "rich.traceback": ("Traceback", _Traceback)}
_HELP_MODULE = "typer.rich_utils"


@contextmanager
def _stand_ins() -> Iterator[None]:
    """The stand-in modules in sys.modules (where the real ones are not already), then gone."""
    placed = []
    for name, (attribute, cls) in _STAND_INS.items():
        if name not in sys.modules:
            module = ModuleType(name)
            setattr(module, attribute, cls)
            sys.modules[name] = module
            placed.append(name)
    try:
        yield
    finally:
        for name in placed:
            del sys.modules[name]


class _LoadWithStandIns:
    """The loader of typer's help module, run while the stand-ins are in place."""

    def __init__(self, loader: Any) -> None:
        self.loader = loader

    def create_module(self, spec: Any) -> ModuleType | None:
        module: ModuleType | None = self.loader.create_module(spec)
        return module

    def exec_module(self, module: ModuleType) -> None:
        with _stand_ins():
            self.loader.exec_module(module)


class _HelpModuleFinder:
    """Finds typer's help module as Python would, with the loader above."""

    @staticmethod
    def find_spec(name: str, path: Any = None, target: Any = None) -> Any:
        if name != _HELP_MODULE:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _LoadWithStandIns(spec.loader)  # type: ignore[assignment]
        return spec


def light_help_module() -> None:
    """Have typer's help module, whenever it is first imported, come without Markdown and
    Traceback (a no-op when it is already imported, or the finder already in place)."""
    if _HELP_MODULE not in sys.modules and not any(
        isinstance(f, _HelpModuleFinder) for f in sys.meta_path
    ):
        sys.meta_path.insert(0, _HelpModuleFinder())
