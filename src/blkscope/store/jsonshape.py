"""Check that a JSON document from elsewhere has the shape its readers rely on.

A shape is written like the data: a Python type (or a tuple of them) for a leaf, `AtLeast(n)`
for an integer leaf of at least n (COUNT: a count, at least 0), `[shape]` for
a list of items of that shape, `{"key": shape}` for an object whose listed keys, when present,
have those shapes (other keys are left alone), and `{str: shape}` for an object whose every
value has that shape; `Required(shape)` for a key that must be there. Integers must fit in 64
bits, and `bool` is not an integer here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Shape = Any
SCALAR: Shape = (str, int, float, bool, type(None))
OPT_INT: Shape = (int, type(None))
OPT_STR: Shape = (str, type(None))
INT64 = 1 << 63


@dataclass(frozen=True)
class AtLeast:
    """An integer leaf of at least `low`."""

    low: int


COUNT = AtLeast(0)


@dataclass(frozen=True)
class Required:
    """A key that must be present, with this shape."""

    shape: Any


def mismatch(value: Any, shape: Shape, where: str = "") -> str | None:
    """Where value first departs from shape and how, e.g. "devices[0].queue is a list, expected
    an object"; None when it fits."""
    if isinstance(shape, list):
        if not isinstance(value, list):
            return f"{where or 'the document'} is {_kind(value)}, expected a list"
        for i, item in enumerate(value):
            found = mismatch(item, shape[0], f"{where}[{i}]")
            if found:
                return found
        return None
    if isinstance(shape, dict):
        if not isinstance(value, dict):
            return f"{where or 'the document'} is {_kind(value)}, expected an object"
        if str in shape:
            items = [(k, shape[str]) for k in value]
        else:
            for key, sub in shape.items():
                if isinstance(sub, Required) and key not in value:
                    return f"{where}.{key} is missing" if where else f"{key} is missing"
            items = [(k, getattr(s, "shape", s)) for k, s in shape.items() if k in value]
        for key, sub in items:
            found = mismatch(value[key], sub, f"{where}.{key}" if where else str(key))
            if found:
                return found
        return None
    if isinstance(shape, AtLeast):
        found = mismatch(value, int, where)
        if found is None and value < shape.low:
            return f"{where} is {value}, expected at least {shape.low}"
        return found
    types = shape if isinstance(shape, tuple) else (shape,)
    if isinstance(value, bool) and bool not in types:
        return f"{where} is {_kind(value)}, expected {_names(types)}"
    if not isinstance(value, types):
        return f"{where} is {_kind(value)}, expected {_names(types)}"
    if isinstance(value, int) and not -INT64 <= value < INT64:
        return f"{where} is {value}, out of the 64-bit range"
    return None


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    return names.get(type(value), f"a {type(value).__name__}")


def _names(types: tuple[type, ...]) -> str:
    words = {
        str: "a string",
        int: "an integer",
        float: "a number",
        bool: "a boolean",
        type(None): "null",
        dict: "an object",
        list: "a list",
    }
    return " or ".join(words.get(t, t.__name__) for t in types)


_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}


def of_shape(shape: Any, *, required: bool = True) -> dict[str, Any]:
    """The JSON Schema of a shape written as above (for the --json outputs'
    schemas, blkscope.reports.outputs).
    required: every listed key must be there and no other (an output blkscope writes);
    otherwise only the keys marked Required are, and others may follow (a document it reads)."""
    if isinstance(shape, Required):
        return of_shape(shape.shape, required=required)
    if isinstance(shape, list):
        return {"type": "array", "items": of_shape(shape[0], required=required)}
    if isinstance(shape, dict):
        if str in shape:
            return {
                "type": "object",
                "additionalProperties": of_shape(shape[str], required=required),
            }
        props = {k: of_shape(v, required=required) for k, v in shape.items()}
        keys = list(props) if required else [k for k, v in shape.items() if isinstance(v, Required)]
        return {"type": "object", "properties": props, "required": keys,
                "additionalProperties": not required}  # fmt: skip
    if shape is Any:
        return {}
    if isinstance(shape, AtLeast):
        return {"type": "integer", "minimum": shape.low}
    kinds = [_JSON_TYPES[t] for t in (shape if isinstance(shape, tuple) else (shape,))]
    return {"type": kinds[0] if len(kinds) == 1 else kinds}
