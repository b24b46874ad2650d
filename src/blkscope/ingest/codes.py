"""What the text and binary event readers share: the events table built from columns by name
(the compiled core, blkscope._core, makes the columns)."""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa

from blkscope.schemas import EVENTS


def events_table(n: int, columns: Mapping[str, pa.Array]) -> pa.Table:
    """An events table (schemas.EVENTS) of n rows from its columns by name; a column not given
    is all null. A name the schema does not declare is a bug, not a column to drop."""
    unknown = set(columns).difference(EVENTS.names)
    if unknown:
        raise ValueError(f"not columns of events: {sorted(unknown)}")
    arrays = [columns[f.name] if f.name in columns else pa.nulls(n, f.type) for f in EVENTS]
    return pa.Table.from_arrays(arrays, schema=EVENTS)
