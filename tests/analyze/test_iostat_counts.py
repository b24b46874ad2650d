"""iostat's counts kept as the analysis goes (analyze/stream/iostat_counts.py) against the SQL they
replaced (sql/_iostat_build.sql, main e6cf4d4): the `done` sums over the requests the disk
statistics count and the merges over the events, per device and interval, at the default
intervals and at odd ones, on every sample and both fixtures."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from blkscope.analyze.build import caches_plug_time
from blkscope.analyze.memory import bound_memory
from blkscope.analyze.stream.iostat_counts import IOSTAT_DONE, IOSTAT_MERGES
from blkscope.analyze.stream.run import stream_tables
from blkscope.analyze.views import connect, register, register_table
from blkscope.ingest.block_events import ingest_blkparse
from blkscope.store.manifest import read_manifest
from tests.analyze.test_q2q import _sample_inputs

DONE = """
WITH rq AS (
    SELECT r.*, floor((r.c_time_ns - {org}) / {iv})::BIGINT AS k
    FROM internal._iostat_requests r
)
SELECT dev_major, dev_minor, k,
       count(*) FILTER (op = 'R') AS reads, count(*) FILTER (op = 'W') AS writes,
       coalesce(sum(nsectors) FILTER (op = 'R'), 0) AS read_sectors,
       coalesce(sum(nsectors) FILTER (op = 'W'), 0) AS write_sectors,
       sum(c_time_ns - start_ns) FILTER (op = 'R') AS read_wait_ns,
       sum(c_time_ns - start_ns) FILTER (op = 'W') AS write_wait_ns,
       sum(c_time_ns - start_ns) AS wait_ns
FROM rq GROUP BY ALL
"""
MERGES = """
SELECT dev_major, dev_minor, floor((time_ns - {org}) / {iv})::BIGINT AS k,
       count(*) FILTER (op = 'R') AS read_merges, count(*) FILTER (op = 'W') AS write_merges
FROM events WHERE action IN ('M', 'F') GROUP BY ALL
"""
KEPT_DONE = f"""
SELECT dev_major, dev_minor, k, reads, writes,
       read_sectors_hi::HUGEINT * 4294967296 + read_sectors_lo,
       write_sectors_hi::HUGEINT * 4294967296 + write_sectors_lo,
       read_wait_ns_hi::HUGEINT * 4294967296 + read_wait_ns_lo,
       write_wait_ns_hi::HUGEINT * 4294967296 + write_wait_ns_lo,
       wait_ns_hi::HUGEINT * 4294967296 + wait_ns_lo
FROM {IOSTAT_DONE}
"""
KEPT_MERGES = f"SELECT * FROM {IOSTAT_MERGES}"

# (interval_ns, origin_ns): iostat's default, and intervals that cut seconds anywhere
INTERVALS = [(1_000_000_000, 0), (250_000_000, 123_456_789), (7_777_777, -3)]


def _counted(ds: Path, interval_ns: int, origin_ns: int) -> duckdb.DuckDBPyConnection:
    manifest = read_manifest(ds)
    done: set[str] = set()
    con = connect(ds, manifest, done=done)
    bound_memory(con, ds)
    doc = manifest.editable()
    stream_tables(
        con,
        ds,
        caches_plug_time(doc),
        int(doc.get("events", {}).get("count", 0)),
        interval_ns=interval_ns,
        origin_ns=origin_ns,
    )
    register_table(con, "requests", ds / "requests.parquet")
    register(con, done, ["_iostat_requests"])
    return con


@pytest.mark.parametrize(("name", "inputs"), _sample_inputs(), ids=lambda v: str(v)[:40])
def test_the_counts_are_the_sqls(tmp_path: Path, name: str, inputs: list[str]) -> None:
    ds = tmp_path / "ds"
    ingest_blkparse(inputs, ds)
    for iv, org in INTERVALS:
        con = _counted(ds, iv, org)
        for kept, defined in ((KEPT_DONE, DONE), (KEPT_MERGES, MERGES)):
            expected = con.sql(defined.format(iv=iv, org=org)).fetchall()
            assert sorted(con.sql(kept).fetchall()) == sorted(expected), (name, iv, org)
        con.close()


def test_the_counts_of_a_fixture(tmp_path: Path) -> None:
    """Real values: the loop-split-merge fixture's busiest second (loop0, 7:0, its first:
    739 writes of 94,304 sectors beside one read) and its ten write merges; the awaits of all
    are the reads' plus the writes'."""
    inputs = dict(_sample_inputs())["loop-split-merge-tail"]
    ds = tmp_path / "ds"
    ingest_blkparse(inputs, ds)
    con = _counted(ds, 1_000_000_000, 0)
    busiest = con.sql(f"{KEPT_DONE} ORDER BY writes DESC LIMIT 1").fetchall()
    merges = con.sql(f"SELECT sum(read_merges), sum(write_merges) FROM {IOSTAT_MERGES}").fetchall()
    assert busiest == [(7, 0, 0, 1, 739, 8, 94_304, 6_968_803, 3_803_095_885, 3_810_064_688)]
    assert merges == [(0, 10)]
    con.close()
