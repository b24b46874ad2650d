"""compare on real captures: same settings is noise; writeback every 10 s instead of 5 s moves
the period. The captures are in tests/data/issue5 (see its README)."""

from __future__ import annotations

from pathlib import Path

import pytest

from blkscope.analyze.build import analyze_dataset
from blkscope.analyze.compare import compare, render
from blkscope.ingest.blkparse_ingest import ingest_events

ISSUE5 = Path(__file__).parent / "data" / "issue5"


@pytest.fixture(scope="module")
def datasets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = {}
    for name in ("wb500-a", "wb500-b", "wb1000"):
        ds = tmp_path_factory.mktemp(name) / "ds"
        ingest_events([str(ISSUE5 / name / "trace")], ds)
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
