"""Read blktrace per-CPU binary files: find their records (blkscope._core), name the inputs."""

from __future__ import annotations

import functools
import glob
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from blkscope import _core
from blkscope.blk_io_trace import MAGIC_BYTES_BE, MAGIC_BYTES_LE, RECORD, RECORD_BYTES
from blkscope.errors import InputFormatError
from blkscope.ingest.sources import Input, close_inputs, open_source, opened, path_of


@dataclass
class RecordFile:
    """One per-CPU file: its bytes, where each record starts, and where it came from."""

    path: str
    blob: bytes
    offsets: np.ndarray
    compression: str
    raw_bytes: int
    sha256: str

    @property
    def data(self) -> np.ndarray:
        """The file's bytes as a numpy array (no copy)."""
        return np.frombuffer(self.blob, dtype=np.uint8)

    @functools.cached_property
    def records(self) -> np.ndarray:
        """The fixed part of every record as a structured array (for tools and tests), gathered
        64 k records at a time: one index per byte of all of them would take 384 bytes each."""
        out = np.empty(len(self.offsets), RECORD)
        raw = out.view(np.uint8).reshape(-1, RECORD_BYTES)
        for start in range(0, len(self.offsets), 1 << 16):
            at = self.offsets[start : start + (1 << 16)]
            raw[start : start + len(at)] = self.data[at[:, None] + np.arange(RECORD_BYTES)]
        return out

    def pdu(self, i: int) -> bytes:
        """Payload bytes of record i."""
        start = int(self.offsets[i]) + RECORD_BYTES
        return self.blob[start : start + int(self.records["pdu_len"][i])]


# What to try, by the kind of problem the compiled reader found (blkscope._core.RecordsError).
_HINTS = {
    "big-endian": "run blkparse on the machine type that recorded it and ingest its text output",
    "bad-magic": "pass the per-CPU files NAME.blktrace.N that blktrace wrote",
    "bad-version": None,
    "truncated": "copy the file again, or cut it at a record boundary",
    "out-of-range": "the file is damaged there; blkparse would print a wrong number",
}


def records_error(paths: Sequence[str], exc: _core.RecordsError) -> InputFormatError:
    """The InputFormatError of a problem the compiled reader found in paths[index]."""
    kind, index, message = exc.args
    return InputFormatError(paths[index], message, hint=_HINTS[kind])


def read_records(given: Input) -> RecordFile:
    """Load one per-CPU blktrace file (plain or compressed) and find its records."""
    source = opened(given)
    path = source.path
    try:
        try:
            blob = source.stream.read()
        except Exception as exc:  # any decompressor failure means a damaged input
            raise InputFormatError(
                path, f"{source.compression} stream is corrupt or truncated: {exc}"
            ) from None
        if len(blob) == 0:
            raise InputFormatError(
                path,
                "empty blktrace file (no records)",
                hint="was the trace stopped before any IO happened?",
            )
        try:
            offsets = pa.record_batch(_core.blktrace_record_offsets(blob)).column(0)
        except _core.RecordsError as exc:
            raise records_error([path], exc) from None
        return RecordFile(
            path,
            blob,
            offsets.to_numpy(),
            source.compression,
            source.bytes_read,
            source.sha256(),
        )
    finally:
        source.close()


_CPU_SUFFIX = re.compile(r"\.blktrace\.(\d+)(?:\.[A-Za-z0-9]+)?$")


def _opened_input(path: str) -> tuple[Input, bool]:
    """(the input, whether it is a blktrace binary): the file opened once, its first bytes
    read to tell, and kept for its reader; a damaged stream is left to the text reader to
    explain, from its path."""
    source = open_source(path)
    try:
        head = source.sniff(4)
    except Exception:  # undecodable input: let the text reader explain it
        source.close()
        return path, False
    return source, head in (MAGIC_BYTES_LE, MAGIC_BYTES_BE)


def event_inputs(inputs: Sequence[str]) -> tuple[list[Input], bool]:
    """The block-event inputs the arguments name (files, or a NAME prefix: its per-CPU files)
    and whether they are blktrace binaries. A file is opened once, here, and its reader
    continues from its source; the caller closes those (`close_inputs`)."""
    found: list[Input] = []
    text: list[Input] = []
    try:
        for path in inputs:
            if path != "-" and not os.path.exists(path):
                per_cpu = glob.glob(glob.escape(path) + ".blktrace.*")
                if not per_cpu:
                    text.append(path)
                    continue
                per_cpu.sort(key=_cpu_number)
                found += per_cpu  # opened when read
            elif path != "-" and os.path.isfile(path):
                given, binary = _opened_input(path)
                (found if binary else text).append(given)
            else:
                text.append(path)
        if found and text:
            raise InputFormatError(
                path_of(text[0]),
                f"cannot mix blkparse text with blktrace binaries ({path_of(found[0])}) in "
                "one ingest",
                hint="ingest them into separate datasets",
            )
    except BaseException:
        close_inputs(found + text)
        raise
    return (found, True) if found else (text, False)


def _cpu_number(path: str) -> tuple[int, str]:
    m = _CPU_SUFFIX.search(path)
    return (int(m.group(1)) if m else -1, path)
