"""Every table and field blkscope writes carries a doc."""

from __future__ import annotations

import pyarrow as pa
import pytest

from blkscope.schemas import TABLES, doc_of, field

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
