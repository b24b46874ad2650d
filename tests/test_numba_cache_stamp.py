"""numba's cache of a blkscope kernel is stamped with every source of the package, not only the
kernel's own file: a change to a callee's file recompiles its callers (a stale `step` once
wrote wrong depth tables after only stream/requests.py changed)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import duckdb
import numba

from blkscope import numba_kernels
from blkscope.analyze.stream.core import step
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


@numba.njit(cache=True)
def _never_called(x: int) -> int:
    return x + 1


def test_a_function_never_compiled_is_not_cached() -> None:
    assert not numba_kernels.is_cached(_never_called)


def test_the_pass_is_cached_under_the_package_stamp() -> None:
    assert numba_kernels.PACKAGE_LOCATORS
    dispatcher: Any = step
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


def test_a_cached_pass_loads_without_numbas_compiler(mq_dataset: Path, tmp_path: Path) -> None:
    """Once the pass is in numba's cache, an analysis loads it without numba's typing and
    lowering registries (numba_kernels.loads_only: ~0.3 s of every analysis), and its tables
    come out the same."""
    dataset = tmp_path / "mq.dataset"
    shutil.copytree(mq_dataset, dataset)
    _run("analyze", str(dataset))  # compiles the pass if the cache is cold (with the registries)
    assert _run("analyze", str(dataset)) == "REGISTRIES False"
    for table in ("requests", "bios", "stage_stats", "depth"):
        _same(table, dataset, mq_dataset)
