"""Datasets kept in memory, so that most fuzz inputs go through the whole ingest without the
cost of Parquet files, writer threads, a lock and a commit (those run for a share of inputs).

`MemoryDataset` has the part of `DatasetWriter`'s API the ingest uses; each table written to
it is checked as Parquet would check it (its declared schema, valid Arrow data) and the
manifest as `commit` writes it (JSON, UTF-8), so no failure the real writer would raise is
hidden.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any

import pyarrow as pa

from blkscope.ingest import block_events, folder

# The modules whose `DatasetWriter` the ingest entry points open.
_WRITER_USERS = (block_events, folder)


def _as_stored(schema: pa.Schema) -> pa.Schema:
    """The schema a table is stored under: a string column given as codes into strings (the
    text scanner's action, rwbs and op) is stored as the strings by the core's writer."""
    fields = [
        f.with_type(f.type.value_type)
        if pa.types.is_dictionary(f.type) and pa.types.is_string(f.type.value_type)
        else f
        for f in schema
    ]
    return pa.schema(fields, metadata=schema.metadata)


class MemorySink:
    """One table: counts rows and checks each batch as the Parquet writer would."""

    def __init__(self, schema: pa.Schema) -> None:
        self.schema = schema
        self.rows = 0

    def write(self, table: pa.Table) -> None:
        if not table.num_rows:
            return
        if not _as_stored(table.schema).equals(self.schema):
            raise ValueError(
                f"Table schema does not match schema used to create file:\n{table.schema}"
            )
        table.validate(full=True)
        self.rows += table.num_rows


class MemoryDataset:
    """A stand-in for `DatasetWriter(out)` that writes nothing."""

    def __init__(self, out: Path, keep: bool = False) -> None:
        self.out = out
        self.sinks: dict[str, MemorySink] = {}
        # the new version's folder: ingest spills big side-log tables there (ingest/logs/spool.py)
        self.tmp = Path(tempfile.mkdtemp(prefix="blkscope-fuzz-version-"))

    def __enter__(self) -> MemoryDataset:
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)

    def table(self, name: str, schema: pa.Schema, **options: Any) -> MemorySink:
        return self.sinks.setdefault(name, MemorySink(schema))

    def commit(self, manifest: dict[str, Any]) -> None:
        tables = manifest.setdefault("tables", {})
        tables.update({n: {"file": f"{n}.parquet", "rows": s.rows} for n, s in self.sinks.items()})
        (json.dumps(manifest, indent=2) + "\n").encode("utf-8")


@contextmanager
def memory_datasets() -> Iterator[None]:
    """Within this block, the ingest entry points build their datasets in memory."""
    saved = [(m, getattr(m, "DatasetWriter")) for m in _WRITER_USERS]  # noqa: B009
    for module, _ in saved:
        setattr(module, "DatasetWriter", MemoryDataset)  # noqa: B010
    try:
        yield
    finally:
        for module, writer in saved:
            setattr(module, "DatasetWriter", writer)  # noqa: B010
