"""compare on real captures: same settings is noise; writeback every 10 s instead of 5 s moves
the period. The captures are in tests/data/issue5 (see its README)."""

from __future__ import annotations

from pathlib import Path

import pytest

import blkscope
from blkscope.dataset import Dataset
from blkscope.ingest.folder import ingest_folder
from blkscope.pipeline import analyze
from blkscope.reports.compare_text import render

# every test here waits for a fixture that ingests and analyses whole captures
pytestmark = pytest.mark.slow

ISSUE5 = Path(__file__).parents[1] / "data" / "issue5"


@pytest.fixture(scope="module")
def datasets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = {}
    for name in ("wb500-a", "wb500-b", "wb1000"):
        ds = tmp_path_factory.mktemp(name) / "ds"
        ingest_folder(ISSUE5 / name, ds)
        analyze(ds).close()
        out[name] = ds
    return out


def test_identical_settings_show_no_significant_read_or_write_change(
    datasets: dict[str, Path],
) -> None:
    """Same settings, two runs: reads and writes are noise. Flushes (data-less Q FWS) are their
    own op class, not writes: their Q2C p99 did move, 109 -> 158 us per window."""
    result = blkscope.compare(datasets["wb500-a"], datasets["wb500-b"]).as_doc()
    moved = [(c["op_class"], c["stage"], c["statistic"]) for c in result["significant"]]
    assert moved == [("flush", "Q2C", "median_window_p99")]
    (flush,) = result["significant"]
    assert (flush["before_ns"], flush["after_ns"]) == (108_702, 158_187)
    # every op class the captures hold (read, write, flush) x D2C and Q2C x p50 and p99
    compared = sorted((c["op_class"], c["stage"], c["statistic"]) for c in result["latency"])
    assert compared == [
        (op, stage, stat)
        for op in ("flush", "read", "write")
        for stage in ("D2C", "Q2C")
        for stat in ("median_window_p50", "median_window_p99")
    ]
    assert {c["device"] for c in result["latency"]} == {"254,0"}
    assert render(result).splitlines()[-2] == (
        "1 significant latency change in the per-window statistics; the rest is noise"
    )


def test_compare_names_its_statistic_and_prints_the_whole_capture_p99(
    datasets: dict[str, Path],
) -> None:
    """The per-window statistic is named for what it is, and the p99 analyze prints (over every
    IO) is there too, with an interval from resampling 1 s windows."""
    result = blkscope.compare(datasets["wb500-a"], datasets["wb500-b"]).as_doc()
    assert {c["statistic"] for c in result["latency"]} == set(result["statistics"])
    assert result["statistics"]["median_window_p99"] == (
        "the median over 1 s windows of each window's p99"
    )
    whole = {(c["op_class"], c["stage"]): c for c in result["capture_p99"]}
    with Dataset(datasets["wb500-a"]).con as con:
        stats = dict(
            ((op, stage), p99)
            for op, stage, p99 in con.execute(
                "SELECT op_class, stage, p99_ns FROM stage_stats WHERE level IN ('op', 'device') "
                "AND stage IN ('D2C', 'Q2C')"
            ).fetchall()
        )
    assert {k: c["before_ns"] for k, c in whole.items()} == stats
    d2c = whole[("*", "D2C")]
    assert d2c["before_ns"] == 5_173_321  # what analyze prints as this capture's D2C p99
    assert d2c["before_low_ns"] <= d2c["before_ns"] <= d2c["before_high_ns"]
    text = render(result)
    assert "whole-capture p99 of every IO" in text
    assert "median_window_p99 = the median over 1 s windows of each window's p99" in text


def test_every_change_carries_a_confidence_interval(datasets: dict[str, Path]) -> None:
    for row in blkscope.compare(datasets["wb500-a"], datasets["wb1000"]).as_doc()["latency"]:
        assert row["ci_low"] <= row["change"] <= row["ci_high"] or row["verdict"] == "noise"
        assert row["windows"][0] >= 5 and row["windows"][1] >= 5


def test_writeback_every_10_s_instead_of_5_s_moves_the_period(datasets: dict[str, Path]) -> None:
    result = blkscope.compare(datasets["wb500-a"], datasets["wb1000"]).as_doc()
    (row,) = [p for p in result["periods"] if p["series"] == "writeback_events"]
    assert abs(row["before_s"] - 5.0) <= 0.2
    assert abs(row["after_s"] - 10.0) <= 0.5
    assert row["verdict"] == "changed"
    same = blkscope.compare(datasets["wb500-a"], datasets["wb500-b"]).as_doc()
    (row,) = [p for p in same["periods"] if p["series"] == "writeback_events"]
    assert row["verdict"] == "same"


def test_stage_means_are_the_exactly_rounded_quotient(datasets: dict[str, Path]) -> None:
    """stage_stats' mean is sum / n rounded once to a double. DuckDB's avg() on integers divides
    in long double and rounds again: on wb1000, python3's write/sync/meta G2I (2,311 latencies,
    sum 3,889,792 ns) came out one ulp high, 1683.1639982691477 instead of 1683.1639982691474.
    The means now come from exact (HUGEINT) bucket sums: every process-level mean equals the
    Fraction sum / n of the bios' own latencies, rounded once."""
    from fractions import Fraction

    with Dataset(datasets["wb1000"]).con as con:
        means = con.execute(
            "SELECT op_class, process, stage, n, mean_ns FROM stage_stats "
            "WHERE level = 'process' AND stage IN ('G2I', 'D2C', 'Q2C')"
        ).fetchall()
        values = con.execute(
            "SELECT op_class, process, 'G2I', i_time_ns - g_time_ns FROM internal._bio_class "
            "WHERE i_time_ns IS NOT NULL AND g_time_ns IS NOT NULL "
            "UNION ALL SELECT op_class, process, 'D2C', d2c_ns FROM internal._bio_class "
            "WHERE d2c_ns IS NOT NULL "
            "UNION ALL SELECT op_class, process, 'Q2C', q2c_ns FROM internal._bio_class "
            "WHERE q2c_ns IS NOT NULL"
        ).fetchall()
    sums: dict[tuple[str, str, str], list[int]] = {}
    for op_class, process, stage, ns in values:
        sums.setdefault((op_class, process, stage), []).append(ns)
    assert len(means) == len(sums) >= 20
    for op_class, process, stage, n, mean in means:
        got = sums[(op_class, process, stage)]
        assert n == len(got)
        assert mean == float(Fraction(sum(got), n)), (op_class, process, stage)
    g2i = {(o, p): m for o, p, s, _, m in means if s == "G2I"}
    assert g2i[("write/sync/meta", "python3")] == 1683.1639982691474
