"""Cut a small blktrace sample: every note plus the records in a time window, per CPU.

Usage: PYTHONPATH=. python tests/data/formats/cut_blktrace.py PREFIX START_S END_S OUT_PREFIX
Then: blkparse -i OUT_PREFIX -o OUT_PREFIX.blkparse.txt (the expected text for the golden test).
"""

from __future__ import annotations

import glob
import sys

import numpy as np

from blkscope.blk_io_trace import TC_NOTIFY, TN_MESSAGE
from blkscope.ingest.blktrace.records import RECORD_BYTES, read_records


def main(prefix: str, start_s: float, end_s: float, out: str) -> None:
    files = [read_records(p) for p in sorted(glob.glob(prefix + ".blktrace.*"))]
    base = min(int(f.records["time"].min()) for f in files)
    lo, hi = base + int(start_s * 1e9), base + int(end_s * 1e9)
    for f in files:
        r = f.records
        # Message notes are events of their own (bfq writes millions): window them too.
        note = (((r["action"] >> 16) & TC_NOTIFY) != 0) & ((r["action"] & 0xFF) != TN_MESSAGE)
        keep = np.flatnonzero(note | ((r["time"] >= lo) & (r["time"] < hi)))
        cpu = int(r["cpu"][0])
        with open(f"{out}.blktrace.{cpu}", "wb") as fh:
            for i in keep.tolist():
                start = int(f.offsets[i])
                fh.write(f.data[start : start + RECORD_BYTES + int(r["pdu_len"][i])].tobytes())


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4])
