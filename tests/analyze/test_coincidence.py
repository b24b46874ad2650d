"""A period from bursts that overlap periodic writeback events: synthetic truth and noise, and
the 30 s capture whose 3 flusher bursts no periodogram can call periodic."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from blkscope.analyze.coincidence import coincident_period
from blkscope.analyze.periodicity import Period
from blkscope.dataset import Dataset
from blkscope.ingest.folder import ingest_folder
from blkscope.pipeline import analyze
from blkscope.units import NS_PER_S

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "mq-writeback-30s"
SPAN = (0, 30 * NS_PER_S)
REFERENCE = Period(period_s=5.0, strength=1.0, p_value=1e-3, phase_s=1.0, cycles=6.0, bursts=6)


def _windows(starts_s: list[float], length_s: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    lo = (np.array(starts_s) * NS_PER_S).astype(np.int64)
    return lo, lo + int(length_s * NS_PER_S)


def _burst_events(starts_s: list[float], length_s: float = 0.1) -> np.ndarray:
    return np.concatenate([np.linspace(s, s + length_s, 10) * NS_PER_S for s in starts_s]).astype(
        np.int64
    )


def test_three_bursts_on_the_wakeups_take_their_period() -> None:
    wakeups = _windows([1.0, 6.0, 11.0, 16.0, 21.0, 26.0])
    found = coincident_period(_burst_events([16.0, 21.02, 26.01]), wakeups, REFERENCE, SPAN)
    assert found is not None
    assert found.period_s == 5.0 and found.strength == 1.0 and found.bursts == 3
    # each 0.1 s burst overlaps a 0.05 s window +-50 ms with chance 6 x 0.25 s / 29.9 s
    assert 1e-4 < found.p_value < 2e-4


def test_bursts_away_from_the_wakeups_take_nothing() -> None:
    wakeups = _windows([1.0, 6.0, 11.0, 16.0, 21.0, 26.0])
    assert coincident_period(_burst_events([3.0, 8.5, 19.0]), wakeups, REFERENCE, SPAN) is None
    # two of three on a wakeup (p = 0.007) is not most of them
    assert coincident_period(_burst_events([6.0, 11.0, 19.0]), wakeups, REFERENCE, SPAN) is None


def test_random_bursts_rarely_overlap_beyond_chance() -> None:
    """Random wakeup logs and random bursts: at alpha 0.01 at most 2% false periods."""
    rng = np.random.default_rng(7)
    hits = 0
    for _ in range(300):
        wakeups = _windows(sorted(rng.uniform(0, 29.5, rng.integers(3, 12)).tolist()), 0.3)
        bursts = _burst_events(sorted(rng.uniform(0, 29.5, rng.integers(3, 7)).tolist()), 0.3)
        hits += coincident_period(bursts, wakeups, REFERENCE, SPAN) is not None
    assert hits <= 6


def test_the_30_s_capture_folder_finds_the_kworker_period_from_the_writeback_log(
    tmp_path: Path,
) -> None:
    ds = tmp_path / "ds"
    ingest_folder(FIXTURE, ds)
    analyze(ds).close()
    with Dataset(ds).con as con:
        rows = con.execute(
            "SELECT series, period_ns, strength, p_value, bursts, method, knobs FROM periods"
        ).fetchall()
    (kworker,) = [r for r in rows if r[0] == "kworker_writes"]
    (wakeups,) = [r for r in rows if r[0] == "writeback_events"]
    assert kworker[1] == wakeups[1] == 5_121_936_860  # the flusher's 5.12 s
    assert kworker[2:6] == (1.0, pytest.approx(2.54e-4, rel=0.01), 3, "writeback_events")
    assert kworker[6].startswith("vm.dirty_writeback_centisecs")
    assert wakeups[5] == "periodogram"
