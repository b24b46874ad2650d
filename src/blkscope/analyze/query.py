"""Ad-hoc, read-only SQL over a dataset: rows, or a Polars frame (reports/rows_text.py prints\nthem)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import duckdb

from blkscope.errors import BadQueryError, QueryError

if TYPE_CHECKING:
    import polars as pl

__all__ = [
    "Answer",
    "BadQueryError",
    "QueryError",
    "query_error",
    "refuse_writes",
    "relation",
    "run_frame",
]


@dataclass(frozen=True)
class Answer:
    """A query's column names and rows, as Python values (no columns: the statement returned
    no relation)."""

    columns: list[str]
    rows: list[tuple[Any, ...]]


# Statements that only read. The rest (COPY, EXPORT, ATTACH, INSTALL/LOAD, SET, CREATE, ...)
# could write files or change what the connection may reach.
READ_ONLY = {duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN}


def run_query(con: duckdb.DuckDBPyConnection, query: str) -> Answer:
    """Run `query` (read-only, see `relation`): its column names and rows."""
    rel = relation(con, query)
    if rel is None:
        return Answer([], [])
    return Answer(rel.columns, _fetch(rel.fetchall))


def run_frame(con: duckdb.DuckDBPyConnection, query: str) -> pl.DataFrame:
    """Run `query` (read-only, see `relation`) and return its rows as a Polars DataFrame."""
    import polars as pl

    rel = relation(con, query)
    if rel is None:
        return pl.DataFrame()
    return _fetch(rel.pl)


def relation(con: duckdb.DuckDBPyConnection, query: str) -> duckdb.DuckDBPyRelation | None:
    """The relation of a read-only query: statements other than SELECT and EXPLAIN are
    refused (the CLI also switches DuckDB's access to files, extensions and other databases
    off first: `views.lock_down`); DuckDB's errors become a QueryError with a hint."""
    try:
        query.encode("utf-8")
    except UnicodeEncodeError as exc:  # a shell argument's bytes that are not UTF-8
        raise BadQueryError(
            f"the query is not valid UTF-8 (at character {exc.start + 1})",
            "the shell passed bytes that are not UTF-8: use a UTF-8 locale (LANG=C.UTF-8)",
        ) from None
    _fetch(lambda: refuse_writes(con, query))
    return _fetch(lambda: con.sql(described_with_docs(query)))


# `DESCRIBE name` alone: DuckDB 2.0's DESCRIBE has no comment column (the docs that COMMENT ON
# COLUMN gave show only in duckdb_columns()), so blkscope's answers it with the comments added.
_BARE_DESCRIBE = re.compile(r'\s*DESCRIBE\s+("?)([A-Za-z_][A-Za-z0-9_]*)\1\s*;?\s*', re.I)


def described_with_docs(query: str) -> str:
    """`DESCRIBE name` as DuckDB's DESCRIBE plus a last column, comment (each column's doc,
    once Dataset.document() has run); any other query as it is."""
    bare = _BARE_DESCRIBE.fullmatch(query)
    if bare is None:
        return query
    name = bare[2]
    return (
        f'SELECT d.*, c.comment FROM (DESCRIBE "{name}") d LEFT JOIN duckdb_columns() c '
        f"ON c.table_name = '{name}' AND c.schema_name = current_schema() "
        "AND c.column_name = d.column_name ORDER BY c.column_index"
    )


T = TypeVar("T")


def _fetch(run: Callable[[], T]) -> T:
    """run(), with DuckDB's errors as a QueryError and a hint."""
    try:
        return run()
    except duckdb.Error as exc:
        raise query_error(exc) from None


# DuckDB's errors that the query causes, whatever the data: bad input (exit 2). The rest (out of
# memory, a file that cannot be read, an internal error) are failures (exit 1).
_THE_QUERYS_FAULT = (
    duckdb.ProgrammingError,  # parser, syntax, binder, catalog, invalid input
    duckdb.DataError,  # a conversion or a value out of range
    duckdb.PermissionException,  # a file or setting the locked-down connection refuses
    duckdb.NotSupportedError,
)
_QUOTE_HINT = 'the query is DuckDB SQL, quoted whole for the shell: "SELECT count(*) FROM bios"'
_HINTS: list[tuple[type[duckdb.Error], str]] = [
    (
        duckdb.CatalogException,
        "requests, bios, stage_stats, iostat, latency_hist, depth and io_dist "
        "are written by 'blkscope analyze DATASET'",
    ),
    (duckdb.BinderException, "DESCRIBE NAME lists a table's or view's columns and their docs"),
    (duckdb.ParserException, _QUOTE_HINT),
    (duckdb.DataError, "TRY_CAST gives NULL where a value does not convert"),
    (
        duckdb.PermissionException,
        "blkscope sql reads only the dataset's own tables; "
        "save a result with --csv or --json and a shell redirect",
    ),
]


def query_error(exc: duckdb.Error) -> QueryError:
    """DuckDB's error as the library's: its first line, a hint, and whose fault it is."""
    hint = next((text for kind, text in _HINTS if isinstance(exc, kind)), None)
    kind = BadQueryError if isinstance(exc, _THE_QUERYS_FAULT) else QueryError
    return kind(f"query failed: {str(exc).splitlines()[0]}", hint)


def refuse_writes(con: duckdb.DuckDBPyConnection, query: str) -> None:
    """Raise a QueryError naming the first statement of query that is not read-only."""
    for statement in con.extract_statements(query):
        if statement.type not in READ_ONLY:
            words = statement.query.split()
            verb = next((w.upper() for w in words if w.isalpha()), statement.type.name)
            raise BadQueryError(
                f"{verb} statements are refused: blkscope sql only reads the dataset",
                "save a result with --csv or --json and a shell redirect",
            )
