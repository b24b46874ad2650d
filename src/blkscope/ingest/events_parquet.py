"""The events table's Parquet file, written by the compiled core (store/core_parquet.py) with
the encodings below. DatasetWriter's temp folder and rename keep it atomic."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from blkscope.schemas import EVENTS
from blkscope.store.core_parquet import CoreParquet

# Dictionaries for the strings (a vocabulary of a few letters, process names, one source),
# deltas for every integer, statistics where queries filter. A delta bit-packs even values
# that jump (a pid, a sector) into fewer bytes than plain values squeezed by LZ4, and reads
# back with no LZ4 to undo.
DICTIONARY = ["action", "rwbs", "op", "comm", "message", "pdu", "cgroup", "source"]
DELTA = [field.name for field in EVENTS if pa.types.is_integer(field.type)]
# message: only its null count, so that the findings' search for throttling messages skips
# every row group without one (nearly all).
STATISTICS = ["dev_major", "dev_minor", "time_ns", "sector", "line_no", "input_id", "message"]


class EventsParquet(CoreParquet):
    """The events table's writer (write_table, close, is_open)."""

    def __init__(self, path: Path, schema: pa.Schema) -> None:
        super().__init__(path, schema, DICTIONARY, DELTA, STATISTICS)
