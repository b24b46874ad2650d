#!/usr/bin/env python3
"""The RocketMQ-like workload of ../shared/capture-tools/workload.py, with every file's bytes
tagged: each file is written only with repeats of b"TAG:<name>;", so reading the device at any
sector a bio wrote (or read) tells whose data is there, independently of FIEMAP and debugfs.

Usage: files_workload.py DIR SECONDS [SCALE [PREFIX]]   (SCALE < 1 slows every writer down;
PREFIX goes before every tag name, so two runs on two filesystems tag apart)

commitlog: 64 KiB appends, fdatasync every 500 ms; cq00..cq63: 20-byte appends, never synced;
index: random 4 KiB writes into a 64 MiB file, never synced; probe: 4 KiB write + fdatasync
every 20 ms; readme: 16 MiB written and fsynced first, then O_DIRECT 4 KiB random reads.
The never-synced files are left to the periodic writeback (the seed story's question).
"""

import mmap
import os
import random
import sys
import threading
import time

PREFIX = [""]


def tag(name: str, size: int) -> bytes:
    unit = f"TAG:{PREFIX[0]}{name};".encode()
    return (unit * (size // len(unit) + 1))[:size]


def main() -> None:
    folder, secs = sys.argv[1], float(sys.argv[2])
    scale = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0
    PREFIX[0] = sys.argv[4] if len(sys.argv) > 4 else ""
    os.makedirs(folder, exist_ok=True)
    stop = time.monotonic() + secs
    rnd = random.Random(16)

    def nap(s: float) -> None:
        time.sleep(s / scale)

    def commitlog() -> None:
        fd = os.open(f"{folder}/commitlog", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        buf, last = tag("commitlog", 65536), time.monotonic()
        while time.monotonic() < stop:
            os.write(fd, buf)
            nap(0.005)
            if time.monotonic() - last > 0.5:
                os.fdatasync(fd)
                last = time.monotonic()

    def consumequeue() -> None:
        fds = [
            os.open(f"{folder}/cq{i:02d}", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
            for i in range(64)
        ]
        recs = [tag(f"cq{i:02d}", 20) for i in range(64)]
        while time.monotonic() < stop:
            i = rnd.randrange(64)
            os.write(fds[i], recs[i])
            nap(0.0005)

    def index() -> None:
        fd = os.open(f"{folder}/index", os.O_RDWR | os.O_CREAT)
        os.ftruncate(fd, 64 << 20)
        buf = tag("index", 4096)
        while time.monotonic() < stop:
            os.pwrite(fd, buf, rnd.randrange(16384) * 4096)
            nap(0.002)

    def prober() -> None:
        fd = os.open(f"{folder}/probe", os.O_WRONLY | os.O_CREAT)
        buf = tag("probe", 4096)
        while time.monotonic() < stop:
            os.pwrite(fd, buf, 0)
            os.fdatasync(fd)
            nap(0.02)

    def reader() -> None:
        path = f"{folder}/readme"
        fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
        buf = mmap.mmap(-1, 4096)
        while time.monotonic() < stop:
            os.preadv(fd, [buf], rnd.randrange(int(16 * scale + 1) * 256) * 4096)
            nap(0.005)

    path = f"{folder}/readme"
    if not os.path.exists(path):
        with open(path, "wb") as f:
            f.write(tag("readme", int(16 * scale + 1) << 20))
            os.fsync(f.fileno())
    threads = [threading.Thread(target=f) for f in (commitlog, consumequeue, index, prober, reader)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


if __name__ == "__main__":
    main()
