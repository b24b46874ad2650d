"""What a capture may take from the production box, said before it starts, and what it could
not record, said when it ends."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from blkscope.capture.ftrace_blk import per_cpu_buffer_kb

WRITEBACK_BUFFER_KB = 256  # the writeback instance's ring per CPU (capture/writeback.py)
BLKTRACE_SUBBUFS = 4  # blktrace -n (capture/blktrace_native.py)


def disk_cap_mib(out: Path, max_size_mib: int) -> int:
    """The block trace's cap on disk: --max-size, or 90% of the free space when that is less
    (a full disk would lose the end of the trace and everything else on the box)."""
    free_mib = shutil.disk_usage(out).free >> 20
    return max(1, min(max_size_mib, free_mib * 9 // 10))


def kernel_buffer_kib(
    block_source: str, buffer_kb: int, blktrace_sub_kb: int, cpus: int, devices: int,
    writeback: bool,
) -> int:  # fmt: skip
    """Kernel memory the capture's trace buffers hold at most, all CPUs together."""
    if block_source == "blktrace":  # relay buffers per CPU and per device
        block = blktrace_sub_kb * BLKTRACE_SUBBUFS * cpus * devices
    else:  # one ring buffer per CPU (the blk tracer, or the tracepoint instance)
        block = per_cpu_buffer_kb(buffer_kb, cpus) * cpus
    return block + (WRITEBACK_BUFFER_KB * cpus if writeback else 0)


def limits_line(disk_mib: int, max_size_mib: int, buffer_kib: int) -> str:
    why = "" if disk_mib == max_size_mib else " (90% of the free space, under --max-size)"
    return (
        f"limits: the block trace stops at {disk_mib:,} MiB on disk{why}; kernel trace "
        f"buffers hold at most {buffer_kib / 1024:,.1f} MiB"
    )


def not_recorded(m: dict[str, Any]) -> list[str]:
    """What this capture lacks that a capture on a fully equipped box has, and why."""
    missing = []
    for tool, package in (("iostat", "sysstat"), ("vmstat", "procps")):
        if not m.get(tool):
            missing.append(f"{tool}.txt: {tool} is not installed (package {package})")
    if m.get("writeback_source") is None and "writeback_source" in m:
        missing.append(
            "writeback events: this kernel's tracefs has no writeback tracepoints or instances"
        )
    if m.get("blktrace_unavailable_because") and m.get("block_source") != "blktrace":
        missing.append(
            f"blktrace ({m['blktrace_unavailable_because']}): block events came from "
            f"{m.get('block_source')} instead"
        )
    return missing
