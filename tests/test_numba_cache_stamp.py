"""numba's cache of a blkscope kernel (the ingest scanners and decoders) is stamped with every
source of the package, not only the kernel's own file: a change to a callee's file recompiles
its callers (a stale caller once wrote wrong depth tables after only a callee's file changed)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import duckdb

from blkscope import numba_kernels
from blkscope.ingest.blkparse._scan import _uint
from tests.test_footprint import RUN, _loaded


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


def test_a_kernel_is_cached_under_the_package_stamp() -> None:
    assert numba_kernels.PACKAGE_LOCATORS
    dispatcher: Any = _uint
    locator = dispatcher._cache._impl.locator  # numba's FunctionCache -> CacheImpl -> locator
    assert type(locator).__name__.startswith("Package")
    _own, package = locator.get_source_stamp()
    assert package == numba_kernels.package_stamp()


REGISTRIES = "numba.np.linalg"  # one of the modules numba's compiler set-up imports


def _run(*args: str) -> str:
    """Run a blkscope command in a fresh interpreter (test_footprint's runner); say whether
    numba's compiler registries were loaded."""
    code, loaded = _loaded([*args, "-q"], RUN.format(heavy=(REGISTRIES,)))
    assert code == 0, args
    return f"REGISTRIES {REGISTRIES in loaded}"


def _same(table: str, new: Path, old: Path) -> None:
    paths = [(d / f"{table}.parquet").as_posix() for d in (new, old)]
    for a, b in (paths, paths[::-1]):
        left = duckdb.execute(
            f"SELECT count(*) FROM (FROM read_parquet('{a}') EXCEPT ALL FROM read_parquet('{b}'))"
        ).fetchall()
        assert left == [(0,)], table


def test_cached_ingest_kernels_load_without_numbas_compiler(tmp_path: Path) -> None:
    """Once ingest's kernels (the blkparse scanner, the blktrace decoder) are in numba's cache,
    an ingest loads them without numba's typing and lowering registries
    (numba_kernels.loads_only: ~0.3 s of every ingest), with NRT set up (they may allocate),
    and the events come out the same."""
    capture = Path(__file__).resolve().parents[1] / "fixtures" / "loop-split-merge-tail"
    first, second = tmp_path / "first", tmp_path / "second"
    _run("ingest", str(capture), "-o", str(first))  # compiles what the cache lacks
    assert _run("ingest", str(capture), "-o", str(second)) == "REGISTRIES False"
    _same("events", second, first)
