"""The streaming pass's building blocks on their own: the keyed tables (open addressing over an
int64 matrix) against Python's dict, io_dist's log2 buckets against the SQL macro, and the
helper threads' hand-over of errors."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from blkscope.analyze.stream import layout as L
from blkscope.analyze.stream.events import EventCoder
from blkscope.analyze.stream.iodist import log2_bucket
from blkscope.analyze.stream.keyed import (
    EMPTY,
    new_table,
    tab_del,
    tab_find,
    tab_get,
    tab_pop,
    tab_put,
    with_room,
)
from blkscope.analyze.stream.run import device_facts
from blkscope.analyze.stream.threads import Background, Prefetch
from blkscope.analyze.views import register

# few distinct keys, so that probe runs collide, wrap around the end and get deleted from
KEYS = st.tuples(st.integers(0, 40).map(lambda s: (3 << 48) | (8 * s + 1)), st.integers(0, 2))
OPS = st.lists(
    st.tuples(st.sampled_from(["put", "get", "pop", "del"]), KEYS, st.integers(0, 10**12)),
    max_size=300,
)


@settings(max_examples=200, deadline=None)
@given(OPS)
def test_keyed_table_behaves_like_a_dict(ops: list[tuple[str, tuple[int, int], int]]) -> None:
    table = new_table(1, capacity=64)
    model: dict[tuple[int, int], int] = {}
    for op, (a, b), value in ops:
        table = with_room(table)  # what Python does between compiled calls
        if op == "put":
            tab_put(table, a, b, value)
            model[(a, b)] = value
        elif op == "get":
            assert tab_get(table, a, b, -1) == model.get((a, b), -1)
        elif op == "pop":
            assert tab_pop(table, a, b, -1) == model.pop((a, b), -1)
        else:
            tab_del(table, a, b)
            model.pop((a, b), None)
        capacity = table.shape[0] - 1
        assert table[capacity, 0] == len(model) == int((table[:capacity, 0] != EMPTY).sum())
    for (a, b), value in model.items():
        assert table[tab_find(table, a, b), 2] == value


def test_a_table_grows_and_keeps_its_keys() -> None:
    table = new_table(1, capacity=64)
    keys = np.arange(10_000, dtype=np.int64) * 4096 + 1
    for n, key in enumerate(keys.tolist()):
        table = with_room(table)
        tab_put(table, key, 0, n)
    assert table.shape[0] - 1 == 32768  # at most half full, 64 keys spare
    assert [tab_get(table, key, 0, -1) for key in keys.tolist()] == list(range(10_000))


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
    coder = EventCoder()
    dv = device_facts(con, coder)
    # the definition, counted over every event
    counted = con.execute("""
        SELECT dev_major, dev_minor,
               count(*) FILTER (action = 'D' AND (sector IS NOT NULL OR (flush AND op = 'N'))),
               count(*) FILTER (action IN ('G', 'M', 'F', 'X'))
        FROM events GROUP BY ALL ORDER BY ALL""").fetchall()
    assert len(coder.devices.pairs) == len(counted)
    for major, minor, dispatches, nodes in counted:
        i = coder.devices.pairs.index((major, minor))
        assert dv[i, L.DV_HAS_D] == int(dispatches > 0)
        assert dv[i, L.DV_NODES] == int(nodes > 0)
        assert dv[i, L.DV_Q_END] == dv[i, L.DV_D_END] == -1
