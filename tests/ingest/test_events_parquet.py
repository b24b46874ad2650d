"""The events table's Parquet file written by the compiled core (ingest/events_parquet.py):
random batches read back equal, with the declared schema, in pyarrow and DuckDB."""

from __future__ import annotations

import errno
import itertools
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from blkscope.ingest.events_parquet import DELTA, DICTIONARY, EventsParquet
from blkscope.schemas import EVENTS
from tests.parquet_checks import assert_duckdb_reads_as_pyarrows

_BOUNDS = {
    pa.int16(): (-(2**15), 2**15 - 1),
    pa.int32(): (-(2**31), 2**31 - 1),
    pa.int64(): (-(2**63), 2**63 - 1),
}


def _values(field: pa.Field) -> st.SearchStrategy[Any]:
    t = field.type
    if t in _BOUNDS:
        lo, hi = _BOUNDS[t]
        # extremes (deltas that wrap), small numbers and steady counts alike
        values: st.SearchStrategy[Any] = st.one_of(
            st.integers(lo, hi), st.integers(-3, 300), st.sampled_from([lo, hi])
        )
    elif pa.types.is_boolean(t):
        values = st.booleans()
    elif pa.types.is_string(t):
        values = st.one_of(
            st.sampled_from(["Q", "D", "C", "WS", "FWFSM", "", "kworker/u4:2", "blkparse"]),
            st.text(max_size=24),
        )
    else:
        values = st.binary(max_size=24)
    return st.one_of(st.none(), values) if field.nullable else values


@st.composite
def _tables(draw: st.DrawFn) -> pa.Table:
    rows = draw(st.integers(0, 80))  # 33 columns: more rows would exceed hypothesis's data budget
    columns = []
    for field in EVENTS:
        values = _values(field)
        kind = draw(st.sampled_from(["mixed", "constant"] + (["null"] if field.nullable else [])))
        if kind == "null":
            column = [None] * rows
        elif kind == "constant":
            column = [draw(values)] * rows
        else:
            column = draw(st.lists(values, min_size=rows, max_size=rows))
        columns.append(pa.array(column, type=field.type))
    return pa.Table.from_arrays(columns, schema=EVENTS)


def _write(path: Path, pieces: list[pa.Table]) -> None:
    writer = EventsParquet(path, EVENTS)
    for piece in pieces:
        writer.write_table(piece)
    writer.close()


@pytest.mark.slow
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(table=_tables(), cuts=st.lists(st.integers(0, 80), max_size=4), data=st.data())
def test_random_batches_read_back_equal(
    tmp_path_factory: pytest.TempPathFactory, table: pa.Table, cuts: list[int], data: Any
) -> None:
    # slices at any row: their bitmaps and offsets start mid-buffer
    bounds = sorted({0, table.num_rows, *(c for c in cuts if c < table.num_rows)})
    pieces = [table.slice(a, b - a) for a, b in itertools.pairwise(bounds)]
    path = tmp_path_factory.mktemp("events") / "events.parquet"
    _write(path, pieces)
    back = pq.read_table(path)
    assert back.schema.equals(EVENTS, check_metadata=True)
    assert back.equals(table)
    assert pq.read_metadata(path).num_row_groups == len([p for p in pieces if p.num_rows])
    if data.draw(st.booleans(), label="check with DuckDB"):
        assert_duckdb_reads_as_pyarrows(path, table)


def test_no_batches_is_an_empty_table_of_the_schema(tmp_path: Path) -> None:
    path = tmp_path / "events.parquet"
    _write(path, [])
    back = pq.read_table(path)
    assert back.num_rows == 0
    assert back.schema.equals(EVENTS, check_metadata=True)
    assert duckdb.connect().sql(f"SELECT count(*) FROM '{path}'").fetchall() == [(0,)]


def _steady_rows(n: int) -> pa.Table:
    """n events of one device, one CPU, one action, a time per nanosecond."""
    return pa.Table.from_pylist(
        [{"action": "Q", "rwbs": "W", "op": "W", "source": "blkparse", "time_ns": t,
          "line_no": t + 1, "seq": t, "dev_major": 8, "dev_minor": 0, "cpu": 0, "pid": 1,
          "flush": False, "fua": False, "readahead": False, "sync": False, "meta": False,
          "input_id": 0}
         for t in range(n)],
        schema=EVENTS,
    )  # fmt: skip


def test_encodings_are_the_declared_ones(tmp_path: Path) -> None:
    path = tmp_path / "events.parquet"
    table = _steady_rows(1000)
    _write(path, [table])
    group = pq.read_metadata(path).row_group(0)
    columns = {group.column(k).path_in_schema: group.column(k) for k in range(group.num_columns)}
    assert "RLE_DICTIONARY" in columns["action"].encodings
    # every integer delta-encoded, those that jump too: no plain values left for LZ4
    for name in ("time_ns", "pid", "cpu", "input_id"):
        assert "DELTA_BINARY_PACKED" in columns[name].encodings, name
        assert "PLAIN" not in columns[name].encodings, name
    assert set(DICTIONARY) | set(DELTA) <= set(columns)
    stats = columns["time_ns"].statistics
    assert (stats.min, stats.max, stats.null_count) == (0, 999, 0)
    # a string column's statistics are its null count only: enough to skip a row group
    # without a message, no min or max to compare strings by
    message = columns["message"].statistics
    assert (message.null_count, message.has_min_max) == (1000, False)


def test_a_batch_of_another_schema_is_refused(tmp_path: Path) -> None:
    writer = EventsParquet(tmp_path / "events.parquet", EVENTS)
    other = pa.table({"time_ns": pa.array([1], pa.int64())})
    with pytest.raises(ValueError, match="a batch of 1 columns for a file of 33"):
        writer.write_table(other)
    swapped = EVENTS.names[:]
    swapped[0], swapped[1] = swapped[1], swapped[0]
    renamed = pa.table(_steady_rows(1).columns, names=swapped)
    with pytest.raises(ValueError, match="column dev_minor where the file has dev_major"):
        writer.write_table(renamed)
    writer.close()


def test_a_folder_that_is_not_there_is_an_os_error_with_its_errno(tmp_path: Path) -> None:
    with pytest.raises(OSError) as caught:
        EventsParquet(tmp_path / "missing" / "events.parquet", EVENTS)
    assert caught.value.errno == errno.ENOENT
