"""The three ways a capture records block events, one strategy each: blktrace, the ftrace blk
tracer, or the block tracepoints. choose_block_source picks one as --method asks; each is
started and stopped once, its bytes on disk polled, and, after tracefs is restored, finished
into the files of the capture folder. Each says what capture.json records of it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from blkscope.capture.blkbin import convert, copy_cmdlines, proc_comm, read_cmdlines
from blkscope.capture.blktrace_native import BlktraceProcess
from blkscope.capture.ftrace_blk import FtraceBlkSession, blk_tracer_unusable, per_cpu_buffer_kb
from blkscope.capture.tracefs import TracefsJournal
from blkscope.capture.tracepoints import EVENTS_FILE, TracepointSession
from blkscope.errors import CaptureError

RingStats = dict[str, dict[str, int]]


class BlockSource:
    """One way of recording the block events (the base: what every source answers)."""

    name = ""  # capture.json's block_source
    label = ""  # what a warning calls it
    blktrace_unavailable: str | None = None  # why blktrace is not the source

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    @property
    def bytes(self) -> int:
        """Bytes recorded so far (--max-size stops the capture on them)."""
        raise NotImplementedError

    def facts(self) -> dict[str, Any]:
        """What capture.json says of the source once it stopped."""
        return {"block_source": self.name}

    def finish(self, out: Path, clock: tuple[int, int]) -> dict[str, Any]:
        """After tracefs is restored: make the source's files final; what capture.json says of
        them. clock is the (CLOCK_MONOTONIC, wall) pair taken at the start."""
        raise NotImplementedError


class Blktrace(BlockSource):
    """The blktrace binary, writing the per-CPU files itself."""

    name = label = "blktrace"

    def __init__(self, process: BlktraceProcess) -> None:
        self.process = process

    def start(self) -> None:
        """Nothing: whether blktrace can run is only known by running it, so
        choose_block_source started it."""

    def stop(self) -> None:
        self.process.stop()

    @property
    def bytes(self) -> int:
        return self.process.bytes

    def finish(self, out: Path, clock: tuple[int, int]) -> dict[str, Any]:
        return {"dropped_events": BlktraceProcess.dropped_in(out)}


class _RingBufferSource(BlockSource):
    """A source the kernel records into tracefs ring buffers of our own (the blk tracer or the
    tracepoints): a session to start and stop, and the buffers' loss counters kept at stop."""

    session: FtraceBlkSession | TracepointSession

    def __init__(self, buffer_kb: int, blktrace_unavailable: str) -> None:
        self.buffer_kb_per_cpu = per_cpu_buffer_kb(buffer_kb, os.cpu_count() or 1)
        self.blktrace_unavailable = blktrace_unavailable
        self.ring_buffer_stats: RingStats = {}

    def start(self) -> None:
        self.session.start()

    def stop(self) -> None:
        self.ring_buffer_stats = self.session.stop()

    @property
    def bytes(self) -> int:
        return self.session.bytes

    def facts(self) -> dict[str, Any]:
        return {
            "block_source": self.name,
            **self.choice(),
            "buffer_kb_per_cpu": self.buffer_kb_per_cpu,
            "ring_buffer_stats": self.ring_buffer_stats,
        }

    def choice(self) -> dict[str, Any]:
        """What capture.json says first of the choice: why the sources before it were not used."""
        return {"blktrace_unavailable_because": self.blktrace_unavailable}

    def losses(self) -> dict[str, int]:
        """Events the ring buffers dropped or overwrote, summed over the CPUs."""
        stats = self.ring_buffer_stats.values()
        return {
            "dropped_events": sum(s.get("dropped_events", 0) for s in stats),
            "overrun_events": sum(s.get("overrun", 0) for s in stats),
        }


class FtraceBlk(_RingBufferSource):
    """The kernel's blk tracer in binary mode, read from trace_pipe into raw.bin and converted
    into ordinary per-CPU blktrace files once tracefs is restored."""

    name, label = "ftrace-blk", "block tracer"
    session: FtraceBlkSession

    def __init__(
        self, root: Path, journal: TracefsJournal, devices: list[str], out: Path, buffer_kb: int,
        blktrace_unavailable: str, trace_name: str,
    ) -> None:  # fmt: skip
        super().__init__(buffer_kb, blktrace_unavailable)
        self.root, self.out, self.trace_name = root, out, trace_name
        self.session = FtraceBlkSession(
            root, journal, devices, out / "raw.bin", self.buffer_kb_per_cpu
        )

    def stop(self) -> None:
        super().stop()
        if self.session.started:
            copy_cmdlines(self.root, self.out / "cmdlines.txt")

    def finish(self, out: Path, clock: tuple[int, int]) -> dict[str, Any]:
        """Convert raw.bin (kept when it cannot be converted: InputFormatError)."""
        comms = read_cmdlines(out / "cmdlines.txt")
        res = convert(out / "raw.bin", out, self.trace_name, comms, clock, lookup=proc_comm)
        (out / "raw.bin").unlink()
        return {
            "lost_events": sum(res.lost.values()),
            "lost_events_by_cpu": {str(cpu): n for cpu, n in sorted(res.lost.items())},
            "pids_without_name": sorted(res.pids - res.comms.keys()),
            "block_events": res.events,
            "first_event_mono_ns": res.first_ns,
            "last_event_mono_ns": res.last_ns,
            **self.losses(),
        }


class Tracepoints(_RingBufferSource):
    """The block tracepoints in a tracefs instance of our own, as ftrace text."""

    name, label = "tracepoints", "block tracepoints"

    def __init__(
        self, root: Path, journal: TracefsJournal, devices: list[str], out: Path, buffer_kb: int,
        blktrace_unavailable: str, blk_tracer_unavailable: str,
    ) -> None:  # fmt: skip
        super().__init__(buffer_kb, blktrace_unavailable)
        self.blk_tracer_unavailable = blk_tracer_unavailable
        self.session = TracepointSession(root, journal, devices, out, self.buffer_kb_per_cpu)

    def choice(self) -> dict[str, Any]:
        """Also the clock of the text's stamps, which ingest needs to place them (the blk
        tracer's are converted with the capture's clock pair instead)."""
        return super().choice() | {
            "blk_tracer_unavailable_because": self.blk_tracer_unavailable,
            "trace_clock": "mono",
        }

    def finish(self, out: Path, clock: tuple[int, int]) -> dict[str, Any]:
        return {"block_events_file": EVENTS_FILE, **self.losses()}


def choose_block_source(
    method: str, native: BlktraceProcess, root: Path, journal: TracefsJournal,
    devices: list[str], out: Path, buffer_kb: int, trace_name: str,
) -> BlockSource:  # fmt: skip
    """The source --method asks for (auto: blktrace, else the blk tracer, else the
    tracepoints). Trying blktrace starts it: it is the one that then runs."""
    if method in ("ftrace", "tracepoints"):
        why_not = f"not tried (--method {method})"
    else:
        found = native.start()
        if found is None:
            return Blktrace(native)
        if method == "blktrace":
            raise CaptureError(
                "blktrace",
                f"blktrace failed: {found}",
                "use --method auto to fall back to the ftrace blk tracer",
            )
        why_not = found
    no_blk_tracer = blk_tracer_unusable(root, devices)
    if method == "tracepoints" or (method == "auto" and no_blk_tracer):
        blk_tracer = no_blk_tracer or "not tried (--method tracepoints)"
        return Tracepoints(root, journal, devices, out, buffer_kb, why_not, blk_tracer)
    if no_blk_tracer:
        raise CaptureError("ftrace blk tracer", no_blk_tracer, "use --method tracepoints")
    return FtraceBlk(root, journal, devices, out, buffer_kb, why_not, trace_name)
