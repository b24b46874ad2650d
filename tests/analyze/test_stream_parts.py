"""The streaming pass's building blocks on their own: io_dist's log2 buckets (the Rust core's)
against the SQL macro, the device facts, and the helper threads' hand-over of errors."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from blkscope._core import log2_bucket
from blkscope.analyze.stream.run import device_facts
from blkscope.analyze.stream.threads import Background, Prefetch
from blkscope.analyze.views import register


def _numbers(fail_at: int) -> Iterator[int]:
    for n in range(10):
        if n == fail_at:
            raise ValueError(f"bad batch {n}")
        yield n


def test_the_reader_thread_hands_over_its_items_and_its_error() -> None:
    ahead = Prefetch(_numbers(fail_at=-1), lambda n: n * n)
    assert list(ahead) == [n * n for n in range(10)]
    ahead.close()
    failing = Prefetch(_numbers(fail_at=3), lambda n: n)
    seen = []
    with pytest.raises(ValueError, match=r"^bad batch 3$"):
        for n in failing:
            seen.append(n)
    failing.close()
    assert seen == [0, 1, 2]


def test_the_writer_thread_raises_the_first_error_when_closed() -> None:
    done: list[int] = []

    def work(n: int) -> None:
        if n == 2:
            raise OSError("disk full")
        done.append(n)

    writer = Background(work)
    for n in range(5):
        try:
            writer.submit(n)
        except OSError:
            break
    with pytest.raises(OSError, match=r"^disk full$"):
        writer.close()
    assert done == [0, 1]


# every power of two and its neighbours, and the ends of BIGINT
EDGES = sorted({0, -1, -(2**63), 2**63 - 1} | {(1 << b) + d for b in range(63) for d in (-1, 0, 1)})


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=50))
def test_the_pass_buckets_values_like_the_log2_bucket_macro(values: list[int]) -> None:
    con = duckdb.connect()
    register(con, set(), ["buckets"])
    values = EDGES + values
    got = con.execute("SELECT list(log2_bucket(v) ORDER BY i) FROM "
                      "(SELECT unnest(?::BIGINT[]) AS v, unnest(range(?)) AS i)",
                      [values, len(values)]).fetchall()[0][0]  # fmt: skip
    assert [log2_bucket(v) for v in values] == got


EVENT = st.tuples(
    st.sampled_from([(8, 0), (253, 1), (7, 0)]),
    st.sampled_from(["Q", "G", "M", "F", "X", "D", "C", "I"]),
    st.one_of(st.none(), st.integers(0, 10**6)),
    st.booleans(),
    st.sampled_from(["R", "W", "N"]),
)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(st.lists(EVENT, max_size=40))
def test_device_facts_stop_at_the_first_event_but_say_what_counting_all_says(
    rows: list[tuple[tuple[int, int], str, int | None, bool, str]],
) -> None:
    con = duckdb.connect()
    con.execute("CREATE SCHEMA internal")
    events = pa.table({
        "dev_major": pa.array([r[0][0] for r in rows], pa.int32()),
        "dev_minor": pa.array([r[0][1] for r in rows], pa.int32()),
        "time_ns": pa.array(range(len(rows)), pa.int64()),
        "action": pa.array([r[1] for r in rows], pa.string()),
        "sector": pa.array([r[2] for r in rows], pa.int64()),
        "flush": pa.array([r[3] for r in rows], pa.bool_()),
        "op": pa.array([r[4] for r in rows], pa.string()),
    })  # fmt: skip
    con.register("events", events)
    facts = device_facts(con)
    # the definition, counted over every event
    counted = con.execute("""
        SELECT dev_major, dev_minor,
               count(*) FILTER (action = 'D' AND (sector IS NOT NULL OR (flush AND op = 'N'))),
               count(*) FILTER (action IN ('G', 'M', 'F', 'X'))
        FROM events GROUP BY ALL ORDER BY ALL""").fetchall()
    assert facts == [(major, minor, d > 0, n > 0) for major, minor, d, n in counted]
