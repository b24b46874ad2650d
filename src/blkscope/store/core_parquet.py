"""Parquet files written by the compiled core (rust/src/ingest/parquet/): one row group per
batch, each column encoded as the caller says, the Arrow schema stored as pyarrow stores it so
that every reader gets the declared types, nullability and docs back. The events table
(ingest/events_parquet.py) and the streaming pass's tables (analyze/stream/) are written so;
the dataset's temp folder and rename keep them atomic."""

from __future__ import annotations

import base64
from collections.abc import Iterable
from pathlib import Path

import pyarrow as pa

from blkscope import _core


def arrow_key_values(schema: pa.Schema) -> list[tuple[str, bytes]]:
    """The footer's key-value metadata as pyarrow writes it: the schema serialised in Arrow's
    IPC format, base64, under ARROW:schema, then the schema's own metadata."""
    serialised = base64.b64encode(schema.serialize().to_pybytes())
    return [("ARROW:schema", serialised)] + [
        (key.decode(), value) for key, value in (schema.metadata or {}).items()
    ]


class CoreParquet:
    """A table writer (write_table, write_batch, close, is_open) over the core's Parquet file.

    dictionary, delta: the columns so encoded (the rest PLAIN; a dictionary-typed column is
    written as its dictionary and keys); statistics: the integer columns given min and max;
    compress: LZ4 where it saves a tenth (off for a file read once, soon)."""

    def __init__(
        self,
        path: Path,
        schema: pa.Schema,
        dictionary: Iterable[str] = (),
        delta: Iterable[str] = (),
        statistics: Iterable[str] = (),
        compress: bool = True,
    ) -> None:
        names = set(schema.names)
        self._file = _core.ParquetTableWriter(
            str(path),
            schema,
            [c for c in dictionary if c in names],
            [c for c in delta if c in names],
            [c for c in statistics if c in names],
            arrow_key_values(schema),
            compress,
        )
        self.schema = schema
        self.is_open = True

    @property
    def rows(self) -> int:
        """Rows written so far."""
        return int(self._file.rows)

    def write_batch(self, batch: object) -> None:
        """Append a record batch (any object exporting an Arrow struct array) of the file's
        columns, names and types, as a row group (none when it is empty); the GIL is released
        while it is encoded."""
        self._file.write(batch)

    def write_table(self, table: pa.Table) -> None:
        """Append a table of the file's schema, a row group per batch."""
        for batch in table.to_batches():
            self._file.write(batch)

    def close(self) -> None:
        """Write the footer; a second close does nothing."""
        if self.is_open:
            self.is_open = False
            self._file.close()
