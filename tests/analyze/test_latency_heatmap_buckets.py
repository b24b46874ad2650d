"""latency_heatmap's quarter-octave buckets (the compiled cells, rust/src/stats/heatmap.rs, and
the edges sql/_latency_heatmap_build.sql gives them), against their definition on any latency:
bucket 4e + k holds [(4 + k) 2^(e-2), (5 + k) 2^(e-2)) for latencies of 4 ns and more, and
latencies under 4 ns (negative ones at 0) have a bucket each."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from blkscope.analyze import compiled
from blkscope.analyze.findings import COMPILED_SPIKE_WINDOWS
from blkscope.analyze.views import register

LATENCIES = st.one_of(
    st.integers(-10, 10), st.integers(0, 10**12), st.integers(-(2**62), 2**62 - 1)
)


def _bucket(ns: int) -> tuple[int, int, int]:
    """(bucket, lo_ns, hi_ns) of a latency, by the definition."""
    if ns < 4:
        b = max(ns, 0)
        return b, b, b + 1
    e = ns.bit_length() - 1
    k = (ns >> (e - 2)) & 3
    return 4 * e + k, (4 + k) << (e - 2), (5 + k) << (e - 2)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(LATENCIES, min_size=1, max_size=200))
def test_buckets_are_quarter_octaves(latencies: list[int]) -> None:
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE bios AS SELECT 8::INTEGER AS dev_major, 0::INTEGER AS dev_minor, "
        "'fio' AS comm, 1000::BIGINT AS c_time_ns, unnest($ns)::BIGINT AS d2c_ns, "
        "unnest($ns)::BIGINT AS q2c_ns, false AS partial",
        {"ns": latencies},
    )
    con.execute(
        "CREATE TABLE events AS SELECT 8::INTEGER AS dev_major, 0::INTEGER AS dev_minor, "
        "unnest([0, 2000])::BIGINT AS time_ns"
    )
    con.execute("CREATE SCHEMA internal")  # where the analysis keeps its own tables
    completed = compiled.CompletedBios(con)
    for batch in compiled._batches(con, "SELECT * FROM bios"):
        completed.feed(batch)
    completed.store(con)
    register(con, set(), ["_latency_heatmap_build"])
    got = con.execute(
        "SELECT bucket, lo_ns, hi_ns, n, max_ns FROM internal._latency_heatmap_build "
        "WHERE stage = 'D2C' ORDER BY bucket"
    ).fetchall()
    expected: dict[tuple[int, int, int], list[int]] = {}
    for ns in latencies:
        expected.setdefault(_bucket(ns), []).append(ns)
    assert got == [(*key, len(v), max(v)) for key, v in sorted(expected.items())]


def _comm_as_codes(batch: pa.RecordBatch) -> pa.RecordBatch:
    """The batch with its comm as codes into names, as the pass hands its bios rows over."""
    at = batch.schema.get_field_index("comm")
    return batch.set_column(at, "comm", pc.dictionary_encode(batch.column(at)))


@pytest.mark.parametrize("as_codes", [False, True])
def test_cells_count_completed_bios_with_their_observer_and_unknown_comms(
    as_codes: bool,
) -> None:
    """Fed bios as the pass writes them: a bio that never completed counts nowhere, one
    without a comm is process '?', and the capture's own tools (is_observer) are counted
    apart, by name, when the rows carry no observer column; the same whether comm comes as
    strings or as codes into names (the pass's rows)."""
    con = duckdb.connect()
    con.execute("CREATE SCHEMA internal")
    con.execute(
        "CREATE TABLE bios AS SELECT 8::INTEGER AS dev_major, 0::INTEGER AS dev_minor, * "
        "FROM (VALUES ('fio', 100::BIGINT, 10::BIGINT, 20::BIGINT, false), "
        "(NULL, 200, 30, 40, false), ('bpftrace', 300, 10, 20, false), "
        "('fio', NULL, NULL, NULL, true)) v(comm, c_time_ns, d2c_ns, q2c_ns, partial)"
    )
    con.execute(
        "CREATE TABLE events AS SELECT 8::INTEGER AS dev_major, 0::INTEGER AS dev_minor, "
        "unnest([0, 2000])::BIGINT AS time_ns"
    )
    completed = compiled.CompletedBios(con)
    for batch in compiled._batches(con, "SELECT * FROM bios"):
        completed.feed(_comm_as_codes(batch) if as_codes else batch)
    completed.store(con)
    cells = con.execute(
        f"SELECT sum(n), sum(observer_n), max(max_ns), arg_max(slowest_comm, max_ns) "
        f"FROM {compiled.CELLS} WHERE stage = 'D2C'"
    ).fetchall()
    windows = con.execute(f"SELECT ios, max_ns FROM {COMPILED_SPIKE_WINDOWS}")
    assert cells == [(3, 1, 30, "?")]
    assert windows.fetchall() == [(3, 40)]
