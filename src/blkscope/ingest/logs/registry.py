"""The parser of each side-log format (as detect_format names it), returning tables by name."""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

from blkscope.ingest.logs.biosnoop import parse_biosnoop
from blkscope.ingest.logs.histogram import parse_histogram
from blkscope.ingest.logs.iostat_log import parse_iostat
from blkscope.ingest.logs.series_csv import parse_series
from blkscope.ingest.logs.vmstat_meminfo import parse_meminfo, parse_vmstat
from blkscope.ingest.logs.writeback_log import parse_writeback, parse_writeback_trace
from blkscope.ingest.sources import Input

# detect_format name -> parser of an input (a path, or the source detection opened) returning
# {table name: table}
PARSERS: dict[str, Callable[[Input], dict[str, pa.Table]]] = {
    "iostat": parse_iostat,
    "vmstat": lambda p: {"vmstat": parse_vmstat(p)},
    "meminfo": lambda p: {"meminfo": parse_meminfo(p)},
    "writeback": lambda p: {"writeback": parse_writeback(p)},
    "writeback_ns": lambda p: {"writeback": parse_writeback(p)},
    "writeback_trace": lambda p: {"writeback": parse_writeback_trace(p)},
    "biosnoop": lambda p: {"biosnoop": parse_biosnoop(p)},
    "biosnoop_bt": lambda p: {"biosnoop": parse_biosnoop(p)},
    "hist_bcc": lambda p: {"histogram": parse_histogram(p)},
    "hist_bpftrace": lambda p: {"histogram": parse_histogram(p)},
    "hist_json": lambda p: {"histogram": parse_histogram(p)},
    "series_csv": lambda p: {"series": parse_series(p)},
}
