"""Every Arrow schema blkscope writes, declared once, each field with a doc."""

from __future__ import annotations

import pyarrow as pa

from blkscope.schemas._declare import doc_of, field, schema
from blkscope.schemas.bios import BIOS
from blkscope.schemas.blktrace import TRACE_CLOCK
from blkscope.schemas.bpf_logs import BIOSNOOP, HISTOGRAM, WRITEBACK
from blkscope.schemas.counts import BIO_COUNTS, REQUEST_COUNTS
from blkscope.schemas.distributions import (
    DEPTH,
    DEPTH_BINS,
    IO_DIST,
    LATENCY_HEATMAP,
    LATENCY_HIST,
)
from blkscope.schemas.events import EVENTS
from blkscope.schemas.file_extents import FILE_EXTENTS
from blkscope.schemas.findings import (
    BURSTS,
    EPISODES,
    PERIODOGRAM,
    PERIODS,
    SPIKES,
    WRITEBACK_VERDICT,
)
from blkscope.schemas.ingest import BLKPARSE_SUMMARY, INGEST_ERRORS, LAST_PLUGS
from blkscope.schemas.iostat import IOSTAT
from blkscope.schemas.partitions import PARTITIONS
from blkscope.schemas.requests import REQUESTS
from blkscope.schemas.series import SERIES
from blkscope.schemas.stage_stats import STAGE_STATS
from blkscope.schemas.sysstat import IOSTAT_CPU, IOSTAT_LOG, MEMINFO, VMSTAT

SCHEMA_VERSION = 2  # 2: events.cgroup, events.source, events.raw_line

TABLES: dict[str, pa.Schema] = {
    "events": EVENTS,
    "blkparse_summary": BLKPARSE_SUMMARY,
    "ingest_errors": INGEST_ERRORS,
    "trace_clock": TRACE_CLOCK,
    "last_plugs": LAST_PLUGS,
    "requests": REQUESTS,
    "bios": BIOS,
    "stage_stats": STAGE_STATS,
    "iostat": IOSTAT,
    "latency_hist": LATENCY_HIST,
    "latency_heatmap": LATENCY_HEATMAP,
    "depth": DEPTH,
    "depth_bins": DEPTH_BINS,
    "io_dist": IO_DIST,
    "bio_counts": BIO_COUNTS,
    "request_counts": REQUEST_COUNTS,
    "spikes": SPIKES,
    "periods": PERIODS,
    "episodes": EPISODES,
    "writeback_verdict": WRITEBACK_VERDICT,
    "periodogram": PERIODOGRAM,
    "bursts": BURSTS,
    "iostat_log": IOSTAT_LOG,
    "iostat_cpu": IOSTAT_CPU,
    "vmstat": VMSTAT,
    "meminfo": MEMINFO,
    "writeback": WRITEBACK,
    "biosnoop": BIOSNOOP,
    "histogram": HISTOGRAM,
    "series": SERIES,
    "partitions": PARTITIONS,
    "file_extents": FILE_EXTENTS,
}

__all__ = [
    "BIOS",
    "BIOSNOOP",
    "BIO_COUNTS",
    "BLKPARSE_SUMMARY",
    "BURSTS",
    "DEPTH",
    "DEPTH_BINS",
    "EPISODES",
    "EVENTS",
    "FILE_EXTENTS",
    "HISTOGRAM",
    "INGEST_ERRORS",
    "IOSTAT",
    "IOSTAT_CPU",
    "IOSTAT_LOG",
    "IO_DIST",
    "LAST_PLUGS",
    "LATENCY_HEATMAP",
    "LATENCY_HIST",
    "MEMINFO",
    "PARTITIONS",
    "PERIODOGRAM",
    "PERIODS",
    "REQUESTS",
    "REQUEST_COUNTS",
    "SCHEMA_VERSION",
    "SERIES",
    "SPIKES",
    "STAGE_STATS",
    "TABLES",
    "TRACE_CLOCK",
    "VMSTAT",
    "WRITEBACK",
    "WRITEBACK_VERDICT",
    "doc_of",
    "field",
    "schema",
]
