"""DuckDB's memory for the analysis, set once for every connection that sorts or aggregates a
dataset's rows: a limit, and a spill folder inside the dataset's temporary area."""

from __future__ import annotations

import contextlib
import ctypes
import os
from pathlib import Path

import duckdb
import pyarrow as pa

# Beyond the limit, sorts, joins, windows, aggregates and the shared temp tables spill into the
# spill folder. No statistic holds all rows (the percentiles count per value bucket and sort only
# the buckets holding the wanted ranks: sql/macros/exact_quantiles.sql, rust/src/stats/picks.rs).
# 320 MB: the streaming pass does not grow with the trace, so the statistics after it make a big
# trace's peak; a higher limit raises that peak for the same CPU time (issue 12 wants the 10x
# peak within 1.5x the 1x's; CHANGELOG.md has the measurements). Less on a machine with under
# 1.3 GB.
MEMORY_LIMIT_BYTES = 320 << 20

# The spill folder, inside the dataset being written (never part of the committed dataset).
SPILL_DIR = ".duckdb_spill"


def memory_limit() -> str:
    """DuckDB's memory limit: 320 MB, or a quarter of physical memory when that is less."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        total = 4 * MEMORY_LIMIT_BYTES
    return f"{max(256 << 20, min(MEMORY_LIMIT_BYTES, total // 4)) >> 20}MB"


def bound_memory(con: duckdb.DuckDBPyConnection, dataset: Path) -> Path:
    """Give con the memory limit and the dataset's spill folder; return the folder (for its
    removal once the connection is closed)."""
    spill = dataset / SPILL_DIR
    con.execute(f"SET memory_limit = '{memory_limit()}'")
    con.execute(f"SET temp_directory = '{spill.as_posix().replace(chr(39), chr(39) * 2)}'")
    return spill


def give_back() -> None:
    """Return the memory freed by the streaming pass to the system before the statistics start:
    Arrow's allocator and glibc's keep freed pages for reuse, and DuckDB (which allocates its
    own) never reuses them, so they would sit under the statistics' peak. No gc.collect()
    first: the pass leaves next to no cycles, and a full collection walks every object the
    imported libraries leave."""
    pa.default_memory_pool().release_unused()
    with contextlib.suppress(OSError, AttributeError):  # glibc only; elsewhere they stay
        ctypes.CDLL(None).malloc_trim(0)
