"""DuckDB's memory for the analysis, set once for every connection that sorts or aggregates a
dataset's rows: a limit, and a spill folder inside the dataset's temporary area."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb

# Beyond the limit, sorts, joins, windows and aggregates spill into the spill folder. No
# statistic holds all rows (the percentiles count per value bucket and sort only the buckets
# holding the wanted ranks: sql/macros/exact_quantiles.sql, _stage_stats_build.sql), so 1 GB
# keeps the whole analysis (the streaming pass's in-flight tables, DuckDB, the Arrow results)
# under 2 GB at any trace length; less on a machine with under 4 GB.
MEMORY_LIMIT_BYTES = 1 << 30

# The spill folder, inside the dataset being written (never part of the committed dataset).
SPILL_DIR = ".duckdb_spill"


def memory_limit() -> str:
    """DuckDB's memory limit: 1 GB, or a quarter of physical memory when that is less."""
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
