"""numba's cache of a blkscope kernel is stamped with every source of the package, not only the
kernel's own file: a change to a callee's file recompiles its callers (a stale `step` once
wrote wrong depth tables after only stream/requests.py changed)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

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
