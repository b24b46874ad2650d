"""Writeback start/written events from a private tracefs instance, on the mono clock."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TextIO

from blkscope.capture.pipe import PipeReader
from blkscope.capture.tracefs import TracefsJournal, make_instance

EVENTS = ("writeback_start", "writeback_written")
HEADER = f"{'MONO_NS':<20} {'DEVICE':<8} {'PAGES':<8} {'REASON':<6} us\n"
# "  kworker/u8:0-12  [000] ...1.  952.644116: writeback_written: bdi 254:0: sb_dev 0:0
#  nr_pages=62327 ... reason=periodic ..."  (the irq-info column is optional)
LINE = re.compile(
    r"\[\d+\]\s+(?:\S+\s+)?(?P<sec>\d+)\.(?P<usec>\d{6}):\s+"
    r"(?P<event>writeback_start|writeback_written):\s+bdi (?P<bdi>\S+):\s+sb_dev"
    r".*?nr_pages=(?P<pages>-?\d+).*?reason=(?P<reason>\w+)"
)
INSTANCE_OPTIONS = {"bin": "0", "raw": "0", "hex": "0", "context-info": "1"}


class WritebackRecorder:
    """Pairs writeback_start/written per bdi and writes `MONO_NS DEVICE PAGES REASON us` lines."""

    def __init__(self, out: TextIO, raw: TextIO) -> None:
        self.out = out
        self.raw = raw
        self.started: dict[str, int] = {}
        self.written = 0
        self._tail = b""
        out.write(HEADER)

    def feed(self, data: bytes) -> None:
        """Accept a chunk of trace_pipe text (possibly ending mid-line)."""
        lines = (self._tail + data).split(b"\n")
        self._tail = lines.pop()
        for line in lines:
            self.line(line.decode(errors="replace"))

    def line(self, text: str) -> None:
        """Handle one trace line; lines of other shapes are kept in the raw file only."""
        self.raw.write(text + "\n")
        m = LINE.search(text)
        if m is None:
            return
        # The text trace prints mono time with microsecond resolution only.
        ns = int(m["sec"]) * 1_000_000_000 + int(m["usec"]) * 1000
        bdi = m["bdi"]
        if m["event"] == "writeback_start":
            self.started[bdi] = ns
            return
        start = self.started.pop(bdi, None)
        us = (ns - start) // 1000 if start is not None else 0
        pages = int(m["pages"])  # nr_pages left, whole (writeback_trace.txt has what it wrote)
        self.out.write(f"{ns:<20} {bdi:<8} {pages:<8} {m['reason']:<6} {us}\n")
        self.written += 1

    def close(self) -> None:
        """Flush a last unterminated line."""
        if self._tail:
            self.line(self._tail.decode(errors="replace"))
            self._tail = b""


class WritebackSession:
    """A tracefs instance of our own (removed at restore) with only the two writeback events."""

    def __init__(self, root: Path, journal: TracefsJournal, out_dir: Path) -> None:
        self.inst = root / "instances" / f"blkscope-wb-{os.getpid()}"
        self.journal = journal
        self.out_dir = out_dir
        self._files: list[TextIO] = []
        self._reader: PipeReader | None = None
        self.recorder: WritebackRecorder | None = None
        self.created = False  # only an instance we made is ever written to or removed

    @staticmethod
    def available(root: Path) -> bool:
        """True when the kernel has the writeback tracepoints and instances."""
        return (root / "instances").is_dir() and all(
            (root / "events" / "writeback" / e / "enable").exists() for e in EVENTS
        )

    def start(self) -> None:
        """Create the instance, enable the events on the mono clock, start reading."""
        make_instance(self.journal, self.inst, INSTANCE_OPTIONS, 256)
        self.created = True  # only an instance we made is ever written to or removed
        for event in EVENTS:
            (self.inst / "events" / "writeback" / event / "enable").write_text("1\n")
        out = open(self.out_dir / "writeback_ns.txt", "w")  # noqa: SIM115 - closed in stop()
        raw = open(self.out_dir / "writeback_trace.txt", "w")  # noqa: SIM115
        self._files = [out, raw]
        self.recorder = WritebackRecorder(out, raw)
        self._reader = PipeReader(self.inst / "trace_pipe", self.recorder.feed)
        (self.inst / "tracing_on").write_text("1\n")

    def stop(self) -> int:
        """Stop the instance, drain it, disable its events; return the writeback_written count."""
        try:
            if self.created:  # start() may have failed before creating it
                (self.inst / "tracing_on").write_text("0\n")
            if self._reader is not None:
                self._reader.stop()
            if self.created:
                for event in EVENTS:
                    (self.inst / "events" / "writeback" / event / "enable").write_text("0\n")
        finally:
            if self.recorder is not None:
                self.recorder.close()
            for fh in self._files:
                fh.close()
        return self.recorder.written if self.recorder else 0
