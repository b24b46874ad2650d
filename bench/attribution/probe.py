"""The victim: a 4 KiB pwrite + fdatasync every 20 ms, latency logged as `mono_ns,latency_us`.

The same prober as ../shared/capture-tools/workload.py (the op starts at mono_ns; it sleeps the
period after each op). The driver runs it under `chrt -f 50`, so CPU load from other processes
on the machine does not delay it. Its file is written once and synced before the first timed
op, so every timed fdatasync is a data write and a flush, never a block allocation.

Usage: probe.py FILE CSV STOP_MONO_NS [PERIOD_S]
"""

from __future__ import annotations

import os
import sys
import time


def main(argv: list[str]) -> None:
    path, csv_path, stop_ns = argv[0], argv[1], int(argv[2])
    period = float(argv[3]) if len(argv) > 3 else 0.02
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    buf = os.urandom(4096)
    os.pwrite(fd, buf, 0)
    os.fsync(fd)
    with open(csv_path, "w", buffering=1) as log:  # line-buffered: a killed run keeps its rows
        log.write("mono_ns,latency_us\n")
        while time.monotonic_ns() < stop_ns:
            t0 = time.monotonic_ns()
            os.pwrite(fd, buf, 0)
            os.fdatasync(fd)
            log.write(f"{t0},{(time.monotonic_ns() - t0) // 1000}\n")
            time.sleep(period)
    os.close(fd)


if __name__ == "__main__":
    main(sys.argv[1:])
