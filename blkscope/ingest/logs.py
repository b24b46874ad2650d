"""One entry point for every side log: detect its format from content, parse it into tables."""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

from blkscope.errors import InputFormatError
from blkscope.ingest.biosnoop import parse_biosnoop
from blkscope.ingest.detect import FORMAT_NAMES, detect_format
from blkscope.ingest.histogram import parse_histogram
from blkscope.ingest.iostat import parse_iostat
from blkscope.ingest.procstat import parse_meminfo, parse_vmstat
from blkscope.ingest.series_csv import parse_series
from blkscope.ingest.writeback_log import parse_writeback

# detect_format name -> parser returning {table name: table}
PARSERS: dict[str, Callable[[str], dict[str, pa.Table]]] = {
    "iostat": parse_iostat,
    "vmstat": lambda p: {"vmstat": parse_vmstat(p)},
    "meminfo": lambda p: {"meminfo": parse_meminfo(p)},
    "writeback": lambda p: {"writeback": parse_writeback(p)},
    "writeback_ns": lambda p: {"writeback": parse_writeback(p)},
    "biosnoop": lambda p: {"biosnoop": parse_biosnoop(p)},
    "biosnoop_bt": lambda p: {"biosnoop": parse_biosnoop(p)},
    "hist_bcc": lambda p: {"histogram": parse_histogram(p)},
    "hist_bpftrace": lambda p: {"histogram": parse_histogram(p)},
    "hist_json": lambda p: {"histogram": parse_histogram(p)},
    "series_csv": lambda p: {"series": parse_series(p)},
}


def parse_log(path: str) -> tuple[str, dict[str, pa.Table]]:
    """Detect a side log's format and parse it; return (format name, tables by name)."""
    name = detect_format(path)
    if name is None:
        raise InputFormatError(
            path,
            "unknown format: not a log blkscope reads",
            hint="supported: " + ", ".join(FORMAT_NAMES[n] for n in PARSERS),
        )
    if name not in PARSERS:
        raise InputFormatError(
            path,
            f"this is {FORMAT_NAMES[name]}, not a side log",
            hint="ingest it with 'blkscope ingest'",
        )
    return name, PARSERS[name](path)
