"""Arrow columns from the pass's integer matrices, where a sentinel value marks a null."""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def nullable(values: np.ndarray, nulls: np.ndarray, typ: pa.DataType) -> pa.Array:
    """values as an Arrow array of the integer type typ, null where `nulls` is true.

    The validity bitmap is packed from the mask and the values are taken as they are: Arrow
    never reads a value under a null, so nothing replaces the sentinels and no checked cast
    follows (np.where, pa.array with a mask and a cast cost three copies of the column; on the
    10x fio capture the requests and bios tables took ~4 CPU-s to build). A value narrowed to
    int32 must fit: the pass's int32 fields come from the events' int32 columns."""
    data = np.ascontiguousarray(values, dtype=typ.to_pandas_dtype())
    count = int(np.count_nonzero(nulls))
    validity = pa.py_buffer(np.packbits(~nulls, bitorder="little")) if count else None
    return pa.Array.from_buffers(typ, len(data), [validity, pa.py_buffer(data)], null_count=count)
