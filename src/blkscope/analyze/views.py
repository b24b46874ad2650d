"""Open a dataset in DuckDB with its tables and every SQL view in analyze/sql registered."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import duckdb
import pyarrow as pa

from blkscope.concepts import macro_statements
from blkscope.errors import DatasetError, NotADatasetError
from blkscope.interrupts import track
from blkscope.schemas import TABLES, doc_of
from blkscope.store.manifest import Manifest, check_table_file


@dataclass(frozen=True)
class SqlView:
    """One analyze/sql/NAME.sql file: the view's SELECT and what its header declares.

    `-- needs: a, b?` names the tables and views it reads; a name ending in ? is a table only
    some captures bring (a writeback log, a partition listing): without it the view is left
    out, which is not an error. `-- materialize: temp` has analyze compute it once into a table
    of its connection (it is read more than once); `-- materialize: table NAME` makes it the
    stored table NAME of the dataset.
    """

    name: str
    select: str
    needs: tuple[str, ...]
    optional: tuple[str, ...] = ()
    materialize: str | None = None  # "temp" or "table"
    table: str | None = None  # the stored table, for materialize "table"
    doc: str = ""  # the header's prose: what the view answers
    # (column, doc) of the final SELECT, from each column's `--` comment ("" where it has none)
    columns: tuple[tuple[str, str], ...] = ()


_NEEDS = re.compile(r"^-- needs:(.*)$", re.M)
_MATERIALIZE = re.compile(r"^-- materialize: (temp|table (\w+))$", re.M)


def _parse(name: str, text: str) -> SqlView:
    header = _NEEDS.search(text)
    names = [n.strip() for n in header[1].split(",")] if header else []
    needs = tuple(n.rstrip("?") for n in names if n)
    optional = tuple(n.rstrip("?") for n in names if n.endswith("?"))
    mat = _MATERIALIZE.search(text)
    kind = None if mat is None else mat[1].split()[0]
    table = None if mat is None else mat[2]
    if name.startswith("_"):  # a step: its columns are documented where they are used
        return SqlView(name, text, needs, optional, kind, table)
    return SqlView(name, text, needs, optional, kind, table, _header_doc(text), _column_docs(text))


def _header_doc(text: str) -> str:
    """The `--` lines a view's file starts with, without the `-- needs:` and `-- materialize:`
    lines the registration reads: its doc, one line per line of the file."""
    doc = []
    for line in text.splitlines():
        if not line.startswith("--"):
            break
        if not _NEEDS.match(line) and not _MATERIALIZE.match(line):
            doc.append(line[2:].strip())
    return "\n".join(doc)


# The final top-level SELECT: `SELECT` alone on a line at the left margin, its column list up
# to `FROM` at the margin (the CTEs' SELECTs above it are indented).
_FINAL_SELECT = re.compile(r"^SELECT[ \t]*\n(.*?)^FROM\b", re.M | re.S)
_ALIAS = re.compile(r"(?:\bAS\s+|^|\.)(\w+)\s*,?\s*$", re.I)


def _column_docs(text: str) -> tuple[tuple[str, str], ...]:
    """Each column of a view's final SELECT with the text of its `--` comment.

    A column's expression may span lines; its comment ends it. The column's name is its
    `AS name`, or the last word of a bare `alias.column`. A comment on a line of its own
    continues the doc of the column above.
    """
    found = list(_FINAL_SELECT.finditer(text))
    if not found:
        return ()
    columns: list[tuple[str, str]] = []
    expression = ""
    for line in found[-1][1].splitlines():
        code, dash, comment = line.partition("--")
        expression += " " + code.strip()
        if not dash:
            continue
        if not expression.strip() and columns:
            name, doc = columns.pop()
            columns.append((name, f"{doc} {comment.strip()}"))
            continue
        alias = _ALIAS.search(expression.strip())
        columns.append((alias[1] if alias else expression.strip(), comment.strip()))
        expression = ""
    if expression.strip():  # a last column without a comment
        alias = _ALIAS.search(expression.strip())
        columns.append((alias[1] if alias else expression.strip(), ""))
    return tuple(columns)


def sql_views() -> dict[str, SqlView]:
    """Every analyze/sql/*.sql view by name, in an order where each comes after what it needs."""
    return sql_views_in("blkscope.analyze")


@functools.cache
def sql_views_in(package: str) -> dict[str, SqlView]:
    """Every view of a package's sql/*.sql files by name, each after what it needs."""
    root = resources.files(package) / "sql"
    found: dict[str, SqlView] = {}
    for path in sorted(root.iterdir(), key=lambda p: p.name):
        if path.name.endswith(".sql"):
            found[path.name[:-4]] = _parse(path.name[:-4], path.read_text())
    ordered: dict[str, SqlView] = {}

    def visit(name: str) -> None:
        if name in found and name not in ordered:
            for need in found[name].needs:
                visit(need)
            ordered[name] = found[name]

    for name in found:
        visit(name)
    return ordered


def needed_by(names: Iterable[str], views: Iterable[SqlView]) -> set[str]:
    """names, with every table and view the views among them read, directly or through other
    views (views: in an order where each comes after what it needs, as sql_views gives them)."""
    wanted = set(names)
    for view in reversed(list(views)):
        if view.name in wanted:
            wanted.update(view.needs)
    return wanted


def materialized(kind: str) -> list[SqlView]:
    """The views whose header says `-- materialize: KIND` (temp or table), in build order."""
    return [v for v in sql_views().values() if v.materialize == kind]


def table_macros() -> list[str]:
    """The CREATE MACRO ... AS TABLE statements of analyze/sql/macros/*.sql (helpers the views
    call with the name of a view, e.g. exact_quantiles)."""
    root = resources.files("blkscope.analyze") / "sql" / "macros"
    return [
        p.read_text()
        for p in sorted(root.iterdir(), key=lambda p: p.name)
        if p.name.endswith(".sql")
    ]


# The SQL views whose names start with `_` are steps of others, not answers: they live in this
# schema, so `SHOW TABLES` (and a user's eye) sees only the public tables and views. The SQL
# files name them bare; registering qualifies them (`_bio_pieces` -> internal._bio_pieces).
INTERNAL = "internal"
_PRIVATE_NAME = re.compile(r"(?<![.\w])(_[a-z0-9_]+)\b")


def in_schema(name: str) -> str:
    """A view's name as created and queried: `internal._x` for a private one, else `x`."""
    return f"{INTERNAL}.{name}" if name.startswith("_") else name


def qualified_sql(select: str) -> str:
    """A view's SELECT with every private view it names qualified by its schema."""
    private = {n for n in sql_views() if n.startswith("_")}
    return _PRIVATE_NAME.sub(lambda m: in_schema(m[1]) if m[1] in private else m[1], select)


def register_table(con: duckdb.DuckDBPyConnection, name: str, parquet: Path) -> None:
    """(Re)define view `name` over a Parquet file."""
    path = parquet.as_posix().replace("'", "''")
    con.execute(f"CREATE OR REPLACE VIEW {quoted(name)} AS SELECT * FROM read_parquet('{path}')")


# What reads DuckDB's catalog, where the column docs show.
_READS_CATALOG = re.compile(
    r"duckdb_columns|duckdb_views|information_schema|^\s*(DESCRIBE|SHOW)\b", re.I
)


def reads_catalog(query: str) -> bool:
    """Whether a query reads DuckDB's catalog (DESCRIBE, SHOW, duckdb_columns(), ...)."""
    return _READS_CATALOG.search(query) is not None


def document(con: duckdb.DuckDBPyConnection, tables: Iterable[str]) -> None:
    """Give the stored tables' views their docs (the schemas' field docs) and the public SQL
    views theirs (their files' `--` comments) as DuckDB comments, shown by duckdb_columns() and
    duckdb_views(). Not done on every connection: DuckDB re-binds a view for each COMMENT ON
    COLUMN, so the ~600 of a whole dataset cost about 0.3 s."""
    stored = [_comments(name) for name in tables if name in TABLES]
    defined = relations(con)
    views = [_view_comments(v) for n, v in sql_views().items() if v.columns and n in defined]
    con.execute(";\n".join(stored + views))


@functools.cache
def _comments(table: str) -> str:
    """The COMMENT statements of a stored table's view, from its declared schema."""
    schema = TABLES[table]
    return _comment_statements(table, doc_of(schema), [(f.name, doc_of(f)) for f in schema])


@functools.cache
def _view_comments(view: SqlView) -> str:
    """The COMMENT statements of a public SQL view, from its file's comments."""
    return _comment_statements(view.name, view.doc, [c for c in view.columns if c[1]])


def _comment_statements(name: str, doc: str, columns: Iterable[tuple[str, str]]) -> str:
    statements = [f"COMMENT ON VIEW {quoted(name)} IS {_literal(doc)}"]
    statements += [
        f"COMMENT ON COLUMN {quoted(name)}.{quoted(column)} IS {_literal(text)}"
        for column, text in columns
    ]
    return ";\n".join(statements)


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def quoted(name: str) -> str:
    """A SQL identifier, double-quoted (names come from manifests, which may be hostile)."""
    return '"' + name.replace('"', '""') + '"'


def register_views(
    con: duckdb.DuckDBPyConnection, names: Iterable[str] | None = None, source: str = "dataset"
) -> list[str]:
    """Define every SQL view (or only those named) whose inputs exist; return the names left out.

    Views over analyze outputs (requests, bios) only exist once `blkscope analyze` wrote them.
    Each view is created once, after what it needs (its `-- needs:` header), and only when all
    of that is defined: binding a view reads the footers of the Parquet files under it, so a
    failed attempt costs as much as a good one. A view whose inputs all exist but that does not
    bind (a table written by another version, without a column the view reads) is an error
    naming the view and DuckDB's message (source names the dataset in it).
    """
    wanted = set(sql_views()) if names is None else set(names)
    con.execute(f"CREATE SCHEMA IF NOT EXISTS {INTERNAL}")
    defined = relations(con)
    left_out = []
    for name, view in sql_views().items():
        if name not in wanted:
            continue
        if not defined.issuperset(view.needs):
            left_out.append(name)
            continue
        try:
            con.execute(f"CREATE OR REPLACE VIEW {in_schema(name)} AS {qualified_sql(view.select)}")
        except (duckdb.CatalogException, duckdb.BinderException) as exc:
            message = str(exc).splitlines()[0]
            raise DatasetError(
                source,
                f"view {name} does not bind: {message}",
                hint="tables written by another blkscope version? run `blkscope analyze` again",
            ) from None
        defined.add(name)
    _integer_sums(con)
    return sorted(left_out)


def _integer_sums(con: duckdb.DuckDBPyConnection) -> None:
    """Give the public views' integer sums BIGINT columns: DuckDB sums integers into HUGEINT
    (int128), which Python, Polars and JSON readers meet as Decimal(38,0). No count or KiB sum
    of a trace comes near 2^63 (a cast past it is an error, not a wrong number)."""
    rows = con.execute(
        "SELECT view_name FROM duckdb_views() WHERE schema_name = 'main' AND NOT internal "
        "AND view_name IN (SELECT table_name FROM duckdb_columns() WHERE schema_name = 'main' "
        "AND (data_type = 'HUGEINT' OR data_type LIKE 'DECIMAL(%,0)'))"
    ).fetchall()
    for (name,) in rows:
        wide = [
            c
            for c, t in con.execute(
                "SELECT column_name, data_type FROM duckdb_columns() "
                "WHERE schema_name = 'main' AND table_name = ?",
                [name],
            ).fetchall()
            if t == "HUGEINT" or (t.startswith("DECIMAL(") and t.endswith(",0)"))
        ]
        casts = ", ".join(f"{quoted(c)}::BIGINT AS {quoted(c)}" for c in wide)
        select = qualified_sql(sql_views()[name].select)
        con.execute(
            f"CREATE OR REPLACE VIEW {quoted(name)} AS SELECT * REPLACE ({casts}) FROM ({select})"
        )


def relations(con: duckdb.DuckDBPyConnection) -> set[str]:
    """The names of the tables and views defined on con, in any schema (DuckDB's own catalog
    views excluded)."""
    rows = con.execute(
        "SELECT view_name FROM duckdb_views() WHERE NOT internal "
        "UNION ALL SELECT table_name FROM duckdb_tables() WHERE NOT internal"
    ).fetchall()
    return {row[0] for row in rows}


def unbound_views(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Names of the SQL views not defined on this connection (their inputs were missing)."""
    return sorted(set(sql_views()) - relations(con))


def optional_tables() -> set[str]:
    """The tables some captures bring and others not: those the views' headers mark with ?."""
    return {t for v in sql_views().values() for t in v.optional}


def optional_views(tables: Iterable[str]) -> set[str]:
    """Views that read, directly or through other views, an optional table missing from a
    dataset that has `tables`."""
    missing = optional_tables().difference(tables)
    optional: set[str] = set()
    for name, view in sql_views().items():  # in order: what a view needs is decided before it
        if missing.intersection(view.optional) or optional.intersection(view.needs):
            optional.add(name)
    return optional


def connect(dataset: Path, manifest: Manifest) -> duckdb.DuckDBPyConnection:
    """Connect to an in-memory DuckDB where the dataset's tables (as its manifest lists them)
    and views are defined."""
    con = track(duckdb.connect())
    con.execute("SET enable_progress_bar = false")
    # Every stored table and golden query orders explicitly; keeping scan order costs a third.
    con.execute("SET preserve_insertion_order = false")
    # DuckDB 2.0's caching operator fails now and then on dictionary-encoded Parquet columns
    # ("dict-surviving cache: global dictionary column ... changed identity"). GLOBAL: the
    # setting is per connection, and analyze builds its statistics on cursors (new connections
    # to this database), which had it on (caps-partitions' stage_stats failed so).
    con.execute("SET GLOBAL enable_caching_operators = false")
    # Each view or query over a table parses its Parquet footer again without this (the 10x fio
    # capture's events.parquet: 674 row groups; connect 0.51 -> 0.21 CPU-s). Safe with files
    # rewritten in place: DuckDB re-reads a footer whose file changed, and any file modified
    # within 10 s of the cached read (its clock-resolution guard).
    con.execute("SET GLOBAL parquet_metadata_cache = true")
    for statement in macro_statements():  # the shared definitions every view below uses
        con.execute(statement)
    for statement in table_macros():
        con.execute(statement)
    for name, info in manifest.tables.items():
        register_table(con, name, table_file(dataset, info.file))
    register_views(con, source=str(dataset))
    return con


def table_file(dataset: Path, file: str) -> Path:
    """The absolute path of one of the dataset's table files; a symlink that leaves the
    dataset folder is refused (the folder may come from another machine), and so is a file
    that is missing, not Parquet, or without its table's declared columns."""
    root = dataset.resolve()
    path = (root / file).resolve()
    if path.parent != root:
        raise NotADatasetError(
            str(dataset / file),
            f"is a link to {path}, outside the dataset",
            hint="a dataset's tables must be files inside its folder",
        )
    check_table_file(dataset / file, file.removesuffix(".parquet"))
    return path


def lock_down(con: duckdb.DuckDBPyConnection, dataset: Path, tables: Iterable[str]) -> None:
    """Leave con able to read the dataset's own tables and nothing else: no other file, no
    extension, no attached database, and no way to change that back."""
    files = [table_file(dataset, f"{name}.parquet") for name in tables]
    listed = ", ".join("'" + f.as_posix().replace("'", "''") + "'" for f in files)
    con.execute(f"SET allowed_paths = [{listed}]")
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


def query_table(
    con: duckdb.DuckDBPyConnection, sql: str, params: list[object] | None = None
) -> pa.Table:
    """Run sql (with `?` parameters, when given) and return an Arrow table (DuckDB renamed
    this call across versions)."""
    rel = con.sql(sql) if params is None else con.sql(sql, params=params)
    fetch = getattr(rel, "to_arrow_table", None) or rel.arrow
    return fetch()
