"""The bio latencies' bucket counts the streaming pass keeps (rust/src/pass/stages.rs) against
their definition: grouping the long form `_bio_stages` (the SQL macros bio_stage_ns and
value_bucket over the pass's Q2Q file) by finest group, scope, stage and value bucket, which is
what `_stage_buckets` did before the pass counted them."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from blkscope._core import value_bucket
from blkscope.analyze.stream.q2q import STAGE_COUNTS
from blkscope.analyze.views import register
from tests.analyze.test_q2q import _sample_inputs, _stream

# every power of two and its neighbours, and the ends of BIGINT
EDGES = sorted({0, -1, -(2**63), 2**63 - 1} | {(1 << b) + d for b in range(63) for d in (-1, 0, 1)})


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=50))
def test_the_pass_buckets_values_like_the_value_bucket_macro(values: list[int]) -> None:
    con = duckdb.connect()
    register(con, set(), ["buckets"])
    values = EDGES + [-v - 1 for v in EDGES] + values
    got = con.execute("SELECT list(value_bucket(v) ORDER BY i) FROM "
                      "(SELECT unnest(?::BIGINT[]) AS v, unnest(range(?)) AS i)",
                      [values, len(values)]).fetchall()[0][0]  # fmt: skip
    assert [value_bucket(v) for v in values] == got


# what `_stage_buckets` grouped before the pass counted (main 0ab5273)
LONG_FORM = """
SELECT gid, scope, stage, b, count(*) AS c, min(ns) AS lo, max(ns) AS hi, sum(ns) AS total
FROM internal._bio_stages GROUP BY ALL
"""
PASS = f"""
SELECT g.gid, f.scope, f.stage, f.b, f.c, f.lo, f.hi,
       f.total_hi::HUGEINT * 4294967296 + f.total_lo AS total
FROM {STAGE_COUNTS} f JOIN internal._bio_groups g USING (group_key)
"""


@pytest.mark.slow
@pytest.mark.parametrize(("name", "inputs"), _sample_inputs(), ids=lambda v: str(v)[:40])
def test_the_pass_counts_what_grouping_the_long_form_gives(
    tmp_path: Path, name: str, inputs: list[str]
) -> None:
    """Every sample and both fixtures: the same (gid, scope, stage, bucket) rows, counts,
    ranges and sums, EXCEPT ALL both ways."""
    con = _stream(inputs, tmp_path / "ds", ("_bio_groups", "_bio_stages"))
    rows = con.sql(f"SELECT count(*), sum(c) FROM ({LONG_FORM})").fetchall()[0]
    assert rows[0] > 0, name
    assert con.sql(f"SELECT count(*), sum(c) FROM ({PASS})").fetchall()[0] == rows, name
    for a, b in ((PASS, LONG_FORM), (LONG_FORM, PASS)):
        assert con.sql(f"({a}) EXCEPT ALL ({b})").fetchall() == [], name
    con.close()
