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
