#!/usr/bin/env python3
"""The compiled blkparse scanner alone: millions of lines of blkparse text per CPU-second.

Usage: python bench/scan_text.py FILE [ROUNDS]

The file is first read into 4 MiB chunks of whole lines as ingest reads them (not timed); then
each round scans every chunk on this one thread as ingest's workers do (text_stream.scan_chunk:
the scan, and its rows made an events table) and takes the CPU time of that. Prints JSON:
lines, the CPU seconds of each round, and the median's millions of lines per CPU-second.
"""

from __future__ import annotations

import json
import statistics
import sys
import time

from blkscope.ingest.blkparse.text_stream import scan_chunk
from blkscope.ingest.sources import iter_chunks, open_source


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    rounds = int(argv[1]) if len(argv) > 1 else 3
    source = open_source(argv[0])
    chunks = list(iter_chunks(source))
    source.close()
    seconds = []
    lines = 0
    for _ in range(rounds):
        start, lines = time.process_time(), 0
        for chunk in chunks:
            lines += scan_chunk(chunk, lines + 1, 0).lines
        seconds.append(round(time.process_time() - start, 3))
    speed = lines / 1e6 / statistics.median(seconds)
    print(json.dumps({"lines": lines, "cpu_s": seconds, "m_lines_per_cpu_s": round(speed, 2)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
