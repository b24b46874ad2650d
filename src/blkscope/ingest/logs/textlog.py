"""Shared helpers for the small text logs (sysstat, bpftrace, bcc, CSV): lines, exact numbers."""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from blkscope.errors import InputFormatError, ParseError
from blkscope.ingest.logs.spool import SPOOL_AFTER_BATCHES, Spool
from blkscope.ingest.logs.spool import active as spooling_active
from blkscope.ingest.sources import (
    CHUNK_BYTES,
    MAX_LINE_BYTES,
    Input,
    iter_chunks,
    line_too_long,
    opened,
    path_of,
)
from blkscope.units import MAX_DURATION_NS

# Digits of the whole part of a printed decimal: ns since the epoch need 19 (2262 is past 2^63).
MAX_DIGITS = 19
_DECIMAL = re.compile(rf"[+-]?\d{{1,{MAX_DIGITS}}}(?:\.\d*)?|[+-]?\.\d+")
_INTEGER = re.compile(rf"[+-]?\d{{1,{MAX_DIGITS}}}")
_SCALE_DIGITS = {"s": 9, "ms": 6, "us": 3, "ns": 0}
# Integer columns of the side logs hold at most this much either way: times (ns since the
# epoch reach 2^62 in 2116) must keep room for clock offsets added to them.
LIMIT = MAX_DURATION_NS
# A side log this big is not from one capture (a day of iostat -x on ten disks is ~100 MiB).
MAX_LOG_BYTES = 512 << 20
# Rows parsed before they become an Arrow batch (TableRows)
BATCH_ROWS = 1 << 16
# What format detection looks at
HEAD_CHARS = 65536
# what bpftrace and bcc print besides their records: banners, and map dumps at exit
TRACER_CHATTER = re.compile(r"Attaching \d+ probes?\.\.\.|Tracing .*|@.*")


# Blanks, newlines included: one character class, so the match needs no memory per line.
_BLANKS = re.compile(r"\s+")


def read_text(path: Input, max_bytes: int = MAX_LOG_BYTES, what: str = "a side log") -> str:
    """Whole (possibly compressed) input as text; undecodable bytes become U+FFFD.

    Lines longer than MAX_LINE_BYTES, more than max_bytes or a damaged stream are errors.
    Side logs are parsed a chunk at a time (SideLog); this is for small inputs read whole.
    """
    return "".join(_text_chunks(path, max_bytes, what))


def _text_chunks(
    given: Input, max_bytes: int = MAX_LOG_BYTES, what: str = "a side log"
) -> Iterator[str]:
    """The input as text a chunk at a time; each chunk ends on a newline (the last may not), so
    no character is cut in two. Closes the source at its end."""
    # opened here, in the generator: a parser that stops at a bad line leaves it suspended, and
    # the collector closes the file through it (it finalizes what was made first, first)
    source = opened(given)
    size = 0
    try:
        for chunk in iter_chunks(source, CHUNK_BYTES):
            if not size and b"\x00" in chunk[:4096]:
                raise InputFormatError(source.path, "binary data, expected a text log")
            size += len(chunk)
            if size > max_bytes:
                raise InputFormatError(
                    source.path,
                    f"more than {max_bytes >> 20} MiB: too big for {what}",
                    hint="cut it to the capture's time span",
                )
            yield chunk.decode("utf-8", "replace")
    finally:
        source.close()


class SideLog:
    """A side log read a chunk (4 MiB) at a time: its numbered lines as numbered_lines gives
    them, its head for format detection, and the wrong-format error. Read whole, a large log
    would be held twice (bytes and text); streamed, memory is a chunk and a batch of rows.
    """

    def __init__(self, given: Input) -> None:
        self.path = path_of(given)
        self._chunks = _text_chunks(given)
        self._read: list[str] = []  # chunks read for the head, not yet parsed
        for text in self._chunks:
            self._read.append(text)
            if sum(map(len, self._read)) >= HEAD_CHARS:
                break
        self.head = "".join(self._read)[:HEAD_CHARS]
        self._saw_text = False

    def lines(self) -> Iterator[tuple[int, str]]:
        """(line number, line) over the whole log; a run of blank lines comes as one even
        when it spans two chunks."""
        read, self._read = self._read, []
        before, after_blank = 0, False
        for text in itertools.chain(read, self._chunks):
            for line_no, line in numbered_lines(text, self.path):
                if not line:
                    if after_blank:
                        continue
                    after_blank = True
                else:
                    after_blank, self._saw_text = False, True
                yield before + line_no, line
            before += text.count("\n")

    def wrong_format(self, formats: tuple[str, ...], hint: str) -> InputFormatError:
        """wrong_format for this log: 'empty' when no line so far had text."""
        return wrong_format(self.path, self.head if self._saw_text else "", formats, hint)


class TableRows:
    """Rows of one table, made Arrow every BATCH_ROWS: the Python objects held at once stay a
    batch's worth (a row as a dict is heavy: a log of millions of rows would hold gigabytes). A
    big table spills its batches to disk when ingest spools (`spool.spooling`)."""

    def __init__(self, path: str, schema: pa.Schema) -> None:
        self.path, self.schema = path, schema
        self.rows: list[dict[str, Any]] = []
        self.batches: list[pa.Table] = []
        self.spool: Spool | None = None
        self.count = 0

    def append(self, row: dict[str, Any]) -> None:
        self.rows.append(row)
        self.count += 1
        if len(self.rows) == BATCH_ROWS:
            self._keep(to_table(self.path, self.rows, self.schema))
            self.rows = []

    def _keep(self, batch: pa.Table) -> None:
        if self.spool is None and len(self.batches) >= SPOOL_AFTER_BATCHES and spooling_active():
            self.spool = Spool(self.schema)
            for kept in self.batches:
                self.spool.write(kept)
            self.batches = []
        if self.spool is not None:
            self.spool.write(batch)
        else:
            self.batches.append(batch)

    def __len__(self) -> int:
        return self.count

    def table(self) -> pa.Table:
        last = to_table(self.path, self.rows, self.schema)
        if self.spool is not None:
            self.spool.write(last)
            return self.spool.table()
        return pa.concat_tables([*self.batches, last]) if self.batches else last


def numbered_lines(text: str, path: str = "") -> Iterator[tuple[int, str]]:
    """(1-based line number, line without newline or trailing spaces).

    Lines end at LF only (a CR before it is dropped with the trailing spaces), so numbers
    match what an editor shows; a line past MAX_LINE_BYTES is an error. A run of blank lines
    comes as one (numbered as its first): every reader skips them or ends a block at them.
    """
    start, line_no, end_of_text = 0, 0, len(text)
    while start < end_of_text:
        blanks = _BLANKS.match(text, start)
        run_end = text.rfind("\n", start, blanks.end()) + 1 if blanks else 0
        if run_end > start:  # a run of blank lines is one match: line by line it crawled
            line_no += 1
            yield line_no, ""
            line_no += text.count("\n", start, run_end) - 1
            start = run_end
            continue
        end = text.find("\n", start)
        if end < 0:
            end = end_of_text
        line_no += 1
        if end - start > MAX_LINE_BYTES:
            raise line_too_long(path, line_no)
        yield line_no, text[start:end].rstrip()
        start = end + 1


def decimal_to_ns(text: str, unit: str) -> int | None:
    """Exact integer ns of a printed decimal in `unit` (s, ms, us, ns); None if not a number
    (or its whole part has more than MAX_DIGITS digits).

    Digits finer than 1 ns are dropped (truncated toward zero).
    """
    if not _DECIMAL.fullmatch(text):
        return None
    digits = _SCALE_DIGITS[unit]
    whole, _, frac = text.lstrip("+-").partition(".")
    ns = int(whole or "0") * 10**digits + int(frac[:digits].ljust(digits, "0") or "0")
    return -ns if text.startswith("-") else ns


def to_int(path: str, line_no: int, text: str, what: str) -> int:
    """An integer column value within +-LIMIT, or a ParseError naming the column."""
    if not _INTEGER.fullmatch(text):
        digits = text.lstrip("+-")
        if digits.isascii() and digits.isdigit():
            raise ParseError(path, line_no, f"{what}: {_cut(text)} is out of range")
        raise ParseError(path, line_no, f"{what}: expected an integer, got {_cut(text)!r}")
    return within(path, line_no, int(text), what)


def within(path: str, line_no: int, value: int, what: str) -> int:
    """value, or a ParseError when it is past +-LIMIT."""
    if not -LIMIT < value < LIMIT:
        raise ParseError(path, line_no, f"{what}: {value} is out of range (|value| < 2^62)")
    return value


def to_float(path: str, line_no: int, text: str, what: str) -> float:
    """A finite decimal column value (rates, percentages), or a ParseError naming the column."""
    try:
        value = float(text.replace(",", "."))
    except ValueError:
        raise ParseError(path, line_no, f"{what}: expected a number, got {_cut(text)!r}") from None
    if not math.isfinite(value):
        raise ParseError(path, line_no, f"{what}: expected a finite number, got {_cut(text)!r}")
    return value


def to_ns(path: str, line_no: int, text: str, unit: str, what: str) -> int:
    """A printed decimal time or duration as exact integer ns within +-LIMIT, or a ParseError."""
    ns = decimal_to_ns(text, unit)
    if ns is None:
        raise ParseError(path, line_no, f"{what}: expected a number of {unit}, got {_cut(text)!r}")
    return within(path, line_no, ns, what)


def _cut(text: str) -> str:
    """A value quoted in a message: long ones shortened (a hostile one can be 1 MiB)."""
    return text if len(text) <= 40 else f"{text[:24]}... ({len(text):,} characters)"


def to_table(path: str, rows: list[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    """The parsed rows as a table of schema; a number that does not fit its column (or is past
    +-LIMIT) is a ParseError naming the row's line."""
    try:
        table = pa.Table.from_pylist(rows, schema=schema)
    except (pa.ArrowInvalid, OverflowError):
        _refuse_out_of_range(path, rows, schema)
        raise  # not a range problem: a parser bug, shown as such
    if not all(_bounded(table[f.name]) for f in schema if pa.types.is_integer(f.type)):
        _refuse_out_of_range(path, rows, schema)
    return table


def _refuse_out_of_range(path: str, rows: list[dict[str, Any]], schema: pa.Schema) -> None:
    integers = [f for f in schema if pa.types.is_integer(f.type)]
    for row in rows:
        for f in integers:
            value = row.get(f.name)
            largest = min(LIMIT - 1, (1 << (f.type.bit_width - 1)) - 1)
            if value is not None and not -largest <= value <= largest:
                raise ParseError(
                    path,
                    row.get("line_no", 0),
                    f"{f.name} {_cut(str(value))} is out of range (largest {largest:,})",
                )


def _bounded(column: pa.ChunkedArray) -> bool:
    if column.null_count == len(column):
        return True
    low, high = pc.min_max(column).values()
    return low.as_py() > -LIMIT and high.as_py() < LIMIT


def wrong_format(path: str, text: str, formats: tuple[str, ...], hint: str) -> InputFormatError:
    """The error for an input in none of `formats` (detect names), naming what it looks like."""
    from blkscope.ingest.detect import FORMAT_NAMES, detect_text

    expected = FORMAT_NAMES[formats[0]]
    if not text.strip():
        return InputFormatError(path, f"empty input: expected {expected}", hint=hint)
    found = detect_text(text[:HEAD_CHARS])
    if found is not None and found not in formats:
        return InputFormatError(
            path, f"this looks like {FORMAT_NAMES[found]}, not {expected}", hint=hint
        )
    return InputFormatError(path, f"not {expected}: its header or rows were not found", hint=hint)
