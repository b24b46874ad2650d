"""Every declared table documents every field, and every parser returns exactly its schema."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from blkscope.ingest.logs.biosnoop import parse_biosnoop
from blkscope.ingest.logs.histogram import parse_histogram
from blkscope.ingest.logs.iostat_log import parse_iostat
from blkscope.ingest.logs.series_csv import parse_series
from blkscope.ingest.logs.vmstat_meminfo import parse_meminfo, parse_vmstat
from blkscope.ingest.logs.writeback_log import parse_writeback
from blkscope.schemas import TABLES, doc_of
from blkscope.schemas._declare import field
from tests.ingest.formats_golden import DATA


def test_a_field_cannot_be_declared_without_a_doc() -> None:
    with pytest.raises(ValueError) as exc:
        field("time_ns", pa.int64(), "  ")
    assert str(exc.value) == "field 'time_ns' needs a doc"


def test_every_written_table_carries_its_declared_docs(mq_dataset: Path) -> None:
    """The docs reach the user: each Parquet file of a real dataset (the fixture capture,
    ingested and analysed) holds, field by field, the doc its schema declares."""
    written = sorted(mq_dataset.glob("*.parquet"))
    assert len(written) >= 20
    for path in written:
        schema = pq.read_schema(path)
        declared = TABLES[path.stem]
        assert doc_of(schema) == doc_of(declared), path.name
        got = {f.name: doc_of(f) for f in schema}
        assert got == {f.name: doc_of(f) for f in declared}, path.name
        assert all(len(doc) > 10 for doc in got.values()), path.name


def test_time_tables_carry_raw_time_and_null_t_ns() -> None:
    for name in (
        "iostat_log",
        "iostat_cpu",
        "vmstat",
        "meminfo",
        "writeback",
        "biosnoop",
        "histogram",
        "series",
    ):
        schema = TABLES[name]
        assert schema.field("time_ns").type == pa.int64(), name
        assert schema.field("t_ns").type == pa.int64(), name
        assert "capture timeline" in doc_of(schema.field("t_ns")), name


def test_parsers_return_the_declared_schemas() -> None:
    outputs = {
        "iostat_log": parse_iostat(str(DATA / "iostat_old.txt"))["iostat_log"],
        "iostat_cpu": parse_iostat(str(DATA / "iostat_old.txt"))["iostat_cpu"],
        "vmstat": parse_vmstat(str(DATA / "vmstat_t.txt")),
        "meminfo": parse_meminfo(str(DATA / "meminfo_capture.txt")),
        "writeback": parse_writeback(str(DATA / "writeback.txt")),
        "biosnoop": parse_biosnoop(str(DATA / "biosnoop_que.txt")),
        "histogram": parse_histogram(str(DATA / "bt_hist.txt")),
        "series": parse_series(str(DATA / "prober.csv")),
    }
    for name, table in outputs.items():
        assert table.schema.equals(TABLES[name]), name
        assert table.column("t_ns").null_count == table.num_rows, name
