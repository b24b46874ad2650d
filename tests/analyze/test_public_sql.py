"""What a user's SQL sees: only public tables and views (the `_` steps live in schema
`internal`), integer sums as BIGINT, and each stored column's doc and each public SQL view's
column doc (its declaration) as a DuckDB comment."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import blkscope
from blkscope.analyze.views import modules
from blkscope.cli import app
from blkscope.schemas import TABLES, doc_of

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]
PUBLIC_VIEWS = {
    name: m.main for name, m in modules().items() if m.main.kind == "view" and not m.main.private
}


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
    leading _) its declared type and the text of its declared doc; a column without one fails
    here (the house rule: every column documented)."""
    seen: dict[str, list[tuple[str, str]]] = {}
    for dataset in (mq_dataset, files_dataset):
        columns: dict[str, list[tuple[str, str, str]]] = {}
        for row in sql_json(
            dataset,
            "SELECT table_name, column_name, data_type, comment FROM duckdb_columns() "
            "WHERE schema_name = 'main' ORDER BY table_name, column_index",
        ):
            if row["table_name"] in PUBLIC_VIEWS:
                columns.setdefault(str(row["table_name"]), []).append(
                    (str(row["column_name"]), str(row["data_type"]), str(row["comment"] or ""))
                )
        for name, docs in columns.items():
            # DuckDB's own column names and types, in order, are the declared ones
            declared = [(c.name, c.type, c.doc) for c in PUBLIC_VIEWS[name].columns]
            assert docs == declared, name
            assert [c for c, _, doc in docs if not doc.strip()] == [], name
        seen |= {name: [(c, doc) for c, _, doc in docs] for name, docs in columns.items()}
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


def test_the_partition_latencies_return_their_declared_columns(files_dataset: Path) -> None:
    """internal._partition_bios, the one private view only a dataset with a partition listing
    defines (tests/analyze/test_sql_modules.py checks the others)."""
    with blkscope.open(files_dataset, progress=False) as ds:
        rows = ds.con.execute("DESCRIBE internal._partition_bios").fetchall()
    declared = modules()["_partition_bios"].main.columns
    assert [tuple(r[:2]) for r in rows] == [(c.name, c.type) for c in declared]
