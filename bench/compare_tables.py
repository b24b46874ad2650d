#!/usr/bin/env python3
"""Check that two analysed datasets hold identical analysis tables (speed work must not change
output): per table, equal row counts, column names and types, and no row in one that is not in
the other (EXCEPT ALL both ways).

Usage: python bench/compare_tables.py [--all] REFERENCE_DATASET DATASET

--all: every Parquet file of either dataset (events and the other ingest tables too; a file
the new dataset lacks differs), and the manifest without its creation time. A table only the new
dataset has is new (a table added since the reference was made), not a difference.
"""

from __future__ import annotations

import json
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
    "bio_counts",
    "request_counts",
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


def _manifest(dataset: Path) -> dict[str, object]:
    doc = json.loads((dataset / "manifest.json").read_text())
    doc.pop("created_utc", None)
    return doc


def every_table(ref: Path, new: Path) -> list[str]:
    """The table names of every Parquet file in either dataset."""
    return sorted({p.stem for d in (ref, new) for p in d.glob("*.parquet")})


def main(argv: list[str]) -> int:
    everything = "--all" in argv
    argv = [a for a in argv if a != "--all"]
    if len(argv) != 2:
        print(__doc__)
        return 2
    ref, new = Path(argv[0]), Path(argv[1])
    con = duckdb.connect()
    bad = 0
    for table in every_table(ref, new) if everything else TABLES:
        paths = [d / f"{table}.parquet" for d in (ref, new)]
        if not paths[0].is_file() and paths[1].is_file():
            # a table newer than the reference: nothing to compare it with, not a difference
            print(f"{'new':9} {table}: not in {ref}")
            continue
        if not paths[0].is_file() and not everything:
            print(f"{'missing':9} {table}: in neither dataset")
            continue
        diff = f"no {paths[1]}" if not paths[1].is_file() else differences(con, *map(str, paths))
        print(f"{'DIFFERENT' if diff else 'same':9} {table}" + (f": {diff}" if diff else ""))
        bad += diff is not None
    if everything:
        old, now = _manifest(ref), _manifest(new)
        tables = now.get("tables")
        if isinstance(tables, dict) and isinstance(old.get("tables"), dict):
            # the new tables (above) are listed in the new manifest only
            now["tables"] = {k: v for k, v in tables.items() if k in old["tables"]}
        same = old == now
        print(
            f"{'same' if same else 'DIFFERENT':9} manifest.json (without created_utc, new tables)"
        )
        bad += not same
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
