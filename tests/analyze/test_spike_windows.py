"""The spike windows from one read (internal._spike_window_tops) are _spike_windows' exactly,
and find_spikes gives the same rows whichever of the two it takes; the compiled windows
(rust/src/stats/spikes.rs, read with the heatmap's bios) are quantile_disc's, with the first
completed of a window's slowest as its peak."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import blkscope.analyze.findings as findings
from blkscope._core import SpikeWindowRows
from blkscope.analyze import compiled
from blkscope.analyze.findings import SpikeOptions, find_spikes
from blkscope.dataset import Dataset
from tests.analyze.test_q2q import _sample_inputs, _stream


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


# each window by its definition: quantile_disc's p99, and the slowest's completion, the first
# on a tie
DEFINED = """
SELECT g.dev_major, g.dev_minor, g.win, count(*) AS ios, quantile_disc(v, 0.99) AS p99_ns,
       max(v) AS max_ns, arg_max(c_time_ns, row(v, -c_time_ns)) AS peak_ns
FROM internal._spike_latencies({window_ns}, '{metric}')
GROUP BY g ORDER BY ALL
"""


@pytest.mark.slow
@pytest.mark.parametrize(("name", "inputs"), _sample_inputs(), ids=lambda v: str(v)[:40])
def test_compiled_windows_are_their_definition(
    tmp_path: Path, name: str, inputs: list[str]
) -> None:
    """Every sample and both fixtures, at the default options (which analyze stores) and
    others: the compiled windows, fed every bio as the pass writes them (those that never
    completed included)."""
    con = _stream(inputs, tmp_path / "ds", ("_spike_latencies",))
    batches = list(compiled._batches(con, "SELECT * FROM bios"))
    for window_ns, metric in ((1_000_000_000, "q2c"), (250_000_000, "d2c"), (10_000_000, "q2c")):
        rows = SpikeWindowRows(window_ns, metric)
        for batch in batches:
            rows.feed(batch)
        got = pa.table(pa.record_batch(rows.windows())).to_pylist()
        expected = con.sql(DEFINED.format(window_ns=window_ns, metric=metric)).fetchall()
        assert [tuple(r.values()) for r in got] == expected, (name, window_ns, metric)
    con.close()


def test_find_spikes_reads_the_analysis_windows(mq_dataset: Path) -> None:
    """The analysis's own windows (the default options) are read, not the bios: the same
    spikes as the SQL's, and another table under the name is what find_spikes judges."""
    with Dataset(mq_dataset) as ds:
        from_sql = find_spikes(ds.con, SpikeOptions())
        ds.con.execute(
            f"CREATE TABLE {findings.COMPILED_SPIKE_WINDOWS} AS SELECT * FROM "
            "internal._spike_windows(1000000000, 'q2c')"
        )
        assert find_spikes(ds.con, SpikeOptions()) == from_sql
        ds.con.execute(f"DELETE FROM {findings.COMPILED_SPIKE_WINDOWS}")
        assert [r for r in find_spikes(ds.con, SpikeOptions()) if r["metric"] == "q2c"] == []
    assert len(from_sql) > 0
