"""What a user's SQL sees: only public tables and views (the `_` steps live in schema
`internal`), integer sums as BIGINT, and each stored column's doc as a DuckDB comment."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

import blkscope
from blkscope.cli import app
from blkscope.schemas import TABLES, doc_of

runner = CliRunner()


def sql_json(dataset: Path, query: str) -> list[dict[str, object]]:
    result = runner.invoke(app, ["sql", str(dataset), query, "--json"])
    assert result.exit_code == 0, result.output
    rows: list[dict[str, object]] = json.loads(result.stdout)
    return rows


def test_show_tables_lists_only_public_names(mq_dataset: Path) -> None:
    names = [r["name"] for r in sql_json(mq_dataset, "SHOW TABLES")]
    assert names and not [n for n in names if str(n).startswith("_")]
    assert {"bios", "requests", "blkparse_totals", "io_ratios", "writeback_events"} <= set(names)
    # the steps are still there for whoever asks by their full name
    assert sql_json(mq_dataset, "SELECT count(*) AS n FROM internal._bio_class") == [{"n": 11039}]


def test_column_docs_are_duckdb_comments(mq_dataset: Path) -> None:
    rows = sql_json(
        mq_dataset,
        "SELECT column_name, comment FROM duckdb_columns() WHERE table_name = 'bios' "
        "ORDER BY column_index",
    )
    assert [(r["column_name"], r["comment"]) for r in rows] == [
        (f.name, doc_of(f)) for f in TABLES["bios"]
    ]
    with blkscope.open(mq_dataset, progress=False) as ds:
        docs = ds.sql("SELECT comment FROM duckdb_views() WHERE view_name = 'requests'")
        assert docs["comment"].to_list() == [doc_of(TABLES["requests"])]


def test_describe_shows_each_columns_doc(mq_dataset: Path) -> None:
    """DuckDB 2.0's own DESCRIBE has no comment column; blkscope's `sql` and `ds.sql` answer a
    bare `DESCRIBE name` with DuckDB's columns and each column's doc last."""
    expected = [(f.name, doc_of(f)) for f in TABLES["bios"]]
    rows = sql_json(mq_dataset, "DESCRIBE bios")
    assert list(rows[0]) == ["column_name", "column_type", "null", "key", "default", "extra",
                             "comment"]  # fmt: skip
    assert [(r["column_name"], r["comment"]) for r in rows] == expected
    assert rows[0]["column_type"] == "INTEGER"
    with blkscope.open(mq_dataset, progress=False) as ds:
        frame = ds.sql('describe "bios";')
        assert list(zip(frame["column_name"], frame["comment"], strict=True)) == expected
        # anything but a bare DESCRIBE is DuckDB's own
        assert ds.sql("DESCRIBE SELECT 1 AS one").columns[-1] == "extra"


def test_public_views_return_bigint_or_double_never_decimal(mq_dataset: Path) -> None:
    wide = sql_json(
        mq_dataset,
        "SELECT table_name, column_name, data_type FROM duckdb_columns() "
        "WHERE schema_name = 'main' AND (data_type = 'HUGEINT' OR data_type LIKE 'DECIMAL%')",
    )
    assert wide == []
    totals = sql_json(
        mq_dataset,
        "SELECT sum(writes_queued_kib)::BIGINT AS w, typeof(any_value(writes_queued_kib)) AS t "
        "FROM blkparse_totals",
    )
    assert totals == [{"w": 1_768_848 + 307_188, "t": "BIGINT"}]  # both CPUs' KiB
    with blkscope.open(mq_dataset, progress=False) as ds:
        frame = ds.sql("SELECT writes_queued_kib FROM blkparse_totals")
        assert str(frame.schema["writes_queued_kib"]) == "Int64"
