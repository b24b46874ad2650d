"""A plain-Python reader of the ftrace blk tracer's bin output: the oracle the tests hold the
capture's compiled converter (capture/blkbin.convert) against."""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

from blkscope.blk_io_trace import MAGIC_MASK, RECORD_STRUCT
from blkscope.capture.blkbin import CHUNK, FTRACE_HEADER, MAGIC
from blkscope.errors import InputFormatError


def iter_records(stream: BinaryIO, name: str) -> Iterator[tuple[list[int], bytes]]:
    """Yield (blk_io_trace fields, pdu) per ftrace entry; a torn tail raises InputFormatError."""
    buf = b""
    offset = 0  # file offset of buf[0], for error messages
    while True:
        chunk = stream.read(CHUNK)
        buf += chunk
        pos = 0
        need = FTRACE_HEADER.size + RECORD_STRUCT.size
        while len(buf) - pos >= need:
            rec = list(RECORD_STRUCT.unpack_from(buf, pos + FTRACE_HEADER.size))
            if rec[0] & MAGIC_MASK != MAGIC & MAGIC_MASK:
                raise InputFormatError(
                    name,
                    f"byte {offset + pos}: not a blk tracer record (magic {rec[0]:#x})",
                    "was another tracer or options/bin changed mid-capture?",
                )
            end = pos + need + rec[10]
            if end > len(buf):
                break
            yield rec, bytes(buf[pos + need : end])
            pos = end
        offset += pos
        buf = buf[pos:]
        if not chunk:
            break
    if buf:
        raise InputFormatError(
            name,
            f"byte {offset}: {len(buf)} trailing bytes are a torn record",
            "the trace pipe was cut mid-record",
        )
