"""events.parquet agrees with independent counts of the text and with blkparse's own summary.

blkparse's accounting rules, found in the data and in blkparse.c, are spelled out in
src/blkscope/analyze/sql/blkparse_totals.sql; each test below pins one of them.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from blkscope.analyze.views import query_table
from blkscope.dataset import Dataset
from blkscope.ingest.blkparse.summary_blocks import size_cnv
from tests.conftest import all_blkparse_inputs, input_id, read_zst

_DEV = re.compile(rb"\d+,\d+")
_KIB = {
    "reads_queued_kib",
    "writes_queued_kib",
    "read_dispatches_kib",
    "write_dispatches_kib",
    "reads_completed_kib",
    "writes_completed_kib",
    "read_merges_kib",
    "write_merges_kib",
}
_COUNTED = [
    "reads_queued",
    "writes_queued",
    "read_dispatches",
    "write_dispatches",
    "reads_requeued",
    "writes_requeued",
    "reads_completed",
    "writes_completed",
    "read_merges",
    "write_merges",
    "io_unplugs",
    "timer_unplugs",
    *sorted(_KIB),
]

INPUTS = all_blkparse_inputs()


def _text_counts(path: Path) -> Counter[tuple[str, str]]:
    """Count event lines per (device, action) with nothing but str.split."""
    text = read_zst(path)
    counts: Counter[tuple[str, str]] = Counter()
    for line in text.splitlines():
        toks = line.split()
        if len(toks) >= 7 and _DEV.fullmatch(toks[0]):
            counts[(toks[0].decode(), toks[5].decode())] += 1
    return counts


def _summary(con: duckdb.DuckDBPyConnection, block_filter: str) -> dict[tuple, str]:
    rows = con.execute(f"""
        SELECT dev_major, dev_minor, block, metric, text FROM blkparse_summary
        WHERE {block_filter}""").fetchall()
    return {(r[0], r[1], r[2], r[3]): r[4].replace(",", "").removesuffix("iB") for r in rows}


@pytest.mark.slow
@pytest.mark.parametrize("path", INPUTS, ids=input_id)
def test_action_counts_match_the_text(path: Path, ingested: dict[Path, Path]) -> None:
    events = pq.read_table(
        ingested[path] / "events.parquet", columns=["dev_major", "dev_minor", "action"]
    )
    ours = Counter(
        (f"{a},{b}", c)
        for a, b, c in zip(
            *(events[n].to_pylist() for n in ("dev_major", "dev_minor", "action")), strict=False
        )
    )
    assert ours == _text_counts(path)
    errors = pq.read_table(ingested[path] / "ingest_errors.parquet")
    assert errors.num_rows == 0


@pytest.mark.parametrize("path", INPUTS, ids=input_id)
def test_per_cpu_totals_equal_blkparse_summary(path: Path, ingested: dict[Path, Path]) -> None:
    con = Dataset(ingested[path]).con
    printed = _summary(con, "block LIKE 'CPU%'")
    assert printed, "the input has a summary block"
    ours = query_table(con, "SELECT * FROM blkparse_totals").to_pylist()
    compared = 0
    for row in ours:
        for metric in _COUNTED:
            key = (row["dev_major"], row["dev_minor"], f"CPU{row['cpu']}", metric)
            if key in printed:
                assert size_cnv(int(row[metric]), metric in _KIB) == printed[key], key
                compared += 1
    assert compared >= len(_COUNTED)


@pytest.mark.parametrize("path", INPUTS, ids=input_id)
def test_device_totals_equal_blkparse_total_block(path: Path, ingested: dict[Path, Path]) -> None:
    """Total sums the per-CPU values; with one busy CPU blkparse prints no Total at all."""
    con = Dataset(ingested[path]).con
    totals = query_table(
        con,
        f"""
        SELECT dev_major, dev_minor, {", ".join(f"sum({m})::BIGINT AS {m}" for m in _COUNTED)}
        FROM blkparse_totals GROUP BY ALL""",
    ).to_pylist()
    printed = _summary(con, "block = 'Total'")
    cpu_blocks = con.execute(
        "SELECT count(DISTINCT block) FROM blkparse_summary WHERE block LIKE 'CPU%'"
    ).fetchall()[0]
    assert cpu_blocks is not None
    if cpu_blocks[0] < 2:
        assert printed == {}
        return
    for row in totals:
        for metric in _COUNTED:
            key = (row["dev_major"], row["dev_minor"], "Total", metric)
            assert size_cnv(row[metric], metric in _KIB) == printed[key], key


def _max_depths(events: list[dict]) -> tuple[int, int]:
    """blkparse's Read/Write depth: D adds one, C and R take one away but never below zero."""
    depth, peak = [0, 0], [0, 0]
    for e in events:
        w = int(e["op"] in ("W", "D"))
        if e["action"] == "D":
            depth[w] += 1
            peak[w] = max(peak[w], depth[w])
        elif depth[w]:
            depth[w] -= 1
    return peak[0], peak[1]


@pytest.mark.parametrize("path", INPUTS, ids=input_id)
def test_depth_events_and_throughput_lines(path: Path, ingested: dict[Path, Path]) -> None:
    con = Dataset(ingested[path]).con
    for major, minor in con.execute("SELECT DISTINCT dev_major, dev_minor FROM events").fetchall():
        dev = f"dev_major = {major} AND dev_minor = {minor}"
        rows = query_table(
            con,
            f"SELECT action, op FROM events WHERE {dev} AND action IN "
            "('D', 'C', 'R') ORDER BY line_no",
        ).to_pylist()
        printed = {
            m: v
            for m, v in con.execute(
                f"SELECT metric, value FROM blkparse_summary WHERE {dev}"
            ).fetchall()
        }
        assert _max_depths(rows) == (printed["read_depth"], printed["write_depth"])
        n, first, last = con.execute(
            f"SELECT count(*), min(time_ns), max(time_ns) FROM events WHERE {dev}"
        ).fetchall()[0] or (0, 0, 0)
        assert n == printed["events"]
        msec = (last - first) // 1_000_000
        kib = con.execute(
            f"SELECT sum(reads_completed_kib), sum(writes_completed_kib) "
            f"FROM blkparse_totals WHERE {dev}"
        ).fetchall()[0] or (0, 0)
        assert (1000 * int(kib[0]) // msec, 1000 * int(kib[1]) // msec) == (
            printed["throughput_read_kib_s"],
            printed["throughput_write_kib_s"],
        )


def test_a_bare_flush_counts_as_a_read(ingested: dict[Path, Path]) -> None:
    """`D FN` has no write bit, so blkparse counts it under Read Dispatches (0 KiB)."""
    path = INPUTS[1]  # loop-split-merge-tail: jbd2 flush sequences, 3 real reads
    con = Dataset(ingested[path]).con
    assert con.execute("SELECT count(*) FROM events WHERE action = 'D' AND rwbs = 'FN'").fetchall()[
        0
    ] == (2,)
    assert con.execute("SELECT sum(read_dispatches) FROM blkparse_totals").fetchall()[0] == (3,)
    assert con.execute(
        "SELECT value FROM blkparse_summary WHERE metric = 'read_dispatches'"
    ).fetchall()[0] == (3,)


def test_requeued_kib_come_back_out_of_dispatch_kib(ingested: dict[Path, Path]) -> None:
    """mq-writeback-30s: 4 read requeues of 48 KiB; blkparse prints dispatch KiB net of them."""
    con = Dataset(ingested[INPUTS[0]]).con
    row = con.execute("""
        SELECT sum(nsectors // 2) FILTER (action = 'D' AND op = 'R'),
               sum(nsectors // 2) FILTER (action = 'R' AND op = 'R')
        FROM events""").fetchall()[0]
    assert row == (35264, 48)
    assert con.execute(
        "SELECT value FROM blkparse_summary WHERE block = 'Total' AND "
        "metric = 'read_dispatches_kib'"
    ).fetchall()[0] == (35264 - 48,)
