"""JSON Schemas of the commands' --json outputs, derived from the Arrow schemas their rows come
from (each declared once, with a doc on every field): a row's keys, JSON types and docs."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from blkscope.schemas._declare import doc_of

DIALECT = "https://json-schema.org/draft/2020-12/schema"
TRACE_START = {
    "type": "object",
    "description": "where the trace's time 0 sits on the wall clock (nulls when unknown)",
    "properties": {
        "wall_ns": {"type": ["integer", "null"]},
        "utc": {"type": ["string", "null"]},
        "date_known": {"type": ["boolean", "null"]},
        "host_zone": {"type": ["string", "null"]},
    },
    "required": ["wall_ns", "utc", "date_known", "host_zone"],
    "additionalProperties": False,
}


def json_type(t: pa.DataType) -> str:
    """The JSON type of an Arrow column's values."""
    if pa.types.is_integer(t):
        return "integer"
    if pa.types.is_floating(t):
        return "number"
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_list(t):
        return "array"
    raise ValueError(f"no JSON type for {t}")


def row_schema(schema: pa.Schema, utc: tuple[str, ...] = ()) -> dict[str, Any]:
    """One row of a table as JSON: every column with its doc (nullable columns may be null),
    plus '<name>_utc' for each trace-ns column in utc (as wallclock.with_wall_times adds)."""
    props: dict[str, Any] = {}
    for f in schema:
        kind = json_type(f.type)
        props[f.name] = {"type": [kind, "null"] if f.nullable else kind, "description": doc_of(f)}
    for name in utc:
        props[name.removesuffix("_ns") + "_utc"] = {
            "type": ["string", "null"],
            "description": f"{name} on the wall clock, ISO-8601 UTC (null when unknown)",
        }
    return {
        "type": "object",
        "properties": props,
        "required": list(props),
        "additionalProperties": False,
    }


def document(title: str, body: dict[str, Any]) -> dict[str, Any]:
    """A whole JSON Schema document."""
    return {"$schema": DIALECT, "title": title, **body}


_LEAVES = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}


def of_dataclass(cls: type) -> dict[str, Any]:
    """The JSON Schema of dataclasses.asdict(an instance of cls): each field by its annotation,
    the class's doc as the description."""
    import dataclasses
    import typing

    hints = typing.get_type_hints(cls)
    props = {f.name: _of_hint(hints[f.name]) for f in dataclasses.fields(cls)}
    return {
        "type": "object",
        "description": (cls.__doc__ or "").strip().split("\n\n")[0],
        "properties": props,
        "required": list(props),
        "additionalProperties": False,
    }


def _of_hint(hint: Any) -> dict[str, Any]:
    import collections.abc
    import dataclasses
    import typing

    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return of_dataclass(hint)
    if origin in (list, tuple):
        if origin is tuple and Ellipsis not in args:
            n = len(args)
            items = [_of_hint(a) for a in args]
            return {"type": "array", "prefixItems": items, "minItems": n, "maxItems": n}
        return {"type": "array", "items": _of_hint(args[0])}
    if origin in (dict, collections.abc.Mapping):
        return {"type": "object", "additionalProperties": _of_hint(args[1]) if args else {}}
    if args:  # X | None
        parts = [_of_hint(a) for a in args]
        if all(set(p) == {"type"} and isinstance(p["type"], str) for p in parts):
            return {"type": [p["type"] for p in parts]}
        return {"anyOf": parts}
    return {"type": _LEAVES[hint]}
