"""Open user inputs: files or stdin, plain or compressed (sniffed by magic), hashed as read."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import io
import lzma
import mmap
import os
import re
import stat
import sys
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import BinaryIO, cast

import pyarrow as pa
import zstandard

from blkscope import _core
from blkscope.blk_io_trace import MAGIC_BYTES_BE, MAGIC_BYTES_LE
from blkscope.errors import BlkscopeError, InputFormatError, ParseError, does_not_exist

CHUNK_BYTES = 4 << 20
# No tracer prints a line anywhere near this long (blkparse's longest, a SCSI command in hex, is
# a few KiB): a longer one means the file is damaged or not text, and keeping it would not bound
# memory.
MAX_LINE_BYTES = 1 << 20
# Real captures compress 4-11 fold (zstd -19 on blkparse text, blktrace binaries, biosnoop);
# past the first BUDGET_FLOOR_BYTES a stream may expand at most BUDGET_RATIO fold. A gigabyte
# of zeros in a 33 KB .zst stops here at 64 MiB instead of being read whole.
BUDGET_FLOOR_BYTES = 64 << 20
BUDGET_RATIO = 100
# What a decompressor raises on a damaged stream.
STREAM_ERRORS = (OSError, EOFError, lzma.LZMAError, zstandard.ZstdError, zlib.error)

# Each format's first bytes, as full as the format fixes them: a plain text that merely begins
# "BZh" (bzip2's three-byte magic) must stay plain, so bzip2 also needs its block size digit
# and the magic of its first block (or of its end, for an empty stream), and gzip its one
# compression method (deflate).
_MAGICS = (
    (re.compile(rb"\x1f\x8b\x08"), "gzip"),
    (re.compile(rb"\x28\xb5\x2f\xfd"), "zstd"),
    (re.compile(rb"\xfd7zXZ\x00"), "xz"),
    (re.compile(rb"BZh[1-9](?:\x31\x41\x59\x26\x53\x59|\x17\x72\x45\x38\x50\x90)"), "bzip2"),
)
_MAGIC_BYTES = 10  # the longest of them


class _HashingReader(io.RawIOBase):
    """Pass bytes through while hashing them and counting how many were read."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.sha256 = hashlib.sha256()
        self.bytes_read = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        # straight into the caller's buffer: no copy to make (files and stdin are buffered)
        n = cast(io.BufferedIOBase, self.raw).readinto(b) or 0
        self.sha256.update(memoryview(b)[:n])
        self.bytes_read += n
        return n


class _ZstdStream(io.RawIOBase):
    """Decompress concatenated zstd frames; a stream cut inside a frame is an error, not EOF.

    The decompressor is fed FEED bytes at a time: zstd expands a byte at most ~32,000 fold, so
    one call yields at most ~8 MiB even from a bomb (the budget then stops it).
    """

    FEED = 256

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.dctx = zstandard.ZstdDecompressor()
        self.dobj = self.dctx.decompressobj()
        self.input = b""
        self.input_at = 0
        self.pending = b""
        self.pending_at = 0
        self.in_frame = False

    def readable(self) -> bool:
        return True

    def _feed(self) -> bool:
        """Decompress the next piece of input into pending; False at the end of the input."""
        if self.input_at >= len(self.input):
            self.input, self.input_at = self.raw.read(1 << 20), 0
            if not self.input:
                if self.in_frame:
                    raise EOFError("input ends inside a zstd frame")
                return False
        piece = self.input[self.input_at : self.input_at + self.FEED]
        self.input_at += len(piece)
        out = []
        while piece:
            self.in_frame = True
            out.append(self.dobj.decompress(piece))
            if not self.dobj.eof:
                break
            piece = self.dobj.unused_data
            self.dobj = self.dctx.decompressobj()
            self.in_frame = False
        self.pending, self.pending_at = b"".join(out), 0
        return True

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        while self.pending_at >= len(self.pending):
            if not self._feed():
                return 0
        n = min(len(b), len(self.pending) - self.pending_at)
        b[:n] = self.pending[self.pending_at : self.pending_at + n]
        self.pending_at += n
        return n


class _Budget(io.RawIOBase):
    """Pass decompressed bytes through while they stay within the decompression budget."""

    def __init__(self, path: str, stream: BinaryIO, raw: _HashingReader) -> None:
        self.path = path
        self.stream = stream
        self.raw = raw
        self.out = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.stream.read(len(b))
        n = len(data)
        b[:n] = data
        self.out += n
        if self.out > BUDGET_FLOOR_BYTES and self.out > BUDGET_RATIO * self.raw.bytes_read:
            raise InputFormatError(
                self.path,
                f"expands more than {BUDGET_RATIO}-fold ({self.out >> 20} MiB from "
                f"{self.raw.bytes_read >> 10} KiB of compressed input): a trace compresses "
                "4-11 fold, this looks like a decompression bomb",
                hint="if the file is genuine, decompress it yourself and pass the plain file",
            )
        return n

    def close(self) -> None:
        self.stream.close()
        super().close()


class _Replay(io.BufferedIOBase):
    """A stream whose first bytes were read already (to recognise the input): they come again
    first, then the rest of the stream, so its reader starts from the beginning without a
    second open. `rest` is None when the head was the whole stream."""

    def __init__(self, head: bytes, rest: BinaryIO | None) -> None:
        self.head = head
        self.at = 0
        self.rest = rest

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        if self.closed:  # a second reader of a closed source must not see a short file
            raise ValueError("read of a closed input")
        want = -1 if size is None or size < 0 else size
        if self.at >= len(self.head):
            return self.rest.read(want) if self.rest is not None else b""
        taken = self.head[self.at :] if want < 0 else self.head[self.at : self.at + want]
        self.at += len(taken)
        if self.rest is None or len(taken) == want:
            return taken
        return taken + self.rest.read(want if want < 0 else want - len(taken))

    def read1(self, size: int = -1) -> bytes:
        return self.read(size)

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)

    def close(self) -> None:
        if self.rest is not None:
            self.rest.close()
        super().close()


@dataclass
class Source:
    """One opened input: a decompressed byte stream plus what we learn about the file."""

    path: str
    stream: BinaryIO
    compression: str
    size: int | None
    _hasher: _HashingReader = field(repr=False)

    @property
    def bytes_read(self) -> int:
        """Raw (possibly compressed) bytes consumed so far."""
        return self._hasher.bytes_read

    def sha256(self) -> str:
        """Hash of the raw input; complete once the stream has been read to its end."""
        return self._hasher.sha256.hexdigest()

    def sniff(self, size: int) -> bytes:
        """The first `size` decompressed bytes (fewer at the end of the input), which the stream
        then gives again: what recognises an input and what reads it share one open. An input
        that fits in them is read whole, and its file closed at once."""
        head = read_block(self, size)
        if len(head) < size:  # the end: nothing is left to hold the file open for
            self.stream.close()
            self._hasher.raw.close()
            self.stream = _Replay(head, None)  # type: ignore[assignment]
        else:
            self.stream = _Replay(head, self.stream)  # type: ignore[assignment]
        return head

    def close(self) -> None:
        """Close the stream and the file under it, and let go of their buffers and decompressor
        (what recognised the input may hold the closed source to the end of the command)."""
        self.stream.close()
        self._hasher.raw.close()
        self.stream = _Replay(b"", None)  # type: ignore[assignment]
        self.stream.close()


def open_source(path: str) -> Source:
    """Open a path (or '-' for stdin), detecting compression from its first bytes."""
    if path == "-":
        raw: BinaryIO = sys.stdin.buffer
        size = None
    else:
        if os.path.isdir(path):
            raise InputFormatError(
                path,
                "is a directory, expected a blkparse text file",
                hint="pass the blkparse output file inside it",
            )
        try:
            raw = open(path, "rb")  # noqa: SIM115 - closed by Source.close
        except FileNotFoundError:
            raise does_not_exist(path) from None
        except OSError as exc:
            raise InputFormatError(path, f"cannot open: {exc.strerror}") from None
        size = os.fstat(raw.fileno()).st_size
    hasher = _HashingReader(raw)
    buffered = io.BufferedReader(hasher, buffer_size=1 << 20)
    head = buffered.peek(_MAGIC_BYTES)[:_MAGIC_BYTES]
    compression = "none"
    stream: BinaryIO = buffered
    for magic, name in _MAGICS:
        if magic.match(head):
            compression = name
            break
    if compression == "gzip":
        stream = gzip.GzipFile(fileobj=buffered, mode="rb")  # type: ignore[assignment]
    elif compression == "zstd":
        stream = _ZstdStream(buffered)  # type: ignore[assignment]
    elif compression == "xz":
        stream = lzma.LZMAFile(buffered)  # type: ignore[assignment]  # noqa: SIM115
    elif compression == "bzip2":
        stream = bz2.BZ2File(buffered)  # type: ignore[assignment]
    if compression != "none":
        budget = _Budget(path, stream, hasher)
        stream = io.BufferedReader(budget, buffer_size=1 << 20)
    return Source(path, stream, compression, size, hasher)


# What a reader takes: a path it opens itself, or a source opened already (by detection, whose
# first bytes it gives again), so that each input is opened once per command.
Input = str | Source


def opened(given: Input) -> Source:
    """The source of `given`: itself, or the path opened."""
    return given if isinstance(given, Source) else open_source(given)


def path_of(given: Input) -> str:
    """The path of an input."""
    return given.path if isinstance(given, Source) else given


def close_inputs(inputs: Sequence[Input]) -> None:
    """Close the inputs opened already (their readers close them too: closing twice is fine)."""
    for given in inputs:
        if isinstance(given, Source):
            given.close()


def read_block(source: Source, size: int = -1) -> bytes:
    """Read up to size decompressed bytes (all with -1); a damaged stream is an InputFormatError."""
    try:
        return source.stream.read(size)
    except STREAM_ERRORS as exc:
        raise InputFormatError(
            source.path, f"{source.compression} stream is corrupt or truncated: {exc}"
        ) from None


# A chunk of text: bytes, or a view of a plain file mapped into memory (read where it lies).
Text = bytes | memoryview


def iter_chunks(source: Source, chunk_bytes: int = CHUNK_BYTES) -> Iterator[bytes]:
    """Yield decompressed chunks that end on a newline (the last one may not).

    A line longer than MAX_LINE_BYTES stops the reading with an error naming it.
    """
    return (bytes(chunk) for _, chunk in iter_numbered_chunks(source, chunk_bytes))


def iter_numbered_chunks(
    source: Source, chunk_bytes: int = CHUNK_BYTES
) -> Iterator[tuple[int, Text]]:
    """Like iter_chunks, each chunk with the number of its first line (from 1): counted as the
    chunks are cut, so that chunks scanned at once are numbered without a second pass. A plain
    regular file's chunks are views of it mapped into memory (no read or join copies); a
    stream's (stdin, a pipe, a compressed file) are bytes."""
    mapped = _mapped(source)
    if mapped is not None:
        return _mapped_chunks(source, mapped, chunk_bytes)
    return _streamed_chunks(source, chunk_bytes)


def as_core_text(chunk: Text) -> bytes | pa.Array:
    """A chunk as the core reads it: bytes as they are, a view as a uint8 Arrow array over the
    same memory (the core reads it where it lies)."""
    if isinstance(chunk, bytes):
        return chunk
    return pa.Array.from_buffers(pa.uint8(), len(chunk), [None, pa.py_buffer(chunk)])


def _streamed_chunks(source: Source, chunk_bytes: int) -> Iterator[tuple[int, bytes]]:
    pending: list[bytes] = []  # the pieces of a line that has not ended yet
    pending_bytes = 0
    lines = 0  # before the pending line
    while True:
        block = read_block(source, chunk_bytes)
        if not block:
            if pending:
                yield lines + 1, b"".join(pending)
            return
        cut = block.rfind(b"\n") + 1
        if cut == 0 or pending_bytes + block.find(b"\n") >= MAX_LINE_BYTES:
            pending.append(block)
            pending_bytes += len(block)
            if pending_bytes > MAX_LINE_BYTES:
                raise _too_long(source.path, lines + 1, pending[0])
            continue
        # one copy of the block at most (join takes the view as it is)
        chunk = b"".join([*pending, memoryview(block)[:cut]]) if pending else block[:cut]
        first = lines + 1
        lines += _core.count_newlines(chunk)
        rest = block[cut:]  # (none when the block ends on a newline: no empty last chunk)
        pending, pending_bytes = ([rest] if rest else []), len(rest)
        yield first, chunk


# Mapped pages this far behind the chunk being cut are given back (each chunk is scanned and
# written long before): the file's pages then do not count in the process's RSS.
_KEEP_MAPPED_CHUNKS = 4


def _mapped(source: Source) -> mmap.mmap | None:
    """The source's file mapped into memory, when it is a plain regular file that is still
    open (stdin, a pipe or a compressed stream is read as a stream)."""
    raw = source._hasher.raw
    if source.compression != "none" or source.path == "-" or raw.closed:
        return None
    try:
        info = os.fstat(raw.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size == 0:
            return None
        return mmap.mmap(raw.fileno(), info.st_size, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None


def _mapped_chunks(
    source: Source, mapped: mmap.mmap, chunk_bytes: int
) -> Iterator[tuple[int, memoryview]]:
    """iter_numbered_chunks over a mapped file: the same chunks the stream gives (blocks of
    chunk_bytes cut after their last newline), hashed as they are cut."""
    hasher = source._hasher
    hasher.sha256, hasher.bytes_read = hashlib.sha256(), 0  # (of what a sniff read: again)
    view = memoryview(mapped)
    start = 0  # of the line that has not ended yet
    block = 0  # where the next block starts
    released = 0  # pages before this were given back
    lines = 0  # before the line at start
    while True:
        if block >= len(mapped):
            mapped, view = _grown(source, mapped, view)
            if block >= len(mapped):
                break
        end = min(block + chunk_bytes, len(mapped))
        _refuse_shrunk(source, len(mapped))
        hasher.sha256.update(view[block:end])
        hasher.bytes_read = end
        newline = mapped.find(b"\n", block, end)
        if newline < 0 or newline - start >= MAX_LINE_BYTES:
            if end - start > MAX_LINE_BYTES:
                piece_end = min(end, (start // chunk_bytes + 1) * chunk_bytes)
                head = bytes(view[start : min(piece_end, start + 4096)])
                raise _too_long(source.path, lines + 1, head)
            block = end
            continue
        cut = mapped.rfind(b"\n", block, end) + 1
        chunk = view[start:cut]
        first = lines + 1
        lines += _core.count_newlines(as_core_text(chunk))
        start, block = cut, end
        behind = start - _KEEP_MAPPED_CHUNKS * chunk_bytes
        behind -= behind % mmap.PAGESIZE
        if behind > released:
            mapped.madvise(mmap.MADV_DONTNEED, released, behind - released)
            released = behind
        yield first, chunk
    if start < len(mapped):
        yield lines + 1, view[start:]


def _grown(source: Source, mapped: mmap.mmap, view: memoryview) -> tuple[mmap.mmap, memoryview]:
    """At the end of the map: the file mapped again if it grew meanwhile (a stream reads on to
    its end too), else the same map."""
    raw = source._hasher.raw
    size = os.fstat(raw.fileno()).st_size
    if size <= len(mapped):
        return mapped, view
    grown = mmap.mmap(raw.fileno(), size, access=mmap.ACCESS_READ)
    return grown, memoryview(grown)


def _refuse_shrunk(source: Source, mapped_bytes: int) -> None:
    """A mapped file cut shorter under us: stop with an error (reading its pages past the new
    end would kill the process)."""
    size = os.fstat(source._hasher.raw.fileno()).st_size
    if size < mapped_bytes:
        raise InputFormatError(
            source.path,
            f"changed while being read: {mapped_bytes:,} bytes when opened, {size:,} now",
            hint="ingest a copy that nothing writes to",
        )


def _too_long(path: str, line: int, start: bytes) -> BlkscopeError:
    if b"\x00" in start[:4096]:
        return InputFormatError(path, "binary data, expected text")
    return line_too_long(path, line)


def line_too_long(path: str, line: int) -> ParseError:
    """The error for a line past MAX_LINE_BYTES."""
    return ParseError(
        path,
        line,
        f"line longer than {MAX_LINE_BYTES >> 20} MiB: the file is damaged or not text",
        hint="cut the damaged part out (e.g. with grep -a) if the rest is good",
    )


# A side log given as the block trace: it joins a dataset beside its trace, from the folder.
_SIDE_LOG = (
    "pass the capture folder that holds it with the block trace (every side log in it joins "
    "the dataset on the trace's clock), or the block trace itself"
)
# What ingest reads as block events, for hints about an input that holds none.
_BLOCK_TRACES = (
    "blktrace per-CPU files (NAME.blktrace.N, or their NAME prefix), blkparse text, or the "
    "ftrace text of the blk tracer or the block tracepoints"
)
_GUESSES = (
    (re.compile(rb"avg-cpu:|^Device[: ]", re.M), "iostat output", _SIDE_LOG),
    (re.compile(rb"procs -+memory|^ r  b ", re.M), "vmstat output", _SIDE_LOG),
    (
        re.compile(rb"^TIME\s+DEVICE\s+PAGES\s+REASON|^Tracing writeback", re.M),
        "a writeback.bt log",
        _SIDE_LOG,
    ),
    (
        re.compile(rb"^TIME\(s\)\s+COMM|^TIME\(ms\)\s+DISK|^TIMESTAMP", re.M),
        "a biosnoop log",
        _SIDE_LOG,
    ),
    (
        re.compile(rb"^[ \t]*\S+-\d+[ \t]+\[\d{3}\] \S+ +\d+\.\d+: ", re.M),
        "ftrace text (tracefs trace)",
        f"ingest reads {_BLOCK_TRACES}",
    ),
    (re.compile(rb"^(MemTotal|Dirty):", re.M), "/proc/meminfo samples", _SIDE_LOG),
    (
        re.compile(rb"^=+ All Devices =+", re.M),
        "btt output",
        f"pass the trace btt read: {_BLOCK_TRACES}",
    ),
)


def describe_non_blkparse(path: str, head: bytes) -> InputFormatError:
    """Explain what an input that holds no blkparse events seems to be instead."""
    expected = "expected blkparse default-format text"
    if not head.strip():
        return InputFormatError(
            path,
            f"empty input: {expected}",
            hint=f"ingest reads {_BLOCK_TRACES}",
        )
    if head.startswith((MAGIC_BYTES_LE, MAGIC_BYTES_BE)):
        return InputFormatError(
            path,
            "this looks like a blktrace binary, not blkparse text",
            hint="pass the per-CPU files by their paths (NAME.blktrace.N, or the NAME prefix), "
            "not on stdin: ingest reads them itself",
        )
    if head.startswith(b"PAR1"):
        return InputFormatError(
            path,
            f"this is a Parquet file: {expected}",
            hint="pass the dataset folder to the analysis commands instead",
        )
    if b"\x00" in head[:4096]:
        return InputFormatError(
            path,
            f"binary data: {expected}",
            hint=f"ingest reads {_BLOCK_TRACES}",
        )
    for pattern, what, hint in _GUESSES:
        if pattern.search(head):
            return InputFormatError(path, f"this looks like {what}: {expected}", hint=hint)
    return InputFormatError(
        path,
        f"no blkparse event lines found: {expected}",
        hint="lines look like '  8,0    1   12 0.000012707  4321  Q  WS 1234 + 8 [dd]'",
    )
