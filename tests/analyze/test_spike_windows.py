"""The spike windows from one read (internal._spike_window_tops) are _spike_windows' exactly,
and find_spikes gives the same rows whichever of the two it takes."""

from __future__ import annotations

from pathlib import Path

import pytest

import blkscope.analyze.findings as findings
from blkscope.analyze.findings import SpikeOptions, find_spikes
from blkscope.dataset import Dataset


@pytest.mark.parametrize("metric", ["q2c", "d2c"])
@pytest.mark.parametrize("window_ns", [1_000_000_000, 250_000_000, 10_000_000])
def test_the_slowest_kept_give_quantile_disc_p99(
    mq_dataset: Path, metric: str, window_ns: int
) -> None:
    with Dataset(mq_dataset) as ds:
        exact = ds.con.execute(
            f"SELECT * FROM internal._spike_windows({window_ns}, '{metric}') ORDER BY ALL"
        ).fetchall()
        # the most of any window's slowest that hold its p99: n - ceil(0.99 n) + 1
        (top,) = ds.con.execute(
            "SELECT max(n - (n * 990 + 999) // 1000 + 1) FROM (SELECT count(*) AS n FROM "
            f"internal._spike_latencies({window_ns}, '{metric}') GROUP BY g)"
        ).fetchall()[0]
        tops = ds.con.execute(
            f"SELECT * FROM internal._spike_window_tops({window_ns}, '{metric}', {top}) "
            "ORDER BY ALL"
        ).fetchall()
    assert len(exact) > 20
    assert tops == exact


def test_find_spikes_is_the_same_past_the_budget(
    mq_dataset: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    options = SpikeOptions(window_ns=250_000_000)
    with Dataset(mq_dataset) as ds:
        one_read = find_spikes(ds.con, options)
        monkeypatch.setattr(findings, "MAX_SLOWEST_HELD", 0)
        three_reads = find_spikes(ds.con, options)
    assert len(one_read) > 0
    assert one_read == three_reads
