"""Independent side log of one capture, sampled every 100 ms until SIGTERM: `sidelog.csv`.

Columns: mono_ns (CLOCK_MONOTONIC when the sample was read); /proc/meminfo Dirty and Writeback
(kB, the whole machine: other agents' dirty pages on vda are in it too); the dirtier memory
cgroup's dirty and writeback bytes (only the injected dirtiers' pages: exact); /proc/diskstats
of UPPER and LOWER (reads, read sectors, writes, write sectors, IOs in flight, ms busy; flushes);
the ext4 journal's transaction count from /proc/fs/jbd2/UPPER-8/info.

Usage: sidelog.py OUT_CSV UPPER LOWER MEMCG_DIR [INTERVAL_S]
"""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

DISK_FIELDS = ("reads", "read_sectors", "writes", "write_sectors", "in_flight", "busy_ms",
               "flushes")  # fmt: skip


def meminfo() -> tuple[int, int]:
    values = {}
    for line in Path("/proc/meminfo").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name in ("Dirty", "Writeback"):
            values[name] = int(rest.split()[0])
    return values["Dirty"], values["Writeback"]


def memcg(path: Path) -> tuple[int, int]:
    values = dict.fromkeys(("dirty", "writeback"), 0)
    for line in (path / "memory.stat").read_text().splitlines():
        name, value = line.split()
        if name in values:
            values[name] = int(value)
    return values["dirty"], values["writeback"]


def diskstats(devices: tuple[str, ...]) -> dict[str, list[int]]:
    out = {}
    for line in Path("/proc/diskstats").read_text().splitlines():
        f = line.split()
        if f[2] in devices:
            # fields after the name: 0 reads, 2 read sectors, 4 writes, 6 write sectors,
            # 8 in flight, 9 ms busy, 15 flushes
            n = [int(x) for x in f[3:]]
            out[f[2]] = [n[0], n[2], n[4], n[6], n[8], n[9], n[15] if len(n) > 15 else 0]
    return out


def jbd2_transactions(info: Path) -> int:
    try:
        return int(info.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return -1


def main(argv: list[str]) -> None:
    out, upper, lower, memcg_dir = argv[0], argv[1], argv[2], Path(argv[3])
    interval = float(argv[4]) if len(argv) > 4 else 0.1
    info = Path(f"/proc/fs/jbd2/{upper}-8/info")
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    header = ["mono_ns", "meminfo_dirty_kb", "meminfo_writeback_kb", "memcg_dirty_bytes",
              "memcg_writeback_bytes"]  # fmt: skip
    for dev in ("upper", "lower"):
        header += [f"{dev}_{name}" for name in DISK_FIELDS]
    header.append("jbd2_transactions")
    with open(out, "w", buffering=1) as log:
        log.write(",".join(header) + "\n")
        next_at = time.monotonic()
        while not stop:
            now = time.monotonic_ns()
            stats = diskstats((upper, lower))
            row = [now, *meminfo(), *memcg(memcg_dir)]
            row += stats.get(upper, [-1] * len(DISK_FIELDS))
            row += stats.get(lower, [-1] * len(DISK_FIELDS))
            row.append(jbd2_transactions(info))
            log.write(",".join(map(str, row)) + "\n")
            next_at += interval
            time.sleep(max(0.0, next_at - time.monotonic()))


if __name__ == "__main__":
    main(sys.argv[1:])
