"""Fleet scale: `fleet add` and `fleet sql` on a fleet grown to 50 captures in batches of 10.

The 10 real capture folders of the repository (fixtures, tests/data) are added as 5 hosts
(h1..h5), one batch of 10 captures per host, so the fleet grows 10, 20, ... 50. After each batch:
the add's wall time per capture, and the wall time of three queries on DuckDB (and on Spark
with --spark): a count over every event, the fleet_hosts view, and the fleet_periods view; and the time of `fleet report`.
Time per capture staying flat as the fleet grows is what this shows (or not).

    flock /tmp/blkscope-bench.lock python bench/fleet_scale.py [--spark] [--json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SOURCES = [
    ROOT / "fixtures" / "mq-writeback-30s",
    ROOT / "fixtures" / "loop-split-merge-tail",
    *(ROOT / "tests" / "data" / "issue5" / n
      for n in ("wb500-a", "wb500-b", "wb1000", "jbd2-commit", "loop-parts")),
    *(ROOT / "tests" / "data" / "kernel-stats" / n for n in ("plain", "bfq", "biosnoop")),
]  # fmt: skip
QUERIES = {
    "events by host": "SELECT host, count(*) FROM events GROUP BY host",
    "fleet_hosts": "SELECT * FROM fleet_hosts",
    "fleet_periods": "SELECT * FROM fleet_periods",
}


def time_queries(fleet: Path, spark: bool) -> dict[str, object]:
    """Wall seconds of each query on each engine and of `fleet report`; the fleet's size."""
    from blkscope.fleet.query import run_sql
    from blkscope.fleet.report import write_fleet_report

    row: dict[str, object] = {}
    for engine in ["duckdb", "spark"] if spark else ["duckdb"]:
        for name, sql in QUERIES.items():
            started = time.perf_counter()
            run_sql(fleet, sql, engine, "local[2]")
            row[f"{engine}: {name} s"] = round(time.perf_counter() - started, 2)
    with tempfile.TemporaryDirectory() as scratch:
        started = time.perf_counter()
        write_fleet_report(fleet, Path(scratch) / "fleet.html")
        row["report_s"] = round(time.perf_counter() - started, 2)
    row["fleet_bytes"] = sum(f.stat().st_size for f in fleet.rglob("*") if f.is_file())
    row["fleet_files"] = sum(1 for f in fleet.rglob("*") if f.is_file())
    return row


def main() -> None:
    from blkscope.fleet.add import add_captures

    parser = argparse.ArgumentParser()
    parser.add_argument("--spark", action="store_true", help="also time the queries on Spark")
    parser.add_argument("--hosts", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--keep", type=Path, help="leave the fleet here instead of deleting it")
    parser.add_argument(
        "--queries-on", type=Path, help="only time the queries and the report on this fleet"
    )
    args = parser.parse_args()
    if args.queries_on:
        row = time_queries(args.queries_on, args.spark)
        print(json.dumps(row, indent=None if not args.json else 2))
        return
    scratch = Path(tempfile.mkdtemp(prefix="blkscope-fleet-scale-"))
    fleet = scratch / "fleet"
    rows = []
    try:
        for i in range(1, args.hosts + 1):
            started = time.perf_counter()
            results = add_captures(fleet, [str(s) for s in SOURCES], host=f"h{i}")
            add_s = time.perf_counter() - started
            assert all(r["ok"] for r in results), [r.get("error") for r in results]
            row = {"captures": 10 * i, "add_s": round(add_s, 2),
                   "add_s_per_capture": round(add_s / len(SOURCES), 2),
                   "busy_s_per_capture": round(sum(r["seconds"] for r in results) / len(SOURCES), 2)}  # fmt: skip
            rows.append({**row, **time_queries(fleet, args.spark)})
            row = rows[-1]
            if not args.json:
                print(json.dumps(row), flush=True)
    finally:
        if args.keep:
            shutil.move(fleet, args.keep)
        shutil.rmtree(scratch, ignore_errors=True)
    if args.json:
        print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
