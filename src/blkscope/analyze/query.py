"""Ad-hoc, read-only SQL over a dataset: rows, or a Polars frame (reports/rows_text.py prints\nthem)."""

from __future__ import annotations

import os
import re
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

import duckdb

from blkscope.errors import BadQueryError, QueryError
from blkscope.units import format_bytes, format_s

if TYPE_CHECKING:
    import polars as pl

__all__ = [
    "Answer",
    "BadQueryError",
    "QueryError",
    "QueryLimits",
    "check_utf8",
    "limited",
    "query_error",
    "refuse_writes",
    "relation",
    "run_frame",
    "run_query",
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


# What one ad-hoc query (`sql`, `fleet sql`) may take unless told otherwise: a query that runs
# for minutes is almost always a join without its condition, and a machine that runs a capture
# or other analyses must keep its memory.
DEFAULT_QUERY_SECONDS = 300.0
DEFAULT_QUERY_MEMORY = 2 << 30
# DuckDB's working memory is this share of the limit (it spills past it); the rest is for the
# rows fetched and what DuckDB allocates outside its buffer pool (a repeat() of 2 GB).
DUCKDB_SHARE = 0.75
FETCH_ROWS = 10_000
WATCH_S = 0.05


@dataclass(frozen=True)
class QueryLimits:
    """What one query may take: wall time, and memory (the growth of this process while the
    query runs and its rows are fetched: DuckDB's working memory and the rows together)."""

    seconds: float = DEFAULT_QUERY_SECONDS
    memory_bytes: int = DEFAULT_QUERY_MEMORY


@contextmanager
def limited(con: duckdb.DuckDBPyConnection, limits: QueryLimits) -> Iterator[None]:
    """Give con its share of the memory limit and a private folder to spill into (removed
    after; DuckDB's default is `.tmp` in the current folder). Enter it before the connection's
    configuration is locked."""
    with tempfile.TemporaryDirectory(prefix="blkscope-sql-") as spill:
        con.execute(f"SET memory_limit = '{int(limits.memory_bytes * DUCKDB_SHARE)}B'")
        con.execute("SET temp_directory = " + "'" + spill.replace("'", "''") + "'")
        yield


def _resident_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class _Watchdog:
    """Stops the query (DuckDB's thread-safe interrupt) when it passes its time or memory
    limit; the fetching loop asks `check` between batches of rows."""

    def __init__(self, con: duckdb.DuckDBPyConnection, limits: QueryLimits) -> None:
        self.con = con
        self.limits = limits
        self.tripped: QueryError | None = None
        self.started = time.monotonic()
        self.base = _resident_bytes()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> _Watchdog:
        self.thread.start()
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.done.set()
        self.thread.join()

    def _over(self) -> QueryError | None:
        spent = time.monotonic() - self.started
        if spent > self.limits.seconds:
            return QueryError(
                f"the query ran past its time limit ({format_s(self.limits.seconds * 1e9, 1)})",
                "narrow it (WHERE, LIMIT, a join condition) or raise --timeout",
            )
        grown = _resident_bytes() - self.base
        if grown > self.limits.memory_bytes:
            return QueryError(
                f"the query took more than its memory limit ({format_bytes(self.limits.memory_bytes)}"
                f"; {format_bytes(grown)} when stopped)",
                "aggregate or LIMIT what it returns, or raise --memory-limit",
            )
        return None

    def _watch(self) -> None:
        while not self.done.wait(WATCH_S):
            self.tripped = self._over()
            if self.tripped is not None:
                self.con.interrupt()
                return

    def check(self) -> None:
        """Raise the limit's QueryError if the query passed one (the fetching loop's part)."""
        if self.tripped is not None:
            raise self.tripped


def run_query(
    con: duckdb.DuckDBPyConnection, query: str, limits: QueryLimits | None = None
) -> Answer:
    """Run `query` (read-only, see `relation`) within its limits: its column names and rows
    (none for a query that returns no relation). Its rows are fetched a batch at a time, so
    the memory limit sees them grow."""
    check_utf8(query)
    _fetch(lambda: refuse_writes(con, query))
    with _Watchdog(con, limits or QueryLimits()) as watchdog:
        try:
            cursor = con.execute(described_with_docs(query))
            if cursor is None or cursor.description is None:
                return Answer([], [])
            names = [d[0] for d in cursor.description]
            rows: list[tuple[object, ...]] = []
            while batch := cursor.fetchmany(FETCH_ROWS):
                watchdog.check()
                rows += batch
        except duckdb.Error as exc:
            watchdog.check()  # an interrupt the watchdog made is its limit, not DuckDB's error
            raise query_error(exc) from None
        watchdog.check()
    return Answer(names, rows)


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
    check_utf8(query)
    _fetch(lambda: refuse_writes(con, query))
    return _fetch(lambda: con.sql(described_with_docs(query)))


def check_utf8(query: str) -> None:
    """A BadQueryError when the query holds bytes that are not UTF-8 (a shell argument decoded
    with surrogateescape): no engine can parse it."""
    try:
        query.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise BadQueryError(
            f"the query is not valid UTF-8 (at character {exc.start + 1})",
            "the shell passed bytes that are not UTF-8: use a UTF-8 locale (LANG=C.UTF-8)",
        ) from None


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
