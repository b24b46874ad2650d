"""Block events from the block tracepoints, when neither blktrace nor the blk tracer can run.

A private tracefs instance (removed at restore, like the writeback recorder's) with the
block:* events on trace_clock mono, filtered to the captured devices where the event names
one, streamed from its trace_pipe as ftrace text into block_events.txt; `blkscope ingest`
reads that text into the same events table (events.source = 'ftrace').
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO

from blkscope.capture.ftrace_blk import ring_buffer_stats
from blkscope.capture.pipe import PipeReader
from blkscope.capture.tracefs import TracefsJournal, make_instance
from blkscope.errors import CaptureError

EVENTS_FILE = "block_events.txt"
INSTANCE_PREFIX = "blkscope-tp-"
# buffer_head events fire per page cache buffer, millions under buffered writes, and hold no IO
SKIPPED_EVENTS = ("block_dirty_buffer", "block_touch_buffer")
INSTANCE_OPTIONS = {"bin": "0", "raw": "0", "hex": "0", "context-info": "1", "irq-info": "1"}


def available(root: Path) -> bool:
    """True when the kernel has the block tracepoints and tracefs instances."""
    return (root / "instances").is_dir() and (root / "events" / "block" / "block_rq_issue").is_dir()


def _dev_t(device: str) -> int:
    major, minor = (Path("/sys/block") / device / "dev").read_text().strip().split(":")
    return (int(major) << 20) | int(minor)


class TracepointSession:
    """The block tracepoints of some devices, as ftrace text in OUT/block_events.txt."""

    def __init__(
        self, root: Path, journal: TracefsJournal, devices: list[str], out: Path, buffer_kb: int
    ) -> None:
        self.inst = root / "instances" / f"{INSTANCE_PREFIX}{os.getpid()}"
        self.journal = journal
        self.devices = devices
        self.out = out / EVENTS_FILE
        self.buffer_kb = buffer_kb
        self.events: list[Path] = []
        self._file: BinaryIO | None = None
        self._reader: PipeReader | None = None
        self.created = False

    def start(self) -> None:
        """Create the instance, enable and filter the events, start reading its pipe."""
        if not available(self.inst.parent.parent):
            raise CaptureError(
                str(self.inst.parent.parent / "events" / "block"),
                "the kernel has no block tracepoints either",
                "the kernel needs CONFIG_BLOCK and tracefs (CONFIG_TRACING)",
            )
        make_instance(self.journal, self.inst, INSTANCE_OPTIONS, self.buffer_kb)
        self.created = True  # only an instance we made is ever written to or removed
        only = " || ".join(f"dev == {_dev_t(d)}" for d in self.devices)
        for event in sorted((self.inst / "events" / "block").iterdir()):
            if not event.is_dir() or event.name in SKIPPED_EVENTS:
                continue
            # plug and unplug name no device: they cannot be filtered, ingest places them
            if "field:dev_t dev;" in (event / "format").read_text():
                (event / "filter").write_text(only + "\n")
            (event / "enable").write_text("1\n")
            self.events.append(event)
        self._file = open(self.out, "wb")  # noqa: SIM115 - closed in stop()
        self._reader = PipeReader(self.inst / "trace_pipe", self._file.write)
        (self.inst / "tracing_on").write_text("1\n")

    @property
    def bytes(self) -> int:
        """Bytes of text read so far."""
        return self._reader.bytes if self._reader else 0

    def stop(self) -> dict[str, dict[str, int]]:
        """Stop, drain the pipe, disable the events; return the instance's ring buffer stats."""
        if not self.created:
            return {}
        try:
            (self.inst / "tracing_on").write_text("0\n")
            if self._reader is not None:
                self._reader.stop()
            for event in self.events:
                (event / "enable").write_text("0\n")
            return ring_buffer_stats(self.inst)
        finally:
            if self._file is not None:
                self._file.close()
