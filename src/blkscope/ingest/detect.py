"""Recognise an input's format from its content (first lines), never from its file name."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from blkscope.blk_io_trace import MAGIC_BYTES_BE, MAGIC_BYTES_LE
from blkscope.errors import BlkscopeError, InputFormatError
from blkscope.ingest.sources import Source, open_source
from blkscope.ingest.tracepoints.tracepoint_text import trace_text_kind

FORMAT_NAMES: dict[str, str] = {
    "blktrace": "a blktrace per-CPU binary file",
    "blkparse": "blkparse text",
    "ftrace": "ftrace text of block events (tracefs trace: blk tracer or block:* tracepoints)",
    "trace-cmd": "trace-cmd report of block:* tracepoints",
    "perf": "perf script of block:* tracepoints",
    "iostat": "iostat -x output",
    "vmstat": "vmstat output",
    "meminfo": "/proc/meminfo samples",
    "writeback": "a writeback.bt log",
    "writeback_ns": "a monotonic writeback log (MONO_NS DEVICE PAGES REASON us)",
    "writeback_trace": "ftrace text of the writeback_start/writeback_written tracepoints",
    "biosnoop": "a bcc/libbpf-tools biosnoop log",
    "biosnoop_bt": "a bpftrace biosnoop.bt log",
    "hist_bcc": "a bcc histogram (biolatency/bitesize)",
    "hist_bpftrace": "a bpftrace histogram",
    "hist_json": "a JSON histogram (bpftrace -f json or biolatency -j)",
    "series_csv": "a time series CSV (time,value)",
}

# First match wins; each pattern is anchored on a line of the file's head, and never lets a
# space class run across lines (`^\s*` over 20,000 blank lines would cost seconds per line).
_RULES: list[tuple[str, re.Pattern[str]]] = [
    (
        "blkparse",
        re.compile(
            r"^[ \t]*\d+,\d+[ \t]+\d+[ \t]+\d+[ \t]+\d+\.\d{9}[ \t]+\d+[ \t]+[A-Za-z]{1,2}[ \t]+"
            r"[A-Z]+\b",
            re.M,
        ),
    ),
    ("iostat", re.compile(r"^avg-cpu:\s+%user|^Device:?\s+.*%util\s*$", re.M)),
    ("vmstat", re.compile(r"^procs -+memory|^[ \t]*r[ \t]+b[ \t]+swpd[ \t]+free", re.M)),
    ("writeback_ns", re.compile(r"^MONO_NS\s+DEVICE\s+PAGES\s+REASON", re.M)),
    ("writeback", re.compile(r"^TIME\s+DEVICE\s+PAGES\s+REASON", re.M)),
    # the raw writeback tracepoint text blkscope capture keeps: its first event is a writeback
    # one (block tracepoint text is told apart by trace_text_kind below)
    (
        "writeback_trace",
        re.compile(r"\A(?:#[^\n]*\n|[ \t]*\n)*[ \t]*\S[^\n]*\[\d+\] \S+[ \t]+\d+\.\d+: writeback_"),
    ),
    ("biosnoop", re.compile(r"^(?:TIME\(s\)|TIMESTAMP)\s+COMM\s+PID\s+DISK\s+T\s+SECTOR", re.M)),
    ("biosnoop_bt", re.compile(r"^TIME\(ms\)\s+DISK\s+COMM\s+PID\s+LAT\(ms\)", re.M)),
    (
        "hist_json",
        re.compile(r"""^\{(?:.*"(?:type": "hist|data": \{"@)|'ts': .*'val_type')""", re.M),
    ),
    ("hist_bcc", re.compile(r"^[ \t]*\S+[ \t]+: count[ \t]+distribution[ \t\r]*$", re.M)),
    ("hist_bpftrace", re.compile(r"^\[(?:\d+[KMGT]?, \d+[KMGT]?\)|\d+\])\s+\d+\s+\|", re.M)),
    (
        "meminfo",
        re.compile(r"^\d+(?:\.\d+)?[ \t]+\w+:[ \t]+\d+ kB|^MemTotal:[ \t]+\d+ kB", re.M),
    ),
    (
        "series_csv",
        re.compile(
            r"\A\s*[A-Za-z_][\w.()/ -]*,[A-Za-z_][\w.()/ -]*\r?\n"
            r"[-+]?\d[\d.eE+-]*,[-+]?\d",
            re.M,
        ),
    ),
]


def detect_text(head: str) -> str | None:
    """Name of the format the text's first lines are in, or None."""
    for name, pattern in _RULES:
        if pattern.search(head):
            return name
    return trace_text_kind(head)


# How much of an input recognising its format reads (decompressed).
HEAD_BYTES = 65536


def format_of(head: bytes, complete: bool) -> str | None:
    """Name of the format an input's first bytes are in, or None; `complete` when they are the
    whole input (else the last line may be cut, and only whole lines are judged)."""
    if head[:4] in (MAGIC_BYTES_LE, MAGIC_BYTES_BE):
        return "blktrace"
    if b"\x00" in head[:4096]:
        return None
    text = head.decode("utf-8", "replace")
    if not complete:
        text = text[: text.rfind("\n") + 1]
    return detect_text(text)


@dataclass
class Detected:
    """One input opened once: its format, recognised from its first bytes, and the source its
    reader continues from (those bytes come again first), so that no input is opened twice."""

    path: str
    fmt: str | None
    head: bytes  # the first HEAD_BYTES decompressed bytes (none when unreadable)
    opened: Source | None = field(default=None, repr=False)
    # False when the file could not be opened, or its plain bytes could not be read (a damaged
    # compressed stream is readable: it is judged by what it gives)
    readable: bool = True

    @property
    def source(self) -> Source:
        """The open source, for the one reader of this input (which closes it)."""
        if self.opened is None:
            raise InputFormatError(self.path, "cannot read: the file is damaged or unreadable")
        return self.opened

    def text(self, size: int = 4096) -> str:
        """The first `size` bytes as text (undecodable bytes become U+FFFD)."""
        return self.head[:size].decode("utf-8", "replace")

    def close(self) -> None:
        """Let go of the input (whether or not a reader took it: closing twice is fine)."""
        if self.opened is not None:
            self.opened.close()


def detect(path: str) -> Detected:
    """Open the input at `path` (plain or compressed) and recognise its format from its content;
    the caller reads it on from `source` or closes it."""
    try:
        source = open_source(path)
    except (BlkscopeError, OSError):  # a folder or an unreadable path has no format
        return Detected(path, None, b"", readable=False)
    try:
        head = source.sniff(HEAD_BYTES)
    except Exception:  # unreadable or damaged: not a format we know
        source.close()
        return Detected(path, None, b"", readable=source.compression != "none")
    return Detected(path, format_of(head, len(head) < HEAD_BYTES), head, source)


def detect_format(path: str) -> str | None:
    """Name of the format of the file at `path` (plain or compressed), or None if unknown."""
    found = detect(path)
    found.close()
    return found.fmt
