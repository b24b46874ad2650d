"""The statistics' compiled steps (analyze/compiled.py over rust/src/stats/) against their SQL
definitions, the queries they replaced: iostat's busy periods against the window over every
request sorted by its start, and stage_stats' percentiles against quantile_disc over the long
form of every bio's latencies."""

from __future__ import annotations

import random
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from blkscope.analyze import compiled
from blkscope.analyze.views import register
from tests.analyze.test_q2q import _sample_inputs, _stream

# the busy periods as _iostat_build.sql found them (main 6e3f853), over the same requests; its
# lead() over the openers had no tie-break, which two openers at one time need (only spans that
# end before they start make them): here the order the running max met them in
WINDOW = """
WITH rq AS (SELECT * FROM internal._iostat_requests), reach AS (
    SELECT dev_major, dev_minor, busy_from_ns, max(c_time_ns) OVER (
               PARTITION BY dev_major, dev_minor ORDER BY busy_from_ns, c_time_ns
               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before
    FROM rq
), openers AS (
    SELECT dev_major, dev_minor, busy_from_ns AS lo, before FROM reach
    WHERE before IS NULL OR busy_from_ns > before
)
SELECT o.dev_major, o.dev_minor, o.lo,
       coalesce(lead(o.before) OVER (PARTITION BY o.dev_major, o.dev_minor
                                     ORDER BY o.lo, o.before NULLS FIRST), e.hi) AS hi
FROM openers o JOIN (SELECT dev_major, dev_minor, max(c_time_ns) AS hi FROM rq GROUP BY ALL) e
  USING (dev_major, dev_minor)
"""

SPAN = st.tuples(
    st.sampled_from([(8, 0), (8, 16), (259, 1)]),
    st.integers(0, 400),  # its first Q
    st.integers(-3, 60),  # its length (a few end before they start)
)


def _requests(
    con: duckdb.DuckDBPyConnection, spans: list[tuple[tuple[int, int], int, int]]
) -> None:
    """A requests table of data requests with these [Q, Q + length] spans, in this order."""
    columns = {
        "dev_major": [d[0] for d, _, _ in spans],
        "dev_minor": [d[1] for d, _, _ in spans],
        "q_time_ns": [q for _, q, _ in spans],
        "c_time_ns": [q + n for _, q, n in spans],
    }
    con.register("_spans", pa.table({k: pa.array(v, pa.int64()) for k, v in columns.items()}))
    con.execute("""
        CREATE TABLE requests AS SELECT dev_major::INTEGER AS dev_major,
            dev_minor::INTEGER AS dev_minor, 'W' AS op, 8 AS nsectors, 'data' AS kind,
            q_time_ns::BIGINT AS q_time_ns, NULL::BIGINT AS g_time_ns,
            NULL::BIGINT AS acct_start_ns, NULL::BIGINT AS first_d_time_ns,
            c_time_ns::BIGINT AS c_time_ns FROM _spans""")  # fmt: skip
    con.unregister("_spans")


@settings(max_examples=150, deadline=None)
@given(st.lists(SPAN, max_size=80), st.randoms(use_true_random=False))
def test_busy_periods_are_the_windows_islands(
    spans: list[tuple[tuple[int, int], int, int]], rnd: random.Random
) -> None:
    """In completion order cut into runs handed over in any order (the sweep), or with a span
    ending before its start (the sorted definition): the window's islands."""
    spans.sort(key=lambda s: s[1] + s[2])
    cut = sorted(rnd.sample(range(len(spans) + 1), min(3, len(spans) + 1)))
    runs = [spans[a:b] for a, b in zip([0, *cut], [*cut, len(spans)], strict=True)]
    rnd.shuffle(runs)
    con = duckdb.connect()
    _requests(con, [s for run in runs for s in run])
    register(con, set(), ["_iostat_requests"])
    got = pa.table(compiled.busy_islands(con)).to_pylist()
    expected = con.sql(WINDOW).fetchall()
    assert sorted((r["dev_major"], r["dev_minor"], r["lo"], r["hi"]) for r in got) == sorted(
        expected
    )


# stage_stats' percentiles as quantile_disc gives them over the long form of the latencies,
# at each level (a Q2Q gap counts only at its own scope's level)
QUANTILE_DISC = """
WITH m AS (
    SELECT 1 AS level_code, gid AS id, gid FROM internal._bio_groups
    UNION ALL SELECT 2, cid, gid FROM internal._bio_groups
    UNION ALL SELECT 3, oid, gid FROM internal._bio_groups
    UNION ALL SELECT 4, did, gid FROM internal._bio_groups
)
SELECT m.level_code, m.id, s.stage::INTEGER AS stage,
       quantile_disc(s.ns, [0.5, 0.9, 0.99, 0.999]) AS q
FROM internal._bio_stages s JOIN m USING (gid)
WHERE s.scope = 0 OR s.scope = m.level_code
GROUP BY ALL
"""
PICKED = """
SELECT level_code, id, stage::INTEGER AS stage, list(coalesce(p.v, h.lo) ORDER BY permille) AS q
FROM internal._stage_ranks h LEFT JOIN internal._stage_picks p
  USING (level_code, id, stage, permille)
GROUP BY ALL
"""


@pytest.mark.slow
@pytest.mark.parametrize(("name", "inputs"), _sample_inputs(), ids=lambda v: str(v)[:40])
def test_stage_percentiles_are_quantile_discs(tmp_path: Path, name: str, inputs: list[str]) -> None:
    """Every sample and both fixtures: the picker's percentiles (the bucket's lowest where it
    holds one distinct value) are quantile_disc's at every level, group and stage."""
    con = _stream(inputs, tmp_path / "ds", ("_bio_groups", "_bio_stages", "_stage_ranks"))
    compiled.store(con, compiled.PICKS, compiled.stage_picks(con, tmp_path / "ds"))
    expected = con.sql(QUANTILE_DISC).fetchall()
    assert len(expected) > 0, name
    assert sorted(con.sql(PICKED).fetchall()) == sorted(expected), name
    con.close()
