"""exact_quantiles (sql/macros): the percentiles of stage_stats, the spike and compare windows and
partition_io, computed per value bucket instead of holding each group's values, must equal
DuckDB's quantile_disc exactly: same ranks (ceil(n * q) - 1 for a decimal q), any values."""

from __future__ import annotations

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from blkscope.analyze.views import register

PERMILLES = [1, 500, 900, 990, 999, 1000]
INT64 = st.integers(-(2**63), 2**63 - 1)
# latencies as traces have them: many equal small values, a long tail, the odd huge one
VALUES = st.one_of(st.integers(0, 300), st.integers(0, 10**9), st.integers(-(10**6), 10**6), INT64)


def connection() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    register(con, set(), ["exact_quantiles"])
    return con


def both(con: duckdb.DuckDBPyConnection) -> tuple[list[tuple], list[tuple]]:
    wanted = ", ".join(str(p / 1000) for p in PERMILLES)
    ref = con.execute(
        f"SELECT g, quantile_disc(v, [{wanted}]) FROM t GROUP BY g ORDER BY g"
    ).fetchall()
    got = con.execute(
        f"SELECT g, list(v ORDER BY permille) FROM exact_quantiles('t', {PERMILLES}) "
        "GROUP BY g ORDER BY g"
    ).fetchall()
    return ref, got


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 3), VALUES), min_size=1, max_size=400))
def test_equals_quantile_disc_on_any_values(rows: list[tuple[int, int]]) -> None:
    con = connection()
    con.execute(
        "CREATE TABLE t AS SELECT unnest($g)::INTEGER AS g, unnest($v)::BIGINT AS v",
        {"g": [g for g, _ in rows], "v": [v for _, v in rows]},
    )
    ref, got = both(con)
    assert got == ref


def test_equals_quantile_disc_on_a_million_latencies_in_few_buckets() -> None:
    """Large groups whose wanted ranks fall in buckets of hundreds of distinct values (the second
    pass sorts them)."""
    con = connection()
    con.execute(
        "CREATE TABLE t AS SELECT {'dev': i % 3, 'stage': 'D2C'} AS g, "
        "(50000 + hash(i) % 20000)::BIGINT * (1 + (i % 7 = 0)::INTEGER) AS v "
        "FROM range(1000001) r(i)"
    )
    ref, got = both(con)
    assert got == ref
    assert len(got) == 3


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(st.lists(VALUES, min_size=1, max_size=300))
def test_value_buckets_are_ordered_ranges_inside_log2_buckets(values: list[int]) -> None:
    """value_bucket keeps the values' order (a bucket is one range of values, what the percentile
    passes and _stage_buckets' roll-up rely on), and value_bucket_log2 of a value's bucket is the
    log2 bucket latency_hist reports for the value (floor(log2(v)), -1 for v <= 0)."""
    con = connection()
    # one statement: executemany inserts a row per statement, ~1,000x slower here
    con.execute("CREATE TABLE t AS SELECT unnest(?::BIGINT[]) AS v", [values])
    # the buckets in a table first, as _latency_hist_build reads them: macros expand as text, and
    # value_bucket_log2(value_bucket(v)) is an expression thousands of nodes long to plan
    con.execute("CREATE TABLE b AS SELECT v, value_bucket(v) AS b FROM t")
    got = con.execute("SELECT v, b, value_bucket_log2(b) FROM b ORDER BY v").fetchall()
    buckets = [b for _, b, _ in got]
    assert buckets == sorted(buckets)
    for v, _, log2_bucket in got:
        assert log2_bucket == (-1 if v <= 0 else v.bit_length() - 1)


# the definition value_bucket had until the CASE went (the same buckets, 3x slower)
MIRRORED_BY_CASE = (
    "CASE WHEN v < 0 THEN -1 - magnitude_bucket(-(v + 1)) ELSE magnitude_bucket(v) END"
)
POWERS = [s * ((1 << b) + d) for b in range(63) for d in (-1, 0, 1) for s in (1, -1)]


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(st.lists(VALUES, max_size=300))
def test_value_bucket_mirrors_negative_values_by_xor_as_the_case_did(values: list[int]) -> None:
    con = connection()
    edges = [v for v in POWERS if -(2**63) <= v < 2**63] + [-(2**63), 2**63 - 1, 0, -1]
    con.execute("CREATE TABLE t AS SELECT unnest(?::BIGINT[]) AS v", [edges + values])
    differ = con.execute(
        f"SELECT count(*) FILTER (value_bucket(v) <> {MIRRORED_BY_CASE}), count(*) FROM t"
    ).fetchall()
    assert differ == [(0, len(edges) + len(values))]
