"""Helpers that make a field or schema impossible to declare without a doc."""

from __future__ import annotations

import pyarrow as pa

DOC_KEY = b"doc"


def field(name: str, type_: pa.DataType, doc: str, *, nullable: bool = True) -> pa.Field:
    """Declare one column with its user-facing doc in the field metadata."""
    if not doc.strip():
        raise ValueError(f"field {name!r} needs a doc")
    return pa.field(name, type_, nullable=nullable, metadata={DOC_KEY: doc.encode()})


def schema(name: str, doc: str, fields: list[pa.Field]) -> pa.Schema:
    """Declare a table schema with its name and doc in the schema metadata."""
    return pa.schema(fields, metadata={b"table": name.encode(), DOC_KEY: doc.encode()})


def doc_of(f: pa.Field | pa.Schema) -> str:
    """Return the doc stored on a field or schema ('' when absent)."""
    meta = f.metadata or {}
    return meta.get(DOC_KEY, b"").decode()
