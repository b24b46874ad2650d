"""Ad-hoc SQL over a dataset, rendered as a text table, JSON or CSV."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import duckdb

from blkscope.analyze.views import connect, lock_down
from blkscope.errors import BlkscopeError
from blkscope.safe_text import printable


class QueryError(BlkscopeError):
    """The user's SQL failed in DuckDB."""


# Statements that only read. The rest (COPY, EXPORT, ATTACH, INSTALL/LOAD, SET, CREATE, ...)
# could write files or change what the connection may reach.
READ_ONLY = {duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN}


def run_query(dataset: Path, query: str, fmt: str = "table") -> str:
    """Run `query` with every table and view registered; return it rendered as `fmt`.

    The query may read the dataset's tables and views only: statements other than SELECT and
    EXPLAIN are refused, and DuckDB's access to files, extensions and other databases is
    switched off (and locked) before it runs.
    """
    try:
        query.encode("utf-8")
    except UnicodeEncodeError as exc:  # a shell argument's bytes that are not UTF-8
        raise QueryError(f"the query is not valid UTF-8 (at character {exc.start + 1})") from None
    with connect(dataset) as con:
        lock_down(con, dataset)
        try:
            refuse_writes(con, query)
            rel = con.sql(query)
            if rel is None:
                return ""
            names = rel.columns
            rows = rel.fetchall()
        except duckdb.Error as exc:
            err = QueryError(f"query failed: {str(exc).splitlines()[0]}")
            if isinstance(exc, duckdb.CatalogException):
                err.hint = (
                    "requests, bios, stage_stats, iostat, latency_hist, depth and io_dist "
                    "are written by 'blkscope analyze DATASET'"
                )
            if isinstance(exc, duckdb.PermissionException):
                err.hint = (
                    "blkscope sql reads only the dataset's own tables; "
                    "save a result with --csv or --json and a shell redirect"
                )
            raise err from None
    return render_rows(names, rows, fmt)


def render_rows(names: list[str], rows: list[tuple[object, ...]], fmt: str = "table") -> str:
    """A query's result as a text table, JSON (a list of objects) or CSV with a header."""
    if fmt == "json":
        return (
            json.dumps([dict(zip(names, r, strict=True)) for r in rows], default=str, indent=1)
            + "\n"
        )
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(names)
        writer.writerows(rows)
        return buf.getvalue()
    return _table(names, rows)


def refuse_writes(con: duckdb.DuckDBPyConnection, query: str) -> None:
    """Raise a QueryError naming the first statement of query that is not read-only."""
    for statement in con.extract_statements(query):
        if statement.type not in READ_ONLY:
            words = statement.query.split()
            verb = next((w.upper() for w in words if w.isalpha()), statement.type.name)
            err = QueryError(f"{verb} statements are refused: blkscope sql only reads the dataset")
            err.hint = "save a result with --csv or --json and a shell redirect"
            raise err


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
