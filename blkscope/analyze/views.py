"""Open a dataset in DuckDB with its tables and every SQL view in analyze/sql registered."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import duckdb
import pyarrow as pa

from blkscope.ingest.dataset import read_manifest


def sql_views() -> dict[str, str]:
    """Return {view name: SELECT text} for every analyze/sql/*.sql file."""
    root = resources.files("blkscope.analyze") / "sql"
    return {
        p.name[:-4]: p.read_text()
        for p in sorted(root.iterdir(), key=lambda p: p.name)
        if p.name.endswith(".sql")
    }


def connect(dataset: Path) -> duckdb.DuckDBPyConnection:
    """Connect to an in-memory DuckDB where the dataset's tables and views are defined."""
    manifest = read_manifest(dataset)
    con = duckdb.connect()
    for name, info in manifest.get("tables", {}).items():
        path = (dataset / info["file"]).as_posix().replace("'", "''")
        con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{path}')")
    for name, select in sql_views().items():
        con.execute(f"CREATE VIEW {name} AS {select}")
    return con


def query_table(con: duckdb.DuckDBPyConnection, sql: str) -> pa.Table:
    """Run sql and return an Arrow table (DuckDB renamed this call across versions)."""
    rel = con.sql(sql)
    fetch = getattr(rel, "to_arrow_table", None) or rel.arrow
    return fetch()
