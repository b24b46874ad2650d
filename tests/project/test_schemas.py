"""Every table and field blkscope writes carries a doc."""

from __future__ import annotations

import pyarrow as pa
import pytest

from blkscope.ingest.codes import events_table, with_strings
from blkscope.schemas import EVENTS, TABLES, doc_of, field

REQUIRED_EVENT_COLUMNS = [
    "dev_major",
    "dev_minor",
    "cpu",
    "seq",
    "time_ns",
    "pid",
    "action",
    "rwbs",
    "sector",
    "nsectors",
    "comm",
    "error",
    "line_no",
]


@pytest.mark.parametrize("name", sorted(TABLES))
def test_every_field_has_a_doc(name: str) -> None:
    schema = TABLES[name]
    assert doc_of(schema), f"table {name} has no doc"
    undocumented = [f.name for f in schema if len(doc_of(f)) < 10]
    assert undocumented == []


def test_events_keeps_the_names_users_write_sql_against() -> None:
    names = TABLES["events"].names
    assert [n for n in REQUIRED_EVENT_COLUMNS if n not in names] == []
    assert TABLES["events"].field("time_ns").type == pa.int64()


def test_a_field_without_doc_cannot_be_declared() -> None:
    with pytest.raises(ValueError, match="needs a doc"):
        field("x", pa.int64(), "  ")


def test_events_table_takes_columns_by_name_and_nulls_the_rest() -> None:
    """Both event readers build the events table through codes.events_table: by column name,
    every column not given all null, a name the schema lacks refused."""
    rwbs = {"rwbs": pa.array(["WSM", "FR"]), "meta": pa.array([True, False])}
    table = events_table(2, {"cpu": pa.array([3, 4], pa.int32()), **rwbs})
    assert table.schema == EVENTS
    assert table["cpu"].to_pylist() == [3, 4]
    assert table["rwbs"].to_pylist() == ["WSM", "FR"]
    assert table["meta"].to_pylist() == [True, False]
    assert table["sector"].null_count == 2
    with pytest.raises(ValueError, match=r"not columns of events: \['cpus'\]"):
        events_table(1, {"cpus": pa.array([1], pa.int32())})


def test_events_table_keeps_codes_into_strings() -> None:
    """The text scanner hands the action, rwbs and op over as codes into their strings: the
    table keeps them so (its schema says so), and with_strings gives the declared strings."""
    action = pa.DictionaryArray.from_arrays(pa.array([1, 0, 1], pa.int32()), ["Q", "UT", "C"])
    table = events_table(3, {"action": action})
    assert table.schema.field("action").type == pa.dictionary(pa.int32(), pa.string())
    assert table.schema.field("rwbs").type == pa.string()
    assert table["action"].to_pylist() == ["UT", "Q", "UT"]
    plain = with_strings(table)
    assert plain.schema == EVENTS
    assert plain["action"].to_pylist() == ["UT", "Q", "UT"]
    assert with_strings(plain) is plain
