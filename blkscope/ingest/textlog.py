"""Shared helpers for the small text logs (sysstat, bpftrace, bcc, CSV): lines, exact numbers."""

from __future__ import annotations

import re
from collections.abc import Iterator

from blkscope.errors import InputFormatError, ParseError
from blkscope.ingest.sources import open_source

_DECIMAL = re.compile(r"[+-]?\d+(?:\.\d*)?|[+-]?\.\d+")
_SCALE_DIGITS = {"s": 9, "ms": 6, "us": 3, "ns": 0}
# what bpftrace and bcc print besides their records: banners, and map dumps at exit
TRACER_CHATTER = re.compile(r"Attaching \d+ probes?\.\.\.|Tracing .*|@.*")


def read_text(path: str) -> str:
    """Whole (possibly compressed) input as text; undecodable bytes become U+FFFD."""
    source = open_source(path)
    try:
        data = source.stream.read()
    except Exception as exc:  # any decompressor failure means a damaged input
        raise InputFormatError(
            path, f"{source.compression} stream is corrupt or truncated: {exc}"
        ) from None
    finally:
        source.close()
    if b"\x00" in data[:4096]:
        raise InputFormatError(path, "binary data, expected a text log")
    return data.decode("utf-8", "replace")


def numbered_lines(text: str) -> Iterator[tuple[int, str]]:
    """(1-based line number, line without newline or trailing spaces)."""
    for i, line in enumerate(text.splitlines(), start=1):
        yield i, line.rstrip()


def decimal_to_ns(text: str, unit: str) -> int | None:
    """Exact integer ns of a printed decimal in `unit` (s, ms, us, ns); None if not a number.

    Digits finer than 1 ns are dropped (truncated toward zero).
    """
    if not _DECIMAL.fullmatch(text):
        return None
    digits = _SCALE_DIGITS[unit]
    whole, _, frac = text.lstrip("+-").partition(".")
    ns = int(whole or "0") * 10**digits + int(frac[:digits].ljust(digits, "0") or "0")
    return -ns if text.startswith("-") else ns


def to_int(path: str, line_no: int, text: str, what: str) -> int:
    """An integer column value, or a ParseError naming the column."""
    try:
        return int(text)
    except ValueError:
        raise ParseError(path, line_no, f"{what}: expected an integer, got {text!r}") from None


def to_float(path: str, line_no: int, text: str, what: str) -> float:
    """A decimal column value (rates, percentages), or a ParseError naming the column."""
    try:
        return float(text.replace(",", "."))
    except ValueError:
        raise ParseError(path, line_no, f"{what}: expected a number, got {text!r}") from None


def to_ns(path: str, line_no: int, text: str, unit: str, what: str) -> int:
    """A printed decimal time or duration as exact integer ns, or a ParseError."""
    ns = decimal_to_ns(text, unit)
    if ns is None:
        raise ParseError(path, line_no, f"{what}: expected a number of {unit}, got {text!r}")
    return ns


def wrong_format(path: str, text: str, formats: tuple[str, ...], hint: str) -> InputFormatError:
    """The error for an input in none of `formats` (detect names), naming what it looks like."""
    from blkscope.ingest.detect import FORMAT_NAMES, detect_text

    expected = FORMAT_NAMES[formats[0]]
    if not text.strip():
        return InputFormatError(path, f"empty input: expected {expected}", hint=hint)
    found = detect_text(text[:65536])
    if found is not None and found not in formats:
        return InputFormatError(
            path, f"this looks like {FORMAT_NAMES[found]}, not {expected}", hint=hint
        )
    return InputFormatError(path, f"not {expected}: its header or rows were not found", hint=hint)
