"""The core's Parquet files (store/core_parquet.py) for the streaming pass's tables, and the
core's reader of them (analyze/stream/events.py): random batches of requests, bios and the Q2Q
file (strings already dictionary-encoded) read back equal, with the declared schema, in
pyarrow and DuckDB; random events read back by the core as pyarrow reads them."""

from __future__ import annotations

import collections
import itertools
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from blkscope._core import ParquetTableReader
from blkscope.analyze.stream.events import READ_SCHEMA, STRING_COLUMNS
from blkscope.analyze.stream.q2q import _WRITTEN as Q2Q_WRITTEN
from blkscope.ingest.events_parquet import EventsParquet
from blkscope.schemas import EVENTS, TABLES
from blkscope.store.core_parquet import CoreParquet
from tests.conftest import LOOP_TAIL
from tests.ingest.test_events_parquet import _tables as _events_tables
from tests.ingest.test_events_parquet import _values
from tests.parquet_checks import assert_duckdb_reads_as_pyarrows

_NAMES = ["", "Q", "WS", "kworker/u4:2", "fio", "écrit"]


@st.composite
def _column(draw: st.DrawFn, field: pa.Field, rows: int) -> pa.Array:
    kind = draw(st.sampled_from(["mixed", "constant"] + (["null"] if field.nullable else [])))
    if pa.types.is_dictionary(field.type):
        # the pass's dictionaries: every name it knows, used or not, keys into them
        names = draw(st.lists(st.sampled_from(_NAMES), min_size=1, max_size=6, unique=True))
        key = st.integers(0, len(names) - 1)
        keys: st.SearchStrategy[Any] = st.one_of(st.none(), key) if field.nullable else key
        if kind == "null":
            column = [None] * rows
        elif kind == "constant":
            column = [draw(keys)] * rows
        else:
            column = draw(st.lists(keys, min_size=rows, max_size=rows))
        return pa.DictionaryArray.from_arrays(pa.array(column, pa.int32()), pa.array(names))
    values = _values(field)
    if kind == "null":
        return pa.array([None] * rows, type=field.type)
    if kind == "constant":
        return pa.array([draw(values)] * rows, type=field.type)
    return pa.array(draw(st.lists(values, min_size=rows, max_size=rows)), type=field.type)


@st.composite
def _tables(draw: st.DrawFn, schema: pa.Schema) -> pa.Table:
    rows = draw(st.integers(0, 60))
    columns = [draw(_column(field, rows)) for field in schema]
    return pa.Table.from_arrays(columns, schema=schema)


_SCHEMAS = {"requests": TABLES["requests"], "bios": TABLES["bios"], "_bio_q2q": Q2Q_WRITTEN}


def _by_value(table: pa.Table) -> pa.Table:
    """The table with its dictionary columns as plain strings (a chunk's dictionary may hold
    names no row uses, or none when every row is null)."""
    columns = [
        c.cast(pa.string()) if pa.types.is_dictionary(c.type) else c.combine_chunks()
        for c in table.columns
    ]
    return pa.Table.from_arrays(columns, names=table.column_names)


def _pieces(table: pa.Table, cuts: list[int]) -> list[pa.Table]:
    """The table cut at any rows: their bitmaps and offsets start mid-buffer."""
    bounds = sorted({0, table.num_rows, *(c for c in cuts if c < table.num_rows)})
    return [table.slice(a, b - a) for a, b in itertools.pairwise(bounds)]


@pytest.mark.slow
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    name=st.sampled_from(sorted(_SCHEMAS)),
    cuts=st.lists(st.integers(0, 60), max_size=3),
    compress=st.booleans(),
    data=st.data(),
)
def test_the_pass_tables_read_back_equal(
    tmp_path_factory: pytest.TempPathFactory,
    name: str,
    cuts: list[int],
    compress: bool,
    data: Any,
) -> None:
    schema = _SCHEMAS[name]
    table = data.draw(_tables(schema), label="table")
    path = tmp_path_factory.mktemp("pass") / f"{name}.parquet"
    strings = [f.name for f in schema if pa.types.is_string(f.type)]
    deltas = [f.name for f in schema if f.type == pa.int64()]
    writer = CoreParquet(path, schema, strings, deltas, schema.names, compress=compress)
    for piece in _pieces(table, cuts):
        for batch in piece.to_batches() or [pa.RecordBatch.from_pylist([], schema=schema)]:
            writer.write_batch(batch)
    writer.close()
    assert writer.rows == table.num_rows
    back = pq.read_table(path)
    assert back.schema.equals(schema, check_metadata=True)
    assert _by_value(back).equals(_by_value(table))
    assert_duckdb_reads_as_pyarrows(path, table)


def test_a_key_past_its_dictionary_is_refused(tmp_path: Path) -> None:
    schema = pa.schema([pa.field("s", pa.dictionary(pa.int32(), pa.string()))])
    writer = CoreParquet(tmp_path / "t.parquet", schema)
    keys = pa.array([0, 2], pa.int32())
    bad = pa.DictionaryArray.from_arrays(keys, pa.array(["a", "b"]), safe=False)
    with pytest.raises(ValueError, match="column s: a key outside its dictionary"):
        writer.write_batch(pa.record_batch([bad], schema=schema))
    writer.close()


def _as_the_core_reads(table: pa.Table) -> pa.Table:
    """The pass's columns of an events table, strings as dictionaries compared by value."""
    columns = []
    for field in READ_SCHEMA:
        column = table.column(field.name).combine_chunks()
        if field.name in STRING_COLUMNS:
            column = column.cast(pa.string())
        columns.append(column)
    return pa.Table.from_arrays(columns, names=READ_SCHEMA.names)


@pytest.mark.slow
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(table=_events_tables(), cuts=st.lists(st.integers(0, 80), max_size=4))
def test_the_core_reads_events_back_as_written(
    tmp_path_factory: pytest.TempPathFactory, table: pa.Table, cuts: list[int]
) -> None:
    path = tmp_path_factory.mktemp("events") / "events.parquet"
    pieces = [p for p in _pieces(table, cuts) if p.num_rows]
    writer = EventsParquet(path, EVENTS)
    for piece in pieces:
        writer.write_table(piece)
    writer.close()
    reader = ParquetTableReader(str(path), READ_SCHEMA)
    assert reader.row_groups == len(pieces)
    batches = [pa.record_batch(reader.read(g)) for g in range(reader.row_groups)]
    for batch in batches:
        assert batch.schema.types == READ_SCHEMA.types
    back = pa.Table.from_batches(batches, schema=batches[0].schema) if batches else None
    expected = _as_the_core_reads(table)
    if back is None:
        assert expected.num_rows == 0
        return
    got = _as_the_core_reads(back)
    assert got.equals(expected)


def test_a_file_of_another_writer_is_left_to_pyarrow(tmp_path: Path) -> None:
    path = tmp_path / "events.parquet"
    pq.write_table(pa.Table.from_pylist([], schema=EVENTS), path)
    with pytest.raises(ValueError, match='unsupported: written by "parquet-cpp-arrow'):
        ParquetTableReader(str(path), READ_SCHEMA)


def _damaged(rng: random.Random, data: bytes) -> bytes:
    """data cut short, a few bytes changed, or a run of bytes zeroed or set to 0xFF."""
    kind = rng.randrange(3)
    if kind == 0:
        return data[: rng.randrange(len(data))]
    buf = bytearray(data)
    if kind == 1:
        for _ in range(rng.randint(1, 4)):
            buf[rng.randrange(len(buf))] = rng.randrange(256)
        return bytes(buf)
    start = rng.randrange(len(buf))
    end = min(len(buf), start + rng.randint(1, 64))
    buf[start:end] = bytes([rng.choice([0, 0xFF])]) * (end - start)
    return bytes(buf)


def test_a_damaged_file_is_refused_or_read_never_a_crash(
    ingested: dict[Path, Path], tmp_path: Path
) -> None:
    """The core reads its own files without a check of their bytes: a file cut short or
    damaged anywhere (footer, page headers, encoded values) must end in ValueError or OSError,
    which the analysis reports, never a panic or a read past a buffer."""
    events = pq.read_table(ingested[LOOP_TAIL / "blkparse.txt.zst"] / "events.parquet")
    path = tmp_path / "events.parquet"
    writer = EventsParquet(path, EVENTS)
    for piece in _pieces(events, [900, 1800, 2700]):
        writer.write_table(piece)
    writer.close()
    good = path.read_bytes()
    rng = random.Random(20261128)
    outcomes: collections.Counter[str] = collections.Counter()
    for k in range(600):
        path.write_bytes(_damaged(rng, good))
        try:
            reader = ParquetTableReader(str(path), READ_SCHEMA)
            for group in range(reader.row_groups):
                pa.record_batch(reader.read(group)).validate(full=True)
        except (ValueError, OSError) as exc:
            outcomes[str(exc).split(":")[0]] += 1
        except BaseException as exc:  # a Rust panic arrives as a BaseException
            pytest.fail(f"mutant {k}: {type(exc).__name__}: {exc}")
        else:
            outcomes["read"] += 1
    # both kinds of refusal happen; a page's bytes changed fail its checksum, while damage to
    # the footer's metadata (field docs, statistics) can still read
    assert outcomes["damaged"] > 50 and outcomes["unsupported"] > 10 and outcomes["read"] > 10
