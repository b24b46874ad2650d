"""compare on real captures: same settings is noise; writeback every 10 s instead of 5 s moves
the period. The captures are in tests/data/issue5 (see its README)."""

from __future__ import annotations

from pathlib import Path

import pytest

from blkscope.analyze.build import analyze_dataset
from blkscope.analyze.compare import compare, render
from blkscope.ingest.folder import ingest_folder

ISSUE5 = Path(__file__).parent / "data" / "issue5"


@pytest.fixture(scope="module")
def datasets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = {}
    for name in ("wb500-a", "wb500-b", "wb1000"):
        ds = tmp_path_factory.mktemp(name) / "ds"
        ingest_folder(ISSUE5 / name, ds)
        analyze_dataset(ds).close()
        out[name] = ds
    return out


def test_identical_settings_show_no_significant_latency_change(datasets: dict[str, Path]) -> None:
    result = compare(datasets["wb500-a"], datasets["wb500-b"])
    assert result["significant"] == []
    assert len(result["latency"]) >= 8
    assert render(result).splitlines()[-1] == (
        "no significant latency change: every difference is within noise"
    )


def test_every_change_carries_a_confidence_interval(datasets: dict[str, Path]) -> None:
    for row in compare(datasets["wb500-a"], datasets["wb1000"])["latency"]:
        assert row["ci_low"] <= row["change"] <= row["ci_high"] or row["verdict"] == "noise"
        assert row["windows"][0] >= 5 and row["windows"][1] >= 5


def test_writeback_every_10_s_instead_of_5_s_moves_the_period(datasets: dict[str, Path]) -> None:
    result = compare(datasets["wb500-a"], datasets["wb1000"])
    (row,) = [p for p in result["periods"] if p["series"] == "writeback_events"]
    assert abs(row["before_s"] - 5.0) <= 0.2
    assert abs(row["after_s"] - 10.0) <= 0.5
    assert row["verdict"] == "changed"
    same = compare(datasets["wb500-a"], datasets["wb500-b"])
    (row,) = [p for p in same["periods"] if p["series"] == "writeback_events"]
    assert row["verdict"] == "same"
