#!/usr/bin/env python3
"""Independent truth for `bio_files`: read the traced disk itself at a random sample of the
sectors the trace's bios touched and say whose tag (tools/files_workload.py writes each file
with repeats of b"TAG:<name>;") is there. No FIEMAP, no debugfs: only the bytes on the disk.

Usage: files_truth.py DATASET DISK_IMAGE_OR_DEVICE OUT.csv [SAMPLES]
Writes sector,op,tag (tag '' when the sector holds none) for SAMPLES (default 1500) sectors,
each drawn uniformly from the sectors of the bios (a bio's sectors weigh by their number).
"""

import csv
import random
import re
import sys

import duckdb

TAG = re.compile(rb"TAG:([A-Za-z0-9]+);")


def main() -> None:
    dataset, disk, out = sys.argv[1], sys.argv[2], sys.argv[3]
    samples = int(sys.argv[4]) if len(sys.argv) > 4 else 1500
    con = duckdb.connect()
    bios = con.execute(
        f"SELECT sector, nsectors, op FROM read_parquet('{dataset}/bios.parquet') "
        "WHERE sector IS NOT NULL AND nsectors > 0 AND op IN ('R', 'W') ORDER BY q_eid"
    ).fetchall()
    rnd = random.Random(16)
    weights = [n for _, n, _ in bios]
    picks = rnd.choices(bios, weights=weights, k=samples)
    rows = []
    with open(disk, "rb") as dev:
        for sector, nsectors, op in picks:
            s = sector + rnd.randrange(nsectors)
            dev.seek(s * 512)
            data = dev.read(512)
            # a 20-byte record may straddle the sector's edges: look at whole tags only
            names = {m[1].decode() for m in TAG.finditer(data)}
            rows.append((s, op, ";".join(sorted(names))))
    with open(out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["sector", "op", "tag"])
        w.writerows(sorted(rows))


if __name__ == "__main__":
    main()
