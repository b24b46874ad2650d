"""The few protocol-buffer encodings the Perfetto export writes (varints, length-delimited
fields): a message is bytes built from fields, with no generated code and no dependency. The
tests read the result back with Perfetto's own schema (perfetto_trace_pb2)."""

from __future__ import annotations

VARINT, LENGTH = 0, 2  # wire types


def varint(n: int) -> bytes:
    """Base-128 varint; a negative int64 as its 64-bit two's complement (10 bytes)."""
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def key(field: int, wire: int) -> bytes:
    """A field's tag."""
    return varint(field << 3 | wire)


def uint(field: int, n: int) -> bytes:
    """An integer field (uint64, int64, enum, bool)."""
    return key(field, VARINT) + varint(int(n))


def message(field: int, body: bytes) -> bytes:
    """An embedded message or bytes field."""
    return key(field, LENGTH) + varint(len(body)) + body


def string(field: int, text: str) -> bytes:
    """A string field, valid UTF-8 whatever the text held (bytes from another machine that
    were not UTF-8 come as backslash escapes)."""
    return message(field, text.encode("utf-8", "backslashreplace"))
