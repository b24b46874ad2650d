"""A real fleet for the fleet tests: 8 real captures as 3 hosts, built once by each engine.

The captures: the shared mq-writeback-30s capture (or its fixture copy), the loop tail fixture,
the issue-5 captures (wb500-a, wb500-b, wb1000, jbd2-commit), the kernel-stats `plain` capture, and
jbd2-commit again with garbage lines in its blkparse text and its writeback logs removed.
One local[2] SparkSession serves the whole test session (it takes ~15 s to start).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from blkscope.fleet.add import add_captures
from tests.conftest import LOOP_TAIL, ROOT, capture_folder, read_zst

ISSUE5 = ROOT / "tests" / "data" / "issue5"
KSTATS = ROOT / "tests" / "data" / "kernel-stats"
GARBAGE = [b"this is not a blkparse line\n", b"254,0 1 2 x.y Q W 1 + 8 [a]\n", b"\x00\x01\x02\n"]


def garbage_capture(root: Path) -> Path:
    """jbd2-commit with 3 malformed lines in the middle of its events and no writeback log."""
    out = root / "jbd2-garbage"
    out.mkdir()
    lines = read_zst(ISSUE5 / "jbd2-commit" / "blkparse.txt.zst").splitlines(keepends=True)
    middle = len(lines) // 3
    (out / "blkparse.txt").write_bytes(b"".join(lines[:middle] + GARBAGE + lines[middle:]))
    for name in ("capture.json", "clock.txt", "cmdlines.txt"):
        shutil.copy(ISSUE5 / "jbd2-commit" / name, out / name)
    return out


def fleet_plan(scratch: Path) -> list[tuple[str, list[str], list[str]]]:
    """(host, labels, capture folders): 3 hosts, 8 captures, kernel 6.8 on one host only."""
    return [
        ("edge-1", ["kernel=6.8", "workload=broker"],
         [str(capture_folder("mq-writeback-30s")), str(LOOP_TAIL), str(ISSUE5 / "jbd2-commit")]),
        ("edge-2", ["kernel=6.9", "workload=broker"],
         [str(ISSUE5 / "wb500-a"), str(ISSUE5 / "wb1000"), str(KSTATS / "plain")]),
        ("db-3", ["kernel=6.9", "workload=db"],
         [str(ISSUE5 / "wb500-b"), str(garbage_capture(scratch))]),
    ]  # fmt: skip


def build_fleet(fleet: Path, plan: list[Any], engine: str) -> list[dict[str, Any]]:
    results = []
    for host, labels, sources in plan:
        results += add_captures(fleet, sources, host=host, labels=labels, engine=engine, workers=2)
    return results


@pytest.fixture(scope="session")
def fleet_sources(tmp_path_factory: pytest.TempPathFactory) -> list[Any]:
    return fleet_plan(tmp_path_factory.mktemp("fleet-captures"))


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One local[2] SparkSession; its Python workers import the blkscope this session does
    (they may run the base interpreter, without the venv's site-packages: src/ with the
    editable install)."""
    import blkscope
    from blkscope.fleet.engines import spark_session

    package_parent = str(Path(blkscope.__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in [package_parent, os.environ.get("PYTHONPATH", "")] if p
    )
    session = spark_session("local[2]", "blkscope tests")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def local_fleet(
    tmp_path_factory: pytest.TempPathFactory, fleet_sources: list[Any]
) -> tuple[Path, list[dict[str, Any]]]:
    fleet = tmp_path_factory.mktemp("local") / "fleet"
    return fleet, build_fleet(fleet, fleet_sources, "local")


@pytest.fixture(scope="session")
def spark_built_fleet(
    tmp_path_factory: pytest.TempPathFactory, fleet_sources: list[Any], spark: Any
) -> tuple[Path, list[dict[str, Any]]]:
    fleet = tmp_path_factory.mktemp("spark") / "fleet"
    return fleet, build_fleet(fleet, fleet_sources, "spark")
