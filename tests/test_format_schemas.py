"""Every declared table documents every field, and every parser returns exactly its schema."""

from __future__ import annotations

import pyarrow as pa

from blkscope.ingest.logs.biosnoop import parse_biosnoop
from blkscope.ingest.logs.histogram import parse_histogram
from blkscope.ingest.logs.iostat_log import parse_iostat
from blkscope.ingest.logs.series_csv import parse_series
from blkscope.ingest.logs.vmstat_meminfo import parse_meminfo, parse_vmstat
from blkscope.ingest.logs.writeback_log import parse_writeback
from blkscope.schemas import TABLES, doc_of
from tests.formats_golden import DATA


def test_every_table_and_field_has_a_doc() -> None:
    for name, schema in TABLES.items():
        assert doc_of(schema), name
        assert [f.name for f in schema if not doc_of(f)] == [], name


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
