#!/usr/bin/env python3
"""Benchmark `blkscope ingest` and `blkscope analyze` on a big trace against `wc -l` and
`blkparse -d` + `btt` on the same capture.

Usage: python bench/bench_ingest.py [TRACE.txt] [--json]

TRACE defaults to $BLKSCOPE_BENCH_TRACE. Make a >= 4 M-line one with
`../shared/capture-tools/capture.sh OUT 30 vda -- ../shared/capture-tools/fio_sched.sh FILE`
(root); do not commit it. When OUT/trace.blktrace.* sit beside the trace and blkparse and
btt are installed, the classic pipeline is timed on the same capture for a ratio.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# The least any SQL pairing of events must do: one window over the events that carry a sector,
# sorted by sector, device and time. Timed to show how far the analysis is from that floor.
ONE_WINDOW_PASS = """
SELECT count(*), sum(nxt) FROM (
    SELECT lead(time_ns) OVER (PARTITION BY sector ORDER BY dev_major, dev_minor, time_ns,
                                                        input_id, line_no) AS nxt
    FROM read_parquet(?) WHERE sector IS NOT NULL)
"""
CPU_SECONDS: dict[str, float] = {}  # user + system seconds of the last run() per command name


def one_window_pass(events: Path) -> float:
    """Seconds DuckDB takes for ONE_WINDOW_PASS over a dataset's events."""
    import duckdb

    con = duckdb.connect()
    start = time.perf_counter()
    con.execute(ONE_WINDOW_PASS, [str(events)]).fetchall()
    return time.perf_counter() - start


def run(cmd: list[str], cwd: Path | None = None) -> tuple[float, int]:
    """Run cmd; return (wall seconds, peak RSS in KiB of that child)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    if status != 0:
        err = proc.stderr.read().decode() if proc.stderr else ""
        raise SystemExit(f"{' '.join(cmd)} failed: {err}")
    CPU_SECONDS[Path(cmd[0]).name if cmd[0] != sys.executable else cmd[3]] = (
        usage.ru_utime + usage.ru_stime
    )
    return elapsed, usage.ru_maxrss


def ingest(trace: Path, out: Path) -> tuple[float, int]:
    """Time a blkscope ingest in a fresh interpreter."""
    return run([sys.executable, "-m", "blkscope.cli", "ingest", "-q", str(trace), "-o", str(out)])


def main(argv: list[str]) -> int:
    args = [a for a in argv if not a.startswith("--")]
    as_json = "--json" in argv
    trace = Path(args[0] if args else os.environ.get("BLKSCOPE_BENCH_TRACE", ""))
    if not trace.is_file():
        print(__doc__)
        return 2
    size = trace.stat().st_size
    with trace.open("rb") as f:
        lines = sum(block.count(b"\n") for block in iter(lambda: f.read(1 << 24), b""))
    result: dict[str, object] = {"trace": str(trace), "lines": lines, "bytes": size}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        half = work / "half.txt"
        with trace.open("rb") as src, half.open("wb") as dst:
            for n, line in enumerate(src):
                if n >= lines // 2:
                    break
                dst.write(line)
        ingest(half, work / "warm")  # numba compiles once into its cache
        wc = min(run(["wc", "-l", str(trace)])[0] for _ in range(3))
        half_s, half_rss = ingest(half, work / "ds-half")
        full_s, full_rss = ingest(trace, work / "ds-full")
        result.update(
            wc_l_seconds=round(wc, 3),
            ingest_seconds=round(full_s, 3),
            lines_per_second=round(lines / full_s),
            mb_per_second=round(size / 1e6 / full_s, 1),
            peak_rss_mb=round(full_rss / 1024, 1),
            peak_rss_mb_half_input=round(half_rss / 1024, 1),
            half_input_seconds=round(half_s, 3),
            slower_than_wc_l=round(full_s / wc, 1),
        )
        analyze_s, analyze_rss = run(
            [sys.executable, "-m", "blkscope.cli", "analyze", str(work / "ds-full")]
        )
        result.update(
            analyze_seconds=round(analyze_s, 3),
            analyze_cpu_seconds=round(CPU_SECONDS["analyze"], 3),
            analyze_peak_rss_mb=round(analyze_rss / 1024, 1),
            one_duckdb_window_pass_seconds=round(
                one_window_pass(work / "ds-full" / "events.parquet"), 3
            ),
        )
        cpu_files = sorted(trace.parent.glob("*.blktrace.*"))
        if cpu_files and shutil.which("blkparse") and shutil.which("btt"):
            name = cpu_files[0].name.split(".blktrace.")[0]
            for f in cpu_files:
                os.symlink(f, work / f.name)
            parse_s, _ = run(["blkparse", "-i", name, "-d", "x.bin", "-O"], cwd=work)
            btt_s, _ = run(["btt", "-i", "x.bin", "-o", "btt"], cwd=work)
            result.update(
                blkparse_d_seconds=round(parse_s, 3),
                btt_seconds=round(btt_s, 3),
                btt_cpu_seconds=round(CPU_SECONDS["btt"], 3),
                ingest_vs_blkparse_btt=round(full_s / (parse_s + btt_s), 2),
                analyze_vs_btt=round(analyze_s / btt_s, 2),
                ingest_plus_analyze_vs_blkparse_btt=round(
                    (full_s + analyze_s) / (parse_s + btt_s), 2
                ),
            )
    if as_json:
        print(json.dumps(result, indent=2))
    else:
        width = max(map(len, result))
        for key, value in result.items():
            print(f"{key:<{width}}  {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
