"""Every Arrow schema blkscope writes, declared once, each field with a doc."""

from __future__ import annotations

import pyarrow as pa

from blkscope.schemas._declare import doc_of, field, schema
from blkscope.schemas.blktrace import TRACE_CLOCK
from blkscope.schemas.bpf_logs import BIOSNOOP, HISTOGRAM, WRITEBACK
from blkscope.schemas.events import EVENTS
from blkscope.schemas.ingest import BLKPARSE_SUMMARY, INGEST_ERRORS
from blkscope.schemas.series import SERIES
from blkscope.schemas.sysstat import IOSTAT, IOSTAT_CPU, MEMINFO, VMSTAT

SCHEMA_VERSION = 1

TABLES: dict[str, pa.Schema] = {
    "events": EVENTS,
    "blkparse_summary": BLKPARSE_SUMMARY,
    "ingest_errors": INGEST_ERRORS,
    "trace_clock": TRACE_CLOCK,
    "iostat": IOSTAT,
    "iostat_cpu": IOSTAT_CPU,
    "vmstat": VMSTAT,
    "meminfo": MEMINFO,
    "writeback": WRITEBACK,
    "biosnoop": BIOSNOOP,
    "histogram": HISTOGRAM,
    "series": SERIES,
}

__all__ = [
    "BLKPARSE_SUMMARY",
    "EVENTS",
    "INGEST_ERRORS",
    "SCHEMA_VERSION",
    "TABLES",
    "TRACE_CLOCK",
    "doc_of",
    "field",
    "schema",
]
