"""The period finder on synthetic series of known period, on aperiodic noise, and on real bursts."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pytest

from blkscope.analyze.period_series import user_series_periods
from blkscope.analyze.periodicity import KNOBS, bursts, find_periods, matching_knobs
from blkscope.analyze.views import query_table
from blkscope.dataset import Dataset
from blkscope.units import NS_PER_S
from tests.conftest import SHARED_CAPTURES, capture_folder


def _pulses(
    period: float,
    span: float,
    rng: np.random.Generator,
    jitter: float = 0.05,
    keep: float = 1.0,
    events: int = 20,
) -> np.ndarray:
    starts = np.arange(rng.uniform(0, period), span, period)
    starts = starts[rng.uniform(size=starts.size) < keep]
    starts = starts + rng.normal(0, jitter, starts.size)
    ev = (starts[:, None] + rng.uniform(0, 0.2, (starts.size, events))).ravel()
    return np.sort((ev[(ev >= 0) & (ev < span)] * NS_PER_S).astype(np.int64))


@pytest.mark.parametrize("period", [2.0, 5.0, 7.5, 10.0])
def test_known_periods_are_recovered(period: float) -> None:
    """Blind search (no knob near 2 or 7.5 s): 12 or more cycles with some bursts missing."""
    rng = np.random.default_rng(int(period * 10))
    errors = []
    span = 12 * period / 0.8
    for _ in range(20):
        times = _pulses(period, span, rng, jitter=0.05, keep=0.8)
        found = find_periods(times, (0, int(span * NS_PER_S)), knobs={})
        if found:
            errors.append(abs(found[0].period_s - period))
    assert len(errors) >= 18
    assert max(errors) < 0.2
    assert float(np.median(errors)) < 0.05


def test_noise_among_bursts_does_not_hide_the_period() -> None:
    rng = np.random.default_rng(7)
    hits = 0
    for _ in range(20):
        periodic = _pulses(5.0, 120.0, rng, jitter=0.1, keep=0.7)
        noise = np.sort(rng.uniform(0, 120, 8) * NS_PER_S).astype(np.int64)
        found = find_periods(np.concatenate([periodic, noise]), (0, 120 * NS_PER_S))
        hits += bool(found) and abs(found[0].period_s - 5.0) < 0.2
    assert hits >= 18


def test_aperiodic_bursts_rarely_yield_a_period() -> None:
    """Poisson bursts at alpha = 0.01: false positives stay near the nominal rate."""
    rng = np.random.default_rng(11)
    false = 0
    trials = 300
    for _ in range(trials):
        times = np.sort(rng.uniform(0, 60, rng.integers(5, 40)) * NS_PER_S).astype(np.int64)
        false += bool(find_periods(times, (0, 60 * NS_PER_S)))
    assert false / trials <= 0.03


def test_a_knob_interval_is_confirmed_from_few_bursts() -> None:
    """Six writeback wakeups 5.12 s apart in 30 s: too few for a blind search, enough for 5 s."""
    times = ((4.27 + 5.12 * np.arange(6)) * NS_PER_S).astype(np.int64)
    assert find_periods(times, (0, 30 * NS_PER_S), knobs={}) == []
    (found,) = find_periods(times, (0, 30 * NS_PER_S))
    assert abs(found.period_s - 5.12) < 0.05
    assert found.p_value < 0.01
    assert abs(found.phase_s - 4.27) < 0.05


def test_too_few_bursts_or_too_short_a_span_give_nothing() -> None:
    assert (
        find_periods(np.array([0, 5 * NS_PER_S, 10 * NS_PER_S], dtype=np.int64), (0, 60 * NS_PER_S))
        == []
    )
    assert find_periods(np.arange(10, dtype=np.int64) * NS_PER_S, (0, 2 * NS_PER_S)) == []


def test_bursts_merge_events_closer_than_the_gap() -> None:
    t = np.array([0, 0.1, 0.2, 3.0, 3.05, 9.0]) * NS_PER_S
    assert (bursts(t.astype(np.int64), 0.5) / NS_PER_S).tolist() == [0.0, 3.0, 9.0]


def test_periods_are_named_after_the_knobs_they_match() -> None:
    assert matching_knobs(5.12) == ["vm.dirty_writeback_centisecs", "jbd2 commit interval"]
    assert matching_knobs(30.4) == ["vm.dirty_expire_centisecs"]
    assert matching_knobs(10.0, {"vm.dirty_writeback_centisecs": 10.0}) == [
        "vm.dirty_writeback_centisecs"
    ]
    assert matching_knobs(7.0) == []


@pytest.mark.skipif(not (SHARED_CAPTURES / "mq-writeback-60s").exists(), reason="needs ../shared")
def test_kworker_write_bursts_of_the_60s_capture_repeat_every_5_s(
    ingested: dict[Path, Path],
) -> None:
    ds = ingested[SHARED_CAPTURES / "mq-writeback-60s" / "blkparse.txt.zst"]
    con = Dataset(ds).con
    times = query_table(
        con,
        "SELECT time_ns FROM events WHERE action = 'Q' AND op = 'W' AND comm LIKE 'kworker/u%'",
    )["time_ns"].to_numpy()
    span = con.execute("SELECT min(time_ns), max(time_ns) FROM events").fetchall()[0]
    assert span is not None
    (period,) = find_periods(times, span)
    assert abs(period.period_s - 5.0) <= 0.2
    assert matching_knobs(period.period_s)[0] == "vm.dirty_writeback_centisecs"


def test_three_kworker_bursts_in_30_s_are_not_called_periodic(ingested: dict[Path, Path]) -> None:
    ds = ingested[capture_folder("mq-writeback-30s") / "blkparse.txt.zst"]
    con = Dataset(ds).con
    times = query_table(
        con, "SELECT time_ns FROM events WHERE action = 'Q' AND op = 'W' AND comm LIKE 'kworker/u%'"
    )["time_ns"].to_numpy()
    assert [round(b / NS_PER_S, 2) for b in bursts(times, 0.5)] == [19.71, 24.83, 30.46]
    assert find_periods(times, (0, 34_489_643_432)) == []


def _probe(spikes_s: np.ndarray, rng: np.random.Generator) -> duckdb.DuckDBPyConnection:
    """A prober's latency log: a sample every 20 ms, ~100 us, 5-20 ms around each spike."""
    t = np.arange(0, 60, 0.02)
    value = rng.normal(100, 10, t.size)
    for s in spikes_s:
        hit = (t >= s) & (t < s + 0.1)
        value[hit] = rng.uniform(5000, 20000, hit.sum())
    con = duckdb.connect()
    con.register("samples", {"t_ns": (t * NS_PER_S).astype(np.int64), "value": value})
    con.execute("CREATE TABLE series AS SELECT 'probe' AS series, t_ns, value FROM samples")
    return con


def test_a_user_series_with_5_s_spikes_has_that_period() -> None:
    rng = np.random.default_rng(5)
    con = _probe(np.arange(2.0, 60, 5.0) + rng.normal(0, 0.05, 12), rng)
    (row,) = user_series_periods(con, KNOBS)
    assert row["series"] == "user:probe" and row["dev_major"] is None
    assert abs(row["period_ns"] / NS_PER_S - 5.0) <= 0.2
    assert row["knobs"].startswith("vm.dirty_writeback_centisecs")


def test_a_user_series_with_random_spikes_has_none() -> None:
    rng = np.random.default_rng(6)
    assert user_series_periods(con=_probe(np.sort(rng.uniform(0, 59, 12)), rng), knobs=KNOBS) == []
