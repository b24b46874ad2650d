"""Every analyze/sql view names what it reads in its `-- needs:` header, and views are created
in an order where that is already defined."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pytest

from blkscope.analyze.build import BUILD_ORDER, SHARED_AFTER_BIOS
from blkscope.analyze.stream.depth_run import DEPTH_BIN_SUMS, DEPTH_TIME
from blkscope.analyze.stream.iodist import IO_COUNTS
from blkscope.analyze.stream.q2q import Q2Q_VIEW, STAGE_COUNTS
from blkscope.analyze.views import (
    connect,
    optional_tables,
    optional_views,
    register_views,
    sql_views,
)
from blkscope.errors import DatasetError
from blkscope.ingest.block_events import ingest_blkparse
from blkscope.schemas import TABLES
from blkscope.store.manifest import read_manifest
from tests.analyze.conftest import DATA


def _read_by(select: str) -> set[str]:
    """The tables and views a SELECT reads: names after FROM or JOIN, and the views it hands a
    table macro (exact_quantiles('_spike_latencies', ...)), comments left out; the streaming
    pass's io_dist counts, depth sums and Q2Q gaps are relations of the analysis connection's
    internal schema."""
    body = "\n".join(line.split("--")[0] for line in select.splitlines())
    passed = {
        name.split(".")[1]
        for name in (IO_COUNTS, DEPTH_TIME, DEPTH_BIN_SUMS, Q2Q_VIEW, STAGE_COUNTS)
    }
    known = set(TABLES) | set(sql_views()) | passed
    found = re.findall(r"\b(?:FROM|JOIN)\s+(?:internal\.)?(\w+)", body, flags=re.I)
    found += re.findall(r"\bexact_quantiles\(\s*'(\w+)'", body)
    return {m for m in found if m in known}


def test_needs_headers_name_exactly_what_each_view_reads() -> None:
    views = sql_views()
    assert len(views) == 29
    wrong = {n: (sorted(v.needs), sorted(_read_by(v.select))) for n, v in views.items()
             if set(v.needs) != _read_by(v.select)}  # fmt: skip
    assert wrong == {}
    assert views["_bio_stages"].needs == ("_bio_groups", "_bio_q2q")
    assert views["_bio_groups"].needs == ("_bio_q2q",)
    assert views["writeback_events"].needs == ("writeback",)


def test_views_come_after_what_they_need() -> None:
    order = list(sql_views())
    for name, view in sql_views().items():
        for need in view.needs:
            if need in order:
                assert order.index(need) < order.index(name), (name, need)


def test_a_view_whose_table_is_missing_is_left_out_without_an_attempt() -> None:
    con = duckdb.connect()
    con.register("empty_events", TABLES["events"].empty_table())  # only events, no rows
    con.execute("CREATE TABLE events AS SELECT * FROM empty_events")
    executed: list[str] = []

    class Spy:
        def execute(self, sql: str) -> duckdb.DuckDBPyConnection:
            executed.append(sql)
            return con.execute(sql)

    left = register_views(Spy(), ["_request_events", "_depth_build", "writeback_events"])  # type: ignore[arg-type]
    assert left == ["_depth_build", "writeback_events"]
    created = [s for s in executed if s.startswith("CREATE OR REPLACE VIEW")]
    assert [s.split()[4] for s in created] == ["internal._request_events"]


def test_optional_views_follow_the_needs_of_views_over_views() -> None:
    assert optional_tables() == {"biosnoop", "file_extents", "partitions", "series", "writeback"}
    tables = [name for name in TABLES if name != "writeback"]
    assert optional_views(tables) == {"writeback_events", "_writeback_windows"}
    assert optional_views(TABLES) == set()


def test_build_order_and_materialisation_come_from_the_headers() -> None:
    """`-- materialize: table NAME` views make the stored statistics, `-- materialize: temp`
    ones the intermediates computed once; both in an order where each follows what it needs."""
    assert sorted(BUILD_ORDER) == [
        ("depth", "_depth_build"),
        ("depth_bins", "_depth_bins_build"),
        ("io_dist", "_io_dist_build"),
        ("iostat", "_iostat_build"),
        ("latency_heatmap", "_latency_heatmap_build"),
        ("latency_hist", "_latency_hist_build"),
        ("stage_stats", "_stage_stats_build"),
    ]
    assert all(table in TABLES for table, _ in BUILD_ORDER)
    assert SHARED_AFTER_BIOS == ("_bio_groups", "_stage_buckets")


def test_a_view_that_does_not_bind_is_an_error_naming_it_and_duckdbs_message() -> None:
    """Its inputs exist but lack a column it reads (a table written by another version)."""
    con = duckdb.connect()
    con.execute("CREATE TABLE requests AS SELECT 1 AS dev_major")
    with pytest.raises(DatasetError) as caught:
        register_views(con, ["_iostat_requests"], source="old-ds")
    assert str(caught.value) == (
        "old-ds: view _iostat_requests does not bind: "
        'Binder Error: Referenced column "kind" not found in FROM clause!'
    )
    assert caught.value.hint == (
        "tables written by another blkscope version? run `blkscope analyze` again"
    )


def test_the_caching_operator_is_off_on_cursors_too(tmp_path: Path) -> None:
    """DuckDB 2.0's caching operator fails now and then on dictionary-encoded Parquet columns;
    analyze builds its statistics on cursors of the analysis connection, which must have it off
    as well (a plain SET is per connection: stage_stats failed so on caps-partitions)."""
    ingest_blkparse([str(DATA / "mq30-flush.blkparse.txt")], tmp_path / "ds")
    con = connect(tmp_path / "ds", read_manifest(tmp_path / "ds"))
    setting = "SELECT current_setting('enable_caching_operators')"
    with con.cursor() as cur:
        assert con.sql(setting).fetchall() == cur.sql(setting).fetchall() == [(False,)]
    con.close()
