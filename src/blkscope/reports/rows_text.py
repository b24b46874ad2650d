"""Rows printed as a text table, JSON, CSV or newline-delimited JSON: `blkscope sql`, `fleet sql`
and every command's --csv/--nl."""

from __future__ import annotations

import csv
import io
import json
import math
from typing import Any

from blkscope.safe_text import printable


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


def render_rows(names: list[str], rows: list[tuple[object, ...]], fmt: str = "table") -> str:
    """A query's rows as 'table', 'json' (a list of objects, NaN and infinities as null),
    'csv' (with a header) or 'nl' (one JSON object a line)."""
    if fmt in ("json", "nl"):
        objects = [dict(zip(names, _finite(r), strict=True)) for r in rows]
        if fmt == "nl":
            return "".join(json.dumps(o, default=str) + "\n" for o in objects)
        return json.dumps(objects, default=str, indent=1) + "\n"
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(names)
        writer.writerows(rows)
        return buf.getvalue()
    return _table(names, rows)


def records_text(records: list[dict[str, Any]], fmt: str) -> str:
    """Records (one dict a row) as CSV (a header, then one line per row) or newline-delimited
    JSON; nested values (lists, objects) as JSON text in CSV."""
    if fmt == "nl":
        return "".join(json.dumps(_finite(r), default=str) + "\n" for r in records)
    names = list(records[0]) if records else []
    rows = [
        tuple(json.dumps(r[n]) if isinstance(r[n], list | dict) else r[n] for n in names)
        for r in records
    ]
    return render_rows(names, rows, "csv")


def _table(names: list[str], rows: list[tuple[object, ...]]) -> str:
    # escaped before measuring, so a name from a traced machine keeps the columns aligned
    cells = [[("NULL" if v is None else printable(str(v))) for v in r] for r in rows]
    names = [printable(n) for n in names]
    widths = [max([len(n)] + [len(r[i]) for r in cells]) for i, n in enumerate(names)]
    line = "  ".join(n.ljust(w) for n, w in zip(names, widths, strict=True))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in cells]
    out.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(out) + "\n"
