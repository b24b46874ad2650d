"""Open user inputs: files or stdin, plain or compressed (sniffed by magic), hashed as read."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import io
import lzma
import os
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import BinaryIO

import zstandard

from blkscope.errors import InputFormatError

CHUNK_BYTES = 4 << 20

_MAGICS = (
    (b"\x1f\x8b", "gzip"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"BZh", "bzip2"),
)
BLKTRACE_MAGIC_LE = b"\x07\x74\x61\x65"
BLKTRACE_MAGIC_BE = b"\x65\x61\x74\x07"


class _HashingReader(io.RawIOBase):
    """Pass bytes through while hashing them and counting how many were read."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.sha256 = hashlib.sha256()
        self.bytes_read = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.raw.read(len(b))
        n = len(data)
        b[:n] = data
        self.sha256.update(data)
        self.bytes_read += n
        return n


class _ZstdStream(io.RawIOBase):
    """Decompress concatenated zstd frames; a stream cut inside a frame is an error, not EOF."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.dctx = zstandard.ZstdDecompressor()
        self.dobj = self.dctx.decompressobj()
        self.pending = b""
        self.in_frame = False

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        while not self.pending:
            block = self.raw.read(1 << 20)
            if not block:
                if self.in_frame:
                    raise EOFError("input ends inside a zstd frame")
                return 0
            while block:
                self.in_frame = True
                self.pending += self.dobj.decompress(block)
                if not self.dobj.eof:
                    break
                block = self.dobj.unused_data
                self.dobj = self.dctx.decompressobj()
                self.in_frame = False
        n = min(len(b), len(self.pending))
        b[:n] = self.pending[:n]
        self.pending = self.pending[n:]
        return n


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

    def close(self) -> None:
        """Close the stream and the file under it."""
        self.stream.close()
        self._hasher.raw.close()


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
        except OSError as exc:
            raise InputFormatError(path, f"cannot open: {exc.strerror}") from None
        size = os.fstat(raw.fileno()).st_size
    hasher = _HashingReader(raw)
    buffered = io.BufferedReader(hasher, buffer_size=1 << 20)
    head = buffered.peek(8)[:8]
    compression = "none"
    stream: BinaryIO = buffered
    for magic, name in _MAGICS:
        if head.startswith(magic):
            compression = name
            break
    if compression == "gzip":
        stream = gzip.GzipFile(fileobj=buffered, mode="rb")  # type: ignore[assignment]
    elif compression == "zstd":
        stream = io.BufferedReader(_ZstdStream(buffered), buffer_size=1 << 20)
    elif compression == "xz":
        stream = lzma.LZMAFile(buffered)  # type: ignore[assignment]  # noqa: SIM115
    elif compression == "bzip2":
        stream = bz2.BZ2File(buffered)  # type: ignore[assignment]
    return Source(path, stream, compression, size, hasher)


def iter_chunks(source: Source, chunk_bytes: int = CHUNK_BYTES) -> Iterator[bytes]:
    """Yield decompressed chunks that end on a newline (the last one may not)."""
    rest = b""
    while True:
        try:
            block = source.stream.read(chunk_bytes)
        except (OSError, EOFError, lzma.LZMAError, zstandard.ZstdError) as exc:
            raise InputFormatError(
                source.path, f"{source.compression} stream is corrupt or truncated: {exc}"
            ) from None
        if not block:
            if rest:
                yield rest
            return
        data = rest + block
        cut = data.rfind(b"\n") + 1
        if cut == 0:
            rest = data
            continue
        rest = data[cut:]
        yield data[:cut]


_GUESSES = (
    (
        re.compile(rb"avg-cpu:|^Device[: ]", re.M),
        "iostat output",
        "blkscope ingest takes blkparse text: run 'blkparse -i NAME -o NAME.txt' on the blktrace "
        "files",
    ),
    (re.compile(rb"procs -+memory|^ r  b ", re.M), "vmstat output", "run blkparse first"),
    (
        re.compile(rb"^TIME\s+DEVICE\s+PAGES\s+REASON|^Tracing writeback", re.M),
        "a writeback.bt log",
        "run blkparse first on the blktrace files",
    ),
    (
        re.compile(rb"^TIME\(s\)\s+COMM|^TIME\(ms\)\s+DISK|^TIMESTAMP", re.M),
        "a biosnoop log",
        "run blkparse first on the blktrace files",
    ),
    (
        re.compile(rb"^\s*\S+-\d+\s+\[\d{3}\] \S+ +\d+\.\d+: ", re.M),
        "ftrace text (tracefs trace)",
        "use blkparse on blktrace files",
    ),
    (re.compile(rb"^(MemTotal|Dirty):", re.M), "/proc/meminfo samples", "run blkparse first"),
    (re.compile(rb"^=+ All Devices =+", re.M), "btt output", "pass blkparse's text output instead"),
)


def describe_non_blkparse(path: str, head: bytes) -> InputFormatError:
    """Explain what an input that holds no blkparse events seems to be instead."""
    expected = "expected blkparse default-format text"
    if not head.strip():
        return InputFormatError(
            path,
            f"empty input: {expected}",
            hint="run 'blkparse -i NAME -o NAME.txt' on the blktrace files",
        )
    if head.startswith((BLKTRACE_MAGIC_LE, BLKTRACE_MAGIC_BE)):
        return InputFormatError(
            path,
            "this looks like a blktrace binary, not blkparse text",
            hint="run 'blkparse -i NAME -o NAME.txt' on the per-CPU files "
            "(NAME.blktrace.N) and pass the text",
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
            hint="if these are blktrace per-CPU files, run blkparse first",
        )
    for pattern, what, hint in _GUESSES:
        if pattern.search(head):
            return InputFormatError(path, f"this looks like {what}: {expected}", hint=hint)
    return InputFormatError(
        path,
        f"no blkparse event lines found: {expected}",
        hint="lines look like '  8,0    1   12 0.000012707  4321  Q  WS 1234 + 8 [dd]'",
    )
