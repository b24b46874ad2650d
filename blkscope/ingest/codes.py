"""Arrow lookup tables shared by the text and binary readers: small integer codes -> strings."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from blkscope.ingest import rwbs_bits as R
from blkscope.ingest.blkparse_line import OPS, render_rwbs

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
    """n copies of one string, built from buffers (a Python list of 4 M strings costs 0.3 s)."""
    raw = value.encode()
    offsets = np.arange(n + 1, dtype=np.int32) * len(raw)
    data = np.frombuffer(raw * n, dtype=np.uint8) if n else np.empty(0, np.uint8)
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data))
