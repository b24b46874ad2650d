"""The events table's Parquet file, written by the compiled core (rust/src/ingest/parquet/):
one row group per batch, the encodings below, the Arrow schema stored as pyarrow stores it so
that every reader gets the declared types, nullability and docs back. DatasetWriter's temp
folder and rename keep it atomic."""

from __future__ import annotations

import base64
from pathlib import Path

import pyarrow as pa

from blkscope import _core

# Dictionaries for the strings (a vocabulary of a few letters, process names, one source),
# deltas for the integers that grow or stay put, plain (then LZ4) for the rest; statistics
# where queries filter.
DICTIONARY = ["action", "rwbs", "op", "comm", "message", "pdu", "cgroup", "source"]
DELTA = ["time_ns", "line_no", "seq", "dev_major", "dev_minor", "input_id"]
STATISTICS = ["dev_major", "dev_minor", "time_ns", "sector", "line_no", "input_id"]


def arrow_key_values(schema: pa.Schema) -> list[tuple[str, bytes]]:
    """The footer's key-value metadata as pyarrow writes it: the schema serialised in Arrow's
    IPC format, base64, under ARROW:schema, then the schema's own metadata."""
    serialised = base64.b64encode(schema.serialize().to_pybytes())
    return [("ARROW:schema", serialised)] + [
        (key.decode(), value) for key, value in (schema.metadata or {}).items()
    ]


class EventsParquet:
    """A table writer (write_table, close, is_open) over the core's Parquet file."""

    def __init__(self, path: Path, schema: pa.Schema) -> None:
        names = set(schema.names)
        self._file = _core.ParquetTableWriter(
            str(path),
            schema,
            [c for c in DICTIONARY if c in names],
            [c for c in DELTA if c in names],
            [c for c in STATISTICS if c in names],
            arrow_key_values(schema),
        )
        self.schema = schema
        self.is_open = True

    def write_table(self, table: pa.Table) -> None:
        """Append a table of the file's schema, a row group per batch (the GIL is released
        while each is encoded)."""
        for batch in table.to_batches():
            self._file.write(batch)

    def close(self) -> None:
        """Write the footer; a second close does nothing."""
        if self.is_open:
            self.is_open = False
            self._file.close()
