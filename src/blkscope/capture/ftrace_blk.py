"""Block events from the ftrace blk tracer (binary, mono clock) when blktrace cannot run."""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO

from blkscope.capture.pipe import PipeReader
from blkscope.capture.tracefs import (
    TracefsJournal,
    device_enable_path,
    read_setting,
    write_setting,
)
from blkscope.errors import CaptureError

SAVED_CMDLINES = 8192
TOTAL_BUFFER_CAP_KB = 1 << 20  # all CPUs together: 1 GiB at most


def per_cpu_buffer_kb(requested_kb: int, cpus: int) -> int:
    """The per-CPU ring size: as requested, but the sum over CPUs stays under 1 GiB."""
    return max(256, min(requested_kb, TOTAL_BUFFER_CAP_KB // max(1, cpus)))


def blk_tracer_unusable(root: Path, devices: list[str]) -> str | None:
    """Why the ftrace blk tracer cannot trace these devices here, or None when it can."""
    tracers = root / "available_tracers"
    if not tracers.exists() or "blk" not in tracers.read_text().split():
        return "the kernel has no blk tracer (CONFIG_BLK_DEV_IO_TRACE)"
    for dev in devices:
        if not device_enable_path(dev).exists():
            return f"{device_enable_path(dev)} is missing"
    return None


class FtraceBlkSession:
    """Turns the blk tracer on for some devices, streams its binary records to raw.bin."""

    def __init__(
        self, root: Path, journal: TracefsJournal, devices: list[str], raw: Path, buffer_kb: int
    ) -> None:
        self.root = root
        self.journal = journal
        self.devices = devices
        self.raw = raw
        self.buffer_kb = buffer_kb
        self._out: BinaryIO | None = None
        self._reader: PipeReader | None = None
        self.started = False  # stays False when tracefs was busy: then stop() touches nothing

    def check_free(self) -> None:
        """Refuse to share tracefs with another user of the global tracer or of a device."""
        tracer = read_setting(self.root / "current_tracer")
        if tracer != "nop":
            raise CaptureError(
                str(self.root / "current_tracer"),
                f"another tracer ({tracer}) is active",
                "if a `blkscope capture` was killed, `blkscope capture-restore "
                "ITS_FOLDER` puts tracefs back; else stop the other tracer first",
            )
        for dev in self.devices:
            if read_setting(device_enable_path(dev)) != "0":
                raise CaptureError(
                    str(device_enable_path(dev)),
                    "block tracing is already on for this device",
                    "is another blktrace or capture running?",
                )

    def start(self) -> None:
        """Apply the settings (each journaled first) and start reading trace_pipe."""
        j, root = self.journal, self.root
        self.check_free()
        self.started = True
        j.set(root / "tracing_on", "0")
        j.set(root / "options/bin", "0")
        j.set(root / "options/context-info", "1")  # the pid/cpu/ts header blkbin expects
        j.set(root / "trace_clock", "mono")
        j.set(root / "buffer_size_kb", str(self.buffer_kb))
        # The default ring of 128 names forgets most pids of a busy host before the end.
        if int(read_setting(root / "saved_cmdlines_size")) < SAVED_CMDLINES:
            j.set(root / "saved_cmdlines_size", str(SAVED_CMDLINES))
        for dev in self.devices:
            j.set(device_enable_path(dev), "1")
        j.set(root / "current_tracer", "blk")
        j.set(root / "options/bin", "1")
        write_setting(root / "trace", "")  # empty the ring buffer of anything older
        self._out = open(self.raw, "wb")  # noqa: SIM115 - closed in stop()
        self._reader = PipeReader(root / "trace_pipe", self._out.write)
        j.set(root / "tracing_on", "1")

    @property
    def bytes(self) -> int:
        """Bytes of binary records read so far."""
        return self._reader.bytes if self._reader else 0

    def stop(self) -> dict[str, dict[str, int]]:
        """Stop tracing, drain the pipe, return per-CPU ring-buffer stats (overruns, drops)."""
        if not self.started:
            return {}
        # Through the journal: if start() failed early, tracing_on was never saved yet.
        self.journal.set(self.root / "tracing_on", "0")
        try:
            if self._reader is not None:
                self._reader.stop()
        finally:
            if self._out is not None:
                self._out.flush()
                os.fsync(self._out.fileno())
                self._out.close()
        return ring_buffer_stats(self.root)


def ring_buffer_stats(root: Path) -> dict[str, dict[str, int]]:
    """Read per_cpu/cpuN/stats into {cpuN: {overrun, dropped events, entries, ...}}."""
    stats: dict[str, dict[str, int]] = {}
    for cpu_dir in sorted((root / "per_cpu").glob("cpu*")):
        values: dict[str, int] = {}
        for line in (cpu_dir / "stats").read_text().splitlines():
            key, _, value = line.partition(":")
            value = value.strip()
            if value.isdigit():
                values[key.strip().replace(" ", "_")] = int(value)
        stats[cpu_dir.name] = values
    return stats
