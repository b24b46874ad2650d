"""The pass's Arrow batches under the schemas `blkscope.schemas` declares."""

from __future__ import annotations

import pyarrow as pa


def declared(rows: object, schema: pa.Schema) -> pa.RecordBatch:
    """The pass's batch (any object exporting an Arrow struct array) under a declared schema,
    with its docs, without a copy; the pass names the columns as the schema does, in its
    order."""
    batch = pa.record_batch(rows)
    if batch.schema.names != schema.names:
        raise AssertionError(f"the pass's columns {batch.schema.names} are not {schema.names}")
    return pa.RecordBatch.from_arrays(batch.columns, schema=schema)
