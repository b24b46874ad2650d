"""Cut one time window out of a capture_tracepoints.sh folder: every text and the blktrace files.

Usage: PYTHONPATH=. python tests/data/tracepoints/cut.py CAPTURE START END OUT
START and END are CLOCK_MONOTONIC seconds (the texts' own clock: trace_clock mono, perf -k mono).
Header lines are kept; event lines are kept when their time is in [START, END).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import zstandard

from blkscope.ingest.blktrace.records import read_records

_TIME = re.compile(rb"(?:\]|\s)\s*(\d+\.\d{6,9}):\s")
_CLASSIC = re.compile(rb"\s*\d+,\d+\s+\d+\s+(\d+\.\d{9})\s")


def _time(line: bytes) -> float | None:
    m = _CLASSIC.match(line) or _TIME.search(line)
    return float(m.group(1)) if m else None


def main(capture: Path, start: float, end: float, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name in ("ftrace.txt", "perf.txt", "trace-cmd.txt", "blk-text.txt", "blk-classic.txt"):
        kept = []
        for line in (capture / name).read_bytes().splitlines(keepends=True):
            t = _time(line)
            if t is None or start <= t < end:
                kept.append(line)
        data = b"".join(kept)
        (out / f"{name}.zst").write_bytes(zstandard.ZstdCompressor(level=19).compress(data))
    # blktrace records: cut_blktrace.py takes seconds after the first record
    first = min(
        int(read_records(str(p)).records["time"].min()) / 1e9
        for p in sorted(capture.glob("trace.blktrace.*"))
    )
    cut = Path(__file__).parents[1] / "formats" / "cut_blktrace.py"
    subprocess.run(
        [sys.executable, str(cut), str(capture / "trace"), str(start - first + 1e-9),
         str(end - first), str(out / "trace")],
        check=True,
    )  # fmt: skip


if __name__ == "__main__":
    main(Path(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), Path(sys.argv[4]))
