"""Facts about the machine and its devices that the analysis laptop cannot look up later."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from blkscope.version import __version__

QUEUE_KNOBS = (
    "nr_requests",
    "max_sectors_kb",
    "max_hw_sectors_kb",
    "rotational",
    "logical_block_size",
    "physical_block_size",
    "read_ahead_kb",
    "wbt_lat_usec",
    "nomerges",
    "rq_affinity",
    "write_cache",
)
TOOLS = {"blktrace": ["-V"], "blkparse": ["-V"], "iostat": ["-V"], "bpftrace": ["--version"]}


def _read(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace").strip()
    except OSError:
        return None


def clock_pair() -> tuple[int, int]:
    """CLOCK_MONOTONIC ns and wall-clock ns taken together (mono is the midpoint around wall)."""
    before = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    wall = time.time_ns()
    after = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    return (before + after) // 2, wall


def _dev_numbers(dev: str) -> set[str]:
    """`major:minor` of the device and of its partitions."""
    base = Path("/sys/block") / dev
    numbers = {n for n in [_read(base / "dev")] if n}
    for part in base.glob(f"{dev}*"):
        n = _read(part / "dev")
        if n:
            numbers.add(n)
    return numbers


def mounts_on(dev: str) -> list[dict[str, Any]]:
    """Filesystems mounted from the device or its partitions, with ext4's full option list."""
    numbers = _dev_numbers(dev)
    found = []
    for line in (_read(Path("/proc/self/mountinfo")) or "").splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 6 or len(tail) < 3 or fields[2] not in numbers:
            continue
        entry: dict[str, Any] = {
            "dev": fields[2],
            "mountpoint": fields[4],
            "fstype": tail[0],
            "source": tail[1],
            "mount_options": fields[5],
            "super_options": tail[2],
        }
        # ext4 hides defaults such as data=ordered in mountinfo; /proc/fs/ext4 lists them all.
        name = Path(tail[1]).name
        ext4 = _read(Path("/proc/fs/ext4") / name / "options")
        if tail[0] == "ext4" and ext4:
            opts = ext4.splitlines()
            entry["ext4_options"] = opts
            entry["journal_mode"] = _ext4_journal_mode(name, opts)
        found.append(entry)
    return found


def _ext4_journal_mode(name: str, opts: list[str]) -> str:
    """data=MODE when listed; else ordered if a jbd2 journal runs for it, else `no journal`."""
    for opt in opts:
        if opt.startswith("data="):
            return opt.split("=", 1)[1]
    if any(Path("/proc/fs/jbd2").glob(f"{name}-*")):
        return "ordered"
    return "no journal"


def device_info(dev: str) -> dict[str, Any]:
    """Model, numbers, scheduler and its tunables, queue limits, mounts for one device."""
    base = Path("/sys/block") / dev
    queue = base / "queue"
    sched = _read(queue / "scheduler") or ""
    chosen = sched[sched.index("[") + 1 : sched.index("]")] if "[" in sched else sched or None
    tunables = {p.name: _read(p) for p in sorted((queue / "iosched").glob("*")) if p.is_file()}
    return {
        "name": dev,
        "dev": _read(base / "dev"),
        "model": _read(base / "device" / "model"),
        "vendor": _read(base / "device" / "vendor"),
        "size_sectors": int(_read(base / "size") or 0),
        "scheduler": chosen,
        "schedulers_available": sched.replace("[", "").replace("]", "").split(),
        "scheduler_tunables": tunables,
        "queue": {k: _read(queue / k) for k in QUEUE_KNOBS if (queue / k).exists()},
        "backing_file": _read(base / "loop" / "backing_file"),
        "mounts": mounts_on(dev),
    }


def vm_sysctls() -> dict[str, str | None]:
    """Every vm.dirty_* sysctl (they decide when writeback wakes)."""
    return {f"vm.{p.name}": _read(p) for p in sorted(Path("/proc/sys/vm").glob("dirty*"))}


def tool_versions() -> dict[str, str | None]:
    """First line of each helper tool's version output, None when absent."""
    out: dict[str, str | None] = {"blkscope": __version__, "python": sys.version.split()[0]}
    for tool, args in TOOLS.items():
        exe = shutil.which(tool)
        if exe is None:
            out[tool] = None
            continue
        try:
            done = subprocess.run(
                [exe, *args], capture_output=True, text=True, timeout=10, check=False
            )
            text = (done.stdout or done.stderr).strip()
            out[tool] = text.splitlines()[0] if text else None
        except (OSError, subprocess.TimeoutExpired):
            out[tool] = None
    return out


def host_info() -> dict[str, Any]:
    """Host name, kernel, CPU count, time zone."""
    u = os.uname()
    return {
        "hostname": socket.gethostname(),
        "kernel": u.release,
        "kernel_version": u.version,
        "machine": u.machine,
        "cpus": os.cpu_count(),
        "timezone": time_zone(),
    }


def time_zone() -> dict[str, Any]:
    """The host's local zone now: its abbreviation and offset from UTC (the report shows
    trace times in it beside UTC, so they match the host's own logs)."""
    now = time.localtime()
    return {"name": now.tm_zone, "utc_offset_s": now.tm_gmtoff}
