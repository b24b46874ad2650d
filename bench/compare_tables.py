#!/usr/bin/env python3
"""Check that two analysed datasets hold identical analysis tables (speed work must not change
output): per table, equal row counts, column names and types, and no row in one that is not in
the other (EXCEPT ALL both ways).

Usage: python bench/compare_tables.py REFERENCE_DATASET DATASET
"""

from __future__ import annotations

import sys
from pathlib import Path

import duckdb

TABLES = [
    "requests",
    "bios",
    "stage_stats",
    "iostat",
    "latency_hist",
    "latency_heatmap",
    "depth",
    "depth_bins",
    "io_dist",
    "spikes",
    "episodes",
    "writeback_verdict",
    "periods",
    "periodogram",
    "bursts",
]


def differences(con: duckdb.DuckDBPyConnection, ref: str, new: str) -> str | None:
    """What differs between two Parquet files, or None when they hold the same rows."""
    a, b = f"read_parquet('{ref}')", f"read_parquet('{new}')"
    columns = [con.execute(f"DESCRIBE SELECT * FROM {t}").fetchall() for t in (a, b)]
    if [c[:2] for c in columns[0]] != [c[:2] for c in columns[1]]:
        return "columns differ"
    counts = [con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0] for t in (a, b)]
    only = [
        con.execute(
            f"SELECT count(*) FROM (SELECT * FROM {x} EXCEPT ALL SELECT * FROM {y})"
        ).fetchall()[0][0]
        for x, y in ((a, b), (b, a))
    ]
    if counts[0] != counts[1] or any(only):
        return (
            f"rows {counts[0]} vs {counts[1]}, only in reference {only[0]}, only in new {only[1]}"
        )
    return None


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__)
        return 2
    con = duckdb.connect()
    bad = 0
    for table in TABLES:
        missing = [d for d in argv if not Path(f"{d}/{table}.parquet").exists()]
        if missing:  # a table newer than one of the datasets: nothing to compare
            print(f"{'missing':9} {table}: not in {', '.join(missing)}")
            continue
        diff = differences(con, f"{argv[0]}/{table}.parquet", f"{argv[1]}/{table}.parquet")
        print(f"{'DIFFERENT' if diff else 'same':9} {table}" + (f": {diff}" if diff else ""))
        bad += diff is not None
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
