"""DuckDB's workers in an analysis: every core the process may use but one (build.py)."""

from __future__ import annotations

import os

import pytest

from blkscope.analyze.build import duckdb_threads


@pytest.mark.parametrize(("cores", "threads"), [({0, 1, 2, 3}, 3), ({0, 1}, 1), ({7}, 1)])
def test_duckdb_gets_every_core_but_one(
    monkeypatch: pytest.MonkeyPatch, cores: set[int], threads: int
) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: cores, raising=False)
    assert duckdb_threads() == threads


def test_without_affinity_the_cpu_count_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    assert duckdb_threads() == 7
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert duckdb_threads() == 1
