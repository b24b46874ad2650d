"""What the text and binary event readers share: small integer codes -> strings (Arrow lookup
tables), and the events table built from columns by name."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pyarrow as pa

from blkscope.ingest import rwbs_bits as R
from blkscope.ingest.blkparse.event_line import OPS, render_rwbs
from blkscope.schemas import EVENTS

# RWBS code (rwbs_bits) -> the RWBS text blkparse prints
RWBS_BY_CODE = pa.array(
    [
        render_rwbs(
            OPS[(c >> R.OP_SHIFT) & R.OP_MASK],
            bool(c & R.PREFLUSH),
            bool(c & R.FUA),
            bool(c & R.READAHEAD),
            bool(c & R.SYNC),
            bool(c & R.META),
        )
        for c in range(R.CODES)
    ],
    pa.string(),
)
OP_BY_CODE = pa.array(OPS, pa.string())


def constant_strings(value: str, n: int) -> pa.StringArray:
    """n copies of one string, built from buffers, not from a Python list of n strings."""
    raw = value.encode()
    offsets = np.arange(n + 1, dtype=np.int32) * len(raw)
    data = np.frombuffer(raw * n, dtype=np.uint8) if n else np.empty(0, np.uint8)
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data))


def rwbs_columns(code: np.ndarray) -> dict[str, pa.Array]:
    """The events columns an RWBS code (rwbs_bits) stands for: the text, the op and each flag."""
    return {
        "rwbs": RWBS_BY_CODE.take(pa.array(code)),
        "op": OP_BY_CODE.take(pa.array((code >> R.OP_SHIFT) & R.OP_MASK)),
        "flush": pa.array((code & R.PREFLUSH) != 0),
        "fua": pa.array((code & R.FUA) != 0),
        "readahead": pa.array((code & R.READAHEAD) != 0),
        "sync": pa.array((code & R.SYNC) != 0),
        "meta": pa.array((code & R.META) != 0),
    }


def events_table(n: int, columns: Mapping[str, pa.Array]) -> pa.Table:
    """An events table (schemas.EVENTS) of n rows from its columns by name; a column not given
    is all null. A name the schema does not declare is a bug, not a column to drop."""
    unknown = set(columns).difference(EVENTS.names)
    if unknown:
        raise ValueError(f"not columns of events: {sorted(unknown)}")
    arrays = [columns[f.name] if f.name in columns else pa.nulls(n, f.type) for f in EVENTS]
    return pa.Table.from_arrays(arrays, schema=EVENTS)
