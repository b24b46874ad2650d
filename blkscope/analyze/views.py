"""Open a dataset in DuckDB with its tables and every SQL view in analyze/sql registered."""

from __future__ import annotations

import re
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from blkscope.concepts import macro_statements
from blkscope.errors import DatasetError
from blkscope.ingest.dataset import check_table_file, read_manifest


def sql_views() -> dict[str, str]:
    """Return {view name: SELECT text} for every analyze/sql/*.sql file."""
    root = resources.files("blkscope.analyze") / "sql"
    return {
        p.name[:-4]: p.read_text()
        for p in sorted(root.iterdir(), key=lambda p: p.name)
        if p.name.endswith(".sql")
    }


def register_table(con: duckdb.DuckDBPyConnection, name: str, parquet: Path) -> None:
    """(Re)define view `name` over a Parquet file."""
    path = parquet.as_posix().replace("'", "''")
    con.execute(f"CREATE OR REPLACE VIEW {quoted(name)} AS SELECT * FROM read_parquet('{path}')")


def quoted(name: str) -> str:
    """A SQL identifier, double-quoted (names come from manifests, which may be hostile)."""
    return '"' + name.replace('"', '""') + '"'


def register_views(con: duckdb.DuckDBPyConnection, names: Iterable[str] | None = None) -> list[str]:
    """Define every SQL view (or only those named) whose inputs exist; return the names left out.

    Views over analyze outputs (requests, bios) only bind once `blkscope analyze` wrote them (or
    rewrote them with the current columns), and views depend on each other in any file order,
    so retry until no more can be defined.
    """
    views = sql_views()
    pending = {name: views[name] for name in (views if names is None else names)}
    while pending:
        done = []
        for name, select in pending.items():
            try:
                con.execute(f"CREATE OR REPLACE VIEW {name} AS {select}")
            except (duckdb.CatalogException, duckdb.BinderException):
                continue
            done.append(name)
        for name in done:
            del pending[name]
        if not done:
            break
    return sorted(pending)


def unbound_views(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Names of the SQL views not defined on this connection (their inputs were missing)."""
    defined = {row[0] for row in con.execute("SELECT view_name FROM duckdb_views()").fetchall()}
    return sorted(set(sql_views()) - defined)


OPTIONAL_TABLES = ("partitions", "writeback", "series", "iostat_log", "meminfo", "biosnoop")


def optional_views(manifest: dict[str, Any]) -> set[str]:
    """Views that read a table this dataset lacks and only some captures bring."""
    missing = [t for t in OPTIONAL_TABLES if t not in manifest.get("tables", {})]
    views = sql_views()
    optional: set[str] = set()
    while True:  # and the views over those views
        found = {
            name
            for name, select in views.items()
            if any(re.search(rf"\b{t}\b", select) for t in [*missing, *optional])
        }
        if found <= optional:
            return optional
        optional |= found


def connect(dataset: Path) -> duckdb.DuckDBPyConnection:
    """Connect to an in-memory DuckDB where the dataset's tables and views are defined."""
    manifest = read_manifest(dataset)
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    # Every stored table and golden query orders explicitly; keeping scan order costs a third.
    con.execute("SET preserve_insertion_order = false")
    # DuckDB 2.0's caching operator fails now and then on dictionary-encoded Parquet columns
    # ("dict-surviving cache: global dictionary column ... changed identity").
    con.execute("SET enable_caching_operators = false")
    for statement in macro_statements():  # the shared definitions every view below uses
        con.execute(statement)
    for name, info in manifest.get("tables", {}).items():
        register_table(con, name, table_file(dataset, info["file"]))
    register_views(con)
    return con


def table_file(dataset: Path, file: str) -> Path:
    """The absolute path of one of the dataset's table files; a symlink that leaves the
    dataset folder is refused (the folder may come from another machine), and so is a file
    that is missing, not Parquet, or without its table's declared columns."""
    root = dataset.resolve()
    path = (root / file).resolve()
    if path.parent != root:
        raise DatasetError(
            str(dataset / file),
            f"is a link to {path}, outside the dataset",
            hint="a dataset's tables must be files inside its folder",
        )
    check_table_file(dataset / file, file.removesuffix(".parquet"))
    return path


def lock_down(con: duckdb.DuckDBPyConnection, dataset: Path) -> None:
    """Leave con able to read the dataset's own tables and nothing else: no other file, no
    extension, no attached database, and no way to change that back."""
    files = [table_file(dataset, f"{name}.parquet") for name in read_manifest(dataset)["tables"]]
    listed = ", ".join("'" + f.as_posix().replace("'", "''") + "'" for f in files)
    con.execute(f"SET allowed_paths = [{listed}]")
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


def query_table(con: duckdb.DuckDBPyConnection, sql: str) -> pa.Table:
    """Run sql and return an Arrow table (DuckDB renamed this call across versions)."""
    rel = con.sql(sql)
    fetch = getattr(rel, "to_arrow_table", None) or rel.arrow
    return fetch()
