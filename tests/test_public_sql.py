"""What a user's SQL sees: only public tables and views (the `_` steps live in schema
`internal`), integer sums as BIGINT, and each stored column's doc and each public SQL view's
column doc (its file's `--` comment) as a DuckDB comment."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import blkscope
from blkscope.analyze.views import _column_docs, sql_views
from blkscope.cli import app
from blkscope.schemas import TABLES, doc_of

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]
PUBLIC_VIEWS = {name: view for name, view in sql_views().items() if not name.startswith("_")}


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


@pytest.fixture(scope="module")
def files_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The loop-gpt-ext4 capture (it brings a file map: bio_files) with a partition listing
    attached (partition_io): with the bundled capture (biosnoop_check, writeback_events), every
    public SQL view is defined on one of the two."""
    out = tmp_path_factory.mktemp("public-sql") / "files.dataset"
    capture = ROOT / "tests" / "data" / "files" / "loop-gpt-ext4"
    listing = ROOT / "tests" / "data" / "partitions" / "fdisk_gpt_loop0.txt"
    for args in (["ingest", str(capture), "-o", str(out), "-q"],
                 ["partitions", str(out), str(listing), "--device", "7,1", "--json"]):  # fmt: skip
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
    return out


def test_every_public_view_column_has_its_sql_comment(
    mq_dataset: Path, files_dataset: Path
) -> None:
    """duckdb_columns() gives each column of each public SQL view (analyze/sql/*.sql without a
    leading _) the text of its `--` comment in the view's final SELECT; a column without one
    fails here (the house rule: every column documented)."""
    seen: dict[str, list[tuple[str, str]]] = {}
    for dataset in (mq_dataset, files_dataset):
        columns: dict[str, list[tuple[str, str]]] = {}
        for row in sql_json(
            dataset,
            "SELECT table_name, column_name, comment FROM duckdb_columns() "
            "WHERE schema_name = 'main' ORDER BY table_name, column_index",
        ):
            if row["table_name"] in PUBLIC_VIEWS:
                columns.setdefault(str(row["table_name"]), []).append(
                    (str(row["column_name"]), str(row["comment"] or ""))
                )
        for name, docs in columns.items():
            # the parser found DuckDB's own column names, in order, and each has a doc
            assert docs == list(PUBLIC_VIEWS[name].columns), name
            assert [c for c, doc in docs if not doc.strip()] == [], name
        seen |= columns
    assert set(seen) == set(PUBLIC_VIEWS)
    # as the files print them
    assert dict(seen["io_ratios"])["merge_ratio"] == "#Q / #D"
    assert dict(seen["bio_files"])["path"] == "file or structure (untrusted); null: unmapped"
    assert dict(seen["partition_io"])["q2c_p99_ns"] == "99th percentile queue-to-complete"
    assert dict(seen["writeback_events"])["clock"] == (
        "the log's clock: monotonic (exact) or time_of_day (1 s stamps)"
    )
    views = sql_json(mq_dataset, "SELECT comment FROM duckdb_views() WHERE view_name = 'time_bins'")
    assert views == [{"comment": PUBLIC_VIEWS["time_bins"].doc}]
    assert PUBLIC_VIEWS["time_bins"].doc.startswith(
        "The time bins every per-bin table and chart of a device uses: equal widths of 1, 2 or"
    )


def test_describe_a_public_view_shows_its_column_docs(mq_dataset: Path) -> None:
    rows = sql_json(mq_dataset, "DESCRIBE io_ratios")
    assert [(r["column_name"], r["comment"]) for r in rows][:6] == [
        ("dev_major", "device major"),
        ("dev_minor", "device minor"),
        ("op", "op class: read write discard flush other"),
        ("queued", "bios (Q)"),
        ("dispatches", "D events of data and flush requests"),
        ("merge_ratio", "#Q / #D"),
    ]
    text = runner.invoke(app, ["sql", str(mq_dataset), "DESCRIBE io_ratios"])
    assert text.exit_code == 0, text.output
    assert "share of D that are sequential" in text.stdout


def test_column_docs_come_from_the_final_select() -> None:
    """A column's expression may span lines (its comment ends it); its name is its alias or
    the last word of alias.column; the CTEs' SELECTs are not read; a comment alone on a line
    continues the doc above; a column without a comment has an empty doc (which the test
    above fails)."""
    text = """-- a view
-- needs: bios
WITH x AS (
    SELECT a, b -- not a column of the view
    FROM bios
)
SELECT
    x.a,                          -- the a
    coalesce(sum(b), 0)
      - 1 AS b_less_one,          -- b, less one
                                  -- (a long doc)
    count(*) AS n
FROM x
"""
    assert _column_docs(text) == (
        ("a", "the a"),
        ("b_less_one", "b, less one (a long doc)"),
        ("n", ""),
    )
