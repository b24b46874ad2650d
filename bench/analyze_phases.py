#!/usr/bin/env python3
"""Where `blkscope analyze` spends its CPU and memory: one line per step of its progress.

Usage: python bench/analyze_phases.py DATASET [--limit-mb N]

Analyses DATASET (an ingested dataset folder; the analysis tables are rewritten) in this
process and prints, for each step the analysis reports (the streaming pass, then each stored
table: a step also holds the shared temp tables and the statistics built beside it), its CPU
seconds (user + system, every thread), wall seconds, the highest resident memory sampled
during it (every 50 ms) and the process's high-water mark, then DuckDB's memory and spilled
bytes at its end. CPU and RSS are what to compare on a loaded machine; wall is not.
--limit-mb overrides DuckDB's memory limit (analyze/memory.py) for an experiment.
"""

from __future__ import annotations

import os
import resource
import sys
import threading
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as the CLI does: idle BLAS threads spin

import duckdb

import blkscope.analyze.build as build
from blkscope.analyze import memory
from blkscope.store.manifest import read_manifest


def _status_mb(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) // 1024
    return 0


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class Phases:
    """A progress callback that prints each step's CPU, wall and peak RSS when the next begins."""

    def __init__(self) -> None:
        self.step, self.peak = "start", _status_mb("VmRSS")
        self.wall, self.cpu = time.perf_counter(), _cpu()
        self.connections: list[duckdb.DuckDBPyConnection] = []
        threading.Thread(target=self._sample, daemon=True).start()

    def _sample(self) -> None:
        while True:
            self.peak = max(self.peak, _status_mb("VmRSS"))
            time.sleep(0.05)

    def _duckdb(self) -> str:
        try:
            used, spilled = (
                self.connections[-1]
                .execute(
                    "SELECT sum(memory_usage_bytes) >> 20, sum(temporary_storage_bytes) >> 20 "
                    "FROM duckdb_memory()"
                )
                .fetchall()[0]
            )
        except (IndexError, duckdb.Error):
            return ""
        return f"  duckdb {used} MB, spilled {spilled} MB"

    def __call__(self, key: str, done: int, total: int, **kw: object) -> None:
        label = str(kw.get("label") or key)
        if key.endswith(" events") or label == self.step:
            return  # the pass's event counts: one step
        print(
            f"{self.step:36} CPU {_cpu() - self.cpu:7.2f} s  wall {time.perf_counter() - self.wall:7.2f}"
            f" s  peak RSS {self.peak:5} MB  HWM {_status_mb('VmHWM'):5} MB{self._duckdb()}",
            flush=True,
        )
        self.step, self.peak = label, _status_mb("VmRSS")
        self.wall, self.cpu = time.perf_counter(), _cpu()


def main(argv: list[str]) -> int:
    if not argv or argv[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    dataset = Path(argv[0])
    if "--limit-mb" in argv:
        memory.MEMORY_LIMIT_BYTES = int(argv[argv.index("--limit-mb") + 1]) << 20
    phases = Phases()
    connect = build.connect

    def watched(*args: object) -> duckdb.DuckDBPyConnection:
        con = connect(*args)  # type: ignore[arg-type]
        phases.connections.append(con)
        return con

    build.connect = watched  # type: ignore[assignment]
    wall, cpu = time.perf_counter(), _cpu()
    build.analyze_dataset(dataset, read_manifest(dataset), progress=phases)
    phases("end", 0, 0, label="end")
    phases.connections.clear()
    print(
        f"total CPU {_cpu() - cpu:.2f} s  wall {time.perf_counter() - wall:.2f} s  "
        f"peak RSS {_status_mb('VmHWM')} MB"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
