"""Open a dataset in DuckDB with its tables and every SQL module of analyze/sql created."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import Any, cast

import duckdb
import pyarrow as pa

from blkscope.analyze.sql_modules import INTERNAL, SqlModule, SqlObject, sql_modules
from blkscope.errors import DatasetError, NotADatasetError
from blkscope.interrupts import track
from blkscope.schemas import TABLES, doc_of
from blkscope.store.manifest import Manifest, check_table_file


def modules() -> dict[str, SqlModule]:
    """Every SQL module of analyze/sql by name, each after the modules it includes."""
    return sql_modules("blkscope.analyze")


def needed_by(names: Iterable[str], found: Iterable[SqlModule]) -> set[str]:
    """names, with every table and module the modules among them include, directly or through
    other modules (found: in an order where each comes after what it includes)."""
    wanted = set(names)
    for module in reversed(list(found)):
        if module.name in wanted:
            wanted.update(module.includes)
    return wanted


def builders() -> dict[str, SqlObject]:
    """The stored tables analyze computes in SQL, each with the object whose rows it is (its
    declaration `(LIKE table)`), in the order the schemas declare the tables."""
    found = {o.like: o for m in modules().values() for o in m.objects if o.like is not None}
    return {name: found[name] for name in TABLES if name in found}


def register_table(con: duckdb.DuckDBPyConnection, name: str, parquet: Path) -> None:
    """Define view `name` over a stored table's Parquet file (replacing the one over an earlier
    file of the table)."""
    path = parquet.as_posix().replace("'", "''")
    create(con, f"CREATE OR REPLACE VIEW {quoted(name)} AS SELECT * FROM read_parquet('{path}')")


def create(con: duckdb.DuckDBPyConnection, statement: str) -> None:
    """Run a CREATE: every view, table and macro a connection gets is made here."""
    con.execute(statement)


# What reads DuckDB's catalog, where the column docs show.
_READS_CATALOG = re.compile(
    r"duckdb_columns|duckdb_views|information_schema|^\s*(DESCRIBE|SHOW)\b", re.I
)


def reads_catalog(query: str) -> bool:
    """Whether a query reads DuckDB's catalog (DESCRIBE, SHOW, duckdb_columns(), ...)."""
    return _READS_CATALOG.search(query) is not None


def document(con: duckdb.DuckDBPyConnection, tables: Iterable[str]) -> None:
    """Give the stored tables' views their docs (the schemas' field docs) and the public SQL
    views theirs (their declarations) as DuckDB comments, shown by duckdb_columns() and
    duckdb_views(). Not done on every connection: DuckDB binds a view again for each COMMENT
    ON COLUMN, hundreds of them over a whole dataset."""
    stored = [_comments(name) for name in tables if name in TABLES]
    defined = relations(con)
    views = [
        _view_comments(o)
        for m in modules().values()
        for o in m.objects
        if o.kind == "view" and not o.private and o.name in defined
    ]
    con.execute(";\n".join(stored + views))


@functools.cache
def _comments(table: str) -> str:
    """The COMMENT statements of a stored table's view, from its declared schema."""
    schema = TABLES[table]
    return _comment_statements(table, doc_of(schema), [(f.name, doc_of(f)) for f in schema])


@functools.cache
def _view_comments(view: SqlObject) -> str:
    """The COMMENT statements of a public SQL view, from its declaration."""
    return _comment_statements(view.name, view.doc, [(c.name, c.doc) for c in view.columns])


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


def register(
    con: duckdb.DuckDBPyConnection,
    done: set[str],
    names: Iterable[str] | None = None,
    source: str = "dataset",
) -> list[str]:
    """Create the SQL modules (all, or those named and what they include) that are not in done
    and whose includes all exist on con, in dependency order; add them to done and return the
    names of those left out.

    Views over the analysis tables exist only once `blkscope analyze` wrote them, and the
    analysis's own steps only while it runs: analyze calls this again as its tables appear,
    and done keeps each module created once. A view whose inputs all exist but that does not
    bind (a table written by another version, without a column the view reads) is an error
    naming the view and DuckDB's message (source names the dataset in it).
    """
    found = modules()
    wanted = set(found) if names is None else needed_by(names, found.values())
    present = relations(con)
    con.execute(f"CREATE SCHEMA IF NOT EXISTS {INTERNAL}")
    left_out = []
    for name, module in found.items():
        if name not in wanted or name in done:
            continue
        if not all(n in done or (n not in found and n in present) for n in module.includes):
            left_out.append(name)
            continue
        for sql_object in module.objects:
            try:
                create(con, sql_object.statement())
            except (duckdb.CatalogException, duckdb.BinderException) as exc:
                message = str(exc).splitlines()[0]
                raise DatasetError(
                    source,
                    f"view {name} does not bind: {message}",
                    hint="tables written by another blkscope version? run `blkscope analyze` again",
                ) from None
        done.add(name)
    return sorted(left_out)


def relations(con: duckdb.DuckDBPyConnection) -> set[str]:
    """The names of the tables and views defined on con, in any schema (DuckDB's own catalog
    views excluded)."""
    rows = con.execute(
        "SELECT view_name FROM duckdb_views() WHERE NOT internal "
        "UNION ALL SELECT table_name FROM duckdb_tables() WHERE NOT internal"
    ).fetchall()
    return {row[0] for row in rows}


def optional_tables() -> set[str]:
    """The tables some captures bring and others not: those the modules INCLUDE IF EXISTS."""
    return {t for m in modules().values() for t in m.optional}


def optional_modules(tables: Iterable[str]) -> set[str]:
    """Modules that include, directly or through other modules, an optional table missing from
    a dataset that has `tables`."""
    missing = optional_tables().difference(tables)
    optional: set[str] = set()
    for name, module in modules().items():  # in order: what a module includes comes first
        if missing.intersection(module.optional) or optional.intersection(module.includes):
            optional.add(name)
    return optional


def connect(
    dataset: Path,
    manifest: Manifest,
    tables: Iterable[str] | None = None,
    done: set[str] | None = None,
    names: Iterable[str] | None = None,
) -> duckdb.DuckDBPyConnection:
    """Connect to an in-memory DuckDB where the dataset's tables (those its manifest lists, or
    only those named) and every SQL module over them (or only the modules named and what they
    include) are defined (added to done, for a caller that registers more later)."""
    con = track(duckdb.connect())
    con.execute("SET enable_progress_bar = false")
    # Every stored table and golden query orders explicitly; keeping scan order costs a third.
    con.execute("SET preserve_insertion_order = false")
    # DuckDB 2.0's caching operator fails now and then on dictionary-encoded Parquet columns
    # ("dict-surviving cache: global dictionary column ... changed identity"). GLOBAL: the
    # setting is per connection, and analyze builds its statistics on cursors (new connections
    # to this database).
    con.execute("SET GLOBAL enable_caching_operators = false")
    # Without it each view or query over a table parses its Parquet footer again. Safe with
    # files rewritten in place: DuckDB re-reads a footer whose file changed, and any file
    # modified within 10 s of the cached read (its clock-resolution guard).
    con.execute("SET GLOBAL parquet_metadata_cache = true")
    for name, info in manifest.tables.items():
        if tables is None or name in tables:
            register_table(con, name, table_file(dataset, info.file))
    register(con, set() if done is None else done, names, source=str(dataset))
    return con


def connect_on_use(dataset: Path, manifest: Manifest) -> duckdb.DuckDBPyConnection:
    """connect() to every stored table, with each SQL module created when a statement first
    names one of its objects (ModulesOnUse): a dataset opened for a command that reads a few
    views no longer binds every one of them."""
    done: set[str] = set()
    con = connect(dataset, manifest, done=done, names=[])
    # ModulesOnUse forwards everything else to the connection: callers use it as one
    return cast(duckdb.DuckDBPyConnection, ModulesOnUse(con, done, str(dataset)))


@functools.cache
def _object_names() -> tuple[re.Pattern[str], dict[str, str]]:
    """A pattern finding any SQL module object's name (without its schema) in a statement, and
    the module of each name."""
    module_of = {
        o.name.rsplit(".", 1)[-1].lower(): m.name for m in modules().values() for o in m.objects
    }
    names = sorted(module_of, key=len, reverse=True)
    return re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b", re.I), module_of


def named_modules(query: str) -> set[str]:
    """The modules whose objects a statement names (a name in a string or a comment counts:
    creating a module too many is harmless)."""
    pattern, module_of = _object_names()
    return {module_of[found.lower()] for found in pattern.findall(query)}


class ModulesOnUse:
    """A dataset's connection that creates each SQL module, with what it includes, the first
    time a statement names one of its objects, and every module for a statement that reads the
    catalog (register: a view that does not bind is the same error, at its first use).
    Anything else is the connection's own; its cursors share the modules created."""

    def __init__(self, con: duckdb.DuckDBPyConnection, done: set[str], source: str) -> None:
        self._con, self._done, self._source = con, done, source

    @property
    def created(self) -> frozenset[str]:
        """The modules created so far."""
        return frozenset(self._done)

    def create_for(self, query: str) -> None:
        """Create the modules query needs (all of them when it reads the catalog)."""
        if reads_catalog(query):
            register(self._con, self._done, None, source=self._source)
            return
        wanted = named_modules(query).difference(self._done)
        if wanted:
            register(self._con, self._done, wanted, source=self._source)

    def execute(self, query: str, parameters: object = None) -> Any:
        self.create_for(query)
        if parameters is None:
            return self._con.execute(query)
        return self._con.execute(query, parameters)

    def executemany(self, query: str, parameters: object = None) -> Any:
        self.create_for(query)
        if parameters is None:
            return self._con.executemany(query)
        return self._con.executemany(query, parameters)

    def sql(self, query: str, **kwargs: Any) -> Any:
        self.create_for(query)
        return self._con.sql(query, **kwargs)

    def query(self, query: str, **kwargs: Any) -> Any:
        self.create_for(query)
        return self._con.query(query, **kwargs)

    def cursor(self) -> ModulesOnUse:
        return ModulesOnUse(self._con.cursor(), self._done, self._source)

    def __enter__(self) -> ModulesOnUse:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._con.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._con, name)


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
    con: duckdb.DuckDBPyConnection,
    sql: str,
    params: list[object] | dict[str, object] | None = None,
) -> pa.Table:
    """Run sql (with `?` or `$name` parameters, when given) and return an Arrow table (DuckDB
    renamed this call across versions)."""
    rel = con.sql(sql) if params is None else con.sql(sql, params=params)
    fetch = getattr(rel, "to_arrow_table", None) or rel.arrow
    return fetch()
