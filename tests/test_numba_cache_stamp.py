"""numba's cache of a blkscope kernel is stamped with every source of the package, not only the
kernel's own file: a change to a callee's file recompiles its callers (a stale `step` once
wrote wrong depth tables after only stream/requests.py changed)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb

from blkscope import numba_kernels
from blkscope.analyze.stream.core import step


def test_the_stamp_changes_when_any_source_changes(tmp_path: Path) -> None:
    (tmp_path / "core.py").write_text("def step(): pass\n")
    (tmp_path / "sub").mkdir()
    callee = tmp_path / "sub" / "requests.py"
    callee.write_text("def pair(): pass\n")
    before = numba_kernels.package_stamp.__wrapped__(tmp_path)
    assert numba_kernels.package_stamp.__wrapped__(tmp_path) == before
    os.utime(callee, ns=(1, 1))
    assert numba_kernels.package_stamp.__wrapped__(tmp_path) != before
    callee.write_text("def pair(): return 1\n")
    assert numba_kernels.package_stamp.__wrapped__(tmp_path) != before


def test_the_pass_is_cached_under_the_package_stamp() -> None:
    assert numba_kernels.PACKAGE_LOCATORS
    dispatcher: Any = step
    locator = dispatcher._cache._impl.locator  # numba's FunctionCache -> CacheImpl -> locator
    assert type(locator).__name__.startswith("Package")
    _own, package = locator.get_source_stamp()
    assert package == numba_kernels.package_stamp()


ANALYZE = """
import sys
from blkscope.cli import main
sys.argv = ["blkscope", "analyze", sys.argv[1], "-q"]
try:
    main()
except SystemExit as done:
    assert not done.code, done.code
print("REGISTRIES", "numba.np.linalg" in sys.modules)
"""


def _analyze(dataset: Path) -> str:
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [sys.executable, "-c", ANALYZE, str(dataset)],
        capture_output=True,
        text=True,
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
        timeout=600,
        check=True,
    )
    return done.stdout.strip()


def test_a_cached_pass_loads_without_numbas_compiler(mq_dataset: Path, tmp_path: Path) -> None:
    """Once the pass is in numba's cache, an analysis loads it without numba's typing and
    lowering registries (stream/jit.py: ~0.3 s of every analysis), and its tables come out the
    same."""
    dataset = tmp_path / "mq.dataset"
    shutil.copytree(mq_dataset, dataset)
    _analyze(dataset)  # compiles the pass if the cache is cold (then numba needs its registries)
    assert _analyze(dataset) == "REGISTRIES False"
    for table in ("requests", "bios", "stage_stats", "depth"):
        new, old = (str(d / f"{table}.parquet") for d in (dataset, mq_dataset))
        for a, b in ((new, old), (old, new)):
            left = duckdb.execute(
                f"SELECT count(*) FROM (FROM read_parquet('{a}') EXCEPT ALL "
                f"FROM read_parquet('{b}'))"
            ).fetchall()
            assert left == [(0,)], table
