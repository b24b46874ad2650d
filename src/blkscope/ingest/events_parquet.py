"""The events table's Parquet file, written by the compiled core (store/core_parquet.py) with
the encodings below. DatasetWriter's temp folder and rename keep it atomic."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from blkscope.store.core_parquet import CoreParquet

# Dictionaries for the strings (a vocabulary of a few letters, process names, one source),
# deltas for the integers that grow or stay put, plain (then LZ4) for the rest; statistics
# where queries filter.
DICTIONARY = ["action", "rwbs", "op", "comm", "message", "pdu", "cgroup", "source"]
DELTA = ["time_ns", "line_no", "seq", "dev_major", "dev_minor", "input_id"]
STATISTICS = ["dev_major", "dev_minor", "time_ns", "sector", "line_no", "input_id"]


class EventsParquet(CoreParquet):
    """The events table's writer (write_table, close, is_open)."""

    def __init__(self, path: Path, schema: pa.Schema) -> None:
        super().__init__(path, schema, DICTIONARY, DELTA, STATISTICS)
