"""Rows and documents as text: a table for people, JSON, CSV and JSON lines for machines. One
style for every command: JSON indented by 2, CSV with a header, nested values as JSON text,
booleans as JSON writes them (`true`, `false`) in every format."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from blkscope.safe_text import printable
from blkscope.units import plural


@dataclass(frozen=True)
class Rows:
    """A table to print: its column names and one tuple of values a row. Names may repeat (a
    query's `SELECT 1 AS a, 2 AS a`): CSV and the text table keep every column."""

    names: list[str]
    values: list[tuple[Any, ...]]

    @classmethod
    def of(cls, records: Sequence[dict[str, Any]], names: Sequence[str] = ()) -> Rows:
        """Records (one dict a row, the same keys in each); names when there may be none."""
        keys = list(records[0]) if records else list(names)
        return cls(keys, [tuple(r[k] for k in keys) for r in records])

    def objects(self) -> list[dict[str, Any]]:
        """One dict a row (a repeated name keeps its last value, as in JSON)."""
        return [dict(zip(self.names, r, strict=True)) for r in self.values]


def _finite(value: Any) -> Any:
    """value with NaN and the infinities as null, in lists and objects too: JSON has no such
    numbers, and a reader given `NaN` fails on the whole document."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    return value


def json_text(doc: Any) -> str:
    """A document as JSON, indented by 2 (values JSON has no type for, as text; NaN and the
    infinities as null)."""
    return json.dumps(_finite(doc), indent=2, default=str) + "\n"


def json_lines(rows: Rows) -> str:
    """One JSON object a row, one row a line."""
    return "".join(json.dumps(_finite(o), default=str) + "\n" for o in rows.objects())


def csv_text(rows: Rows) -> str:
    """CSV with a header; lists and objects as JSON text, booleans as true/false."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(rows.names)
    writer.writerows(tuple(_cell(v) for v in r) for r in rows.values)
    return buf.getvalue()


def _cell(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | dict):
        return json.dumps(value, default=str)
    return value


def table_text(rows: Rows) -> str:
    """A plain-text table: names, a rule, right-aligned cells (NULL for none), a row count."""
    # escaped before measuring, so a name from a traced machine keeps the columns aligned
    cells = [[_shown(v) for v in r] for r in rows.values]
    names = [printable(n) for n in rows.names]
    widths = [max([len(n)] + [len(r[i]) for r in cells]) for i, n in enumerate(names)]
    line = "  ".join(n.ljust(w) for n, w in zip(names, widths, strict=True))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in cells]
    out.append(f"({plural(len(rows.values), 'row')})")
    return "\n".join(out) + "\n"


def _shown(value: Any) -> str:
    if value is None:
        return "NULL"
    return printable(str(_cell(value)))
