"""Checks shared by the tests of the core's Parquet writers."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq


def assert_duckdb_reads_as_pyarrows(path: Path, table: pa.Table) -> None:
    """DuckDB reads the file at path as it reads pyarrow's own file of table: the same rows
    (EXCEPT ALL both ways, so duplicates count) and as many."""
    reference = path.with_name("pyarrow.parquet")
    pq.write_table(table, reference)
    con = duckdb.connect()
    for a, b in ((path, reference), (reference, path)):
        extra = con.sql(f"SELECT * FROM '{a}' EXCEPT ALL SELECT * FROM '{b}'").fetchall()
        assert extra == []
    assert con.sql(f"SELECT count(*) FROM '{path}'").fetchall() == [(table.num_rows,)]
