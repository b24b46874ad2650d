"""Every Arrow schema blkscope writes, declared once, each field with a doc."""

from __future__ import annotations

import pyarrow as pa

from blkscope.schemas._declare import doc_of, field, schema
from blkscope.schemas.bios import BIOS
from blkscope.schemas.distributions import DEPTH, IO_DIST, LATENCY_HIST
from blkscope.schemas.events import EVENTS
from blkscope.schemas.findings import PERIODS, SPIKES
from blkscope.schemas.ingest import BLKPARSE_SUMMARY, INGEST_ERRORS
from blkscope.schemas.iostat import IOSTAT
from blkscope.schemas.requests import REQUESTS
from blkscope.schemas.stage_stats import STAGE_STATS

SCHEMA_VERSION = 1

TABLES: dict[str, pa.Schema] = {
    "events": EVENTS,
    "blkparse_summary": BLKPARSE_SUMMARY,
    "ingest_errors": INGEST_ERRORS,
    "requests": REQUESTS,
    "bios": BIOS,
    "stage_stats": STAGE_STATS,
    "iostat": IOSTAT,
    "latency_hist": LATENCY_HIST,
    "depth": DEPTH,
    "io_dist": IO_DIST,
    "spikes": SPIKES,
    "periods": PERIODS,
}

__all__ = [
    "BIOS",
    "BLKPARSE_SUMMARY",
    "DEPTH",
    "EVENTS",
    "INGEST_ERRORS",
    "IOSTAT",
    "IO_DIST",
    "LATENCY_HIST",
    "PERIODS",
    "REQUESTS",
    "SCHEMA_VERSION",
    "SPIKES",
    "STAGE_STATS",
    "TABLES",
    "doc_of",
    "field",
    "schema",
]
