"""Per-request D2C against the kernel-tracepoint biosnoop log of the same capture."""

from __future__ import annotations

from pathlib import Path

import pytest

from blkscope.analyze.views import connect
from tests.analyze.biosnoop import match_biosnoop, read_biosnoop
from tests.analyze.conftest import capture


@pytest.mark.parametrize(("name", "disk", "sized"), [
    ("mq-writeback-30s", "vda", 9256),
    ("loop-split-merge", "loop0", 234645),
])
def test_d2c_matches_biosnoop(analyzed: dict[str, Path], name: str, disk: str, sized: int) -> None:
    snoop = read_biosnoop(capture(name) / "biosnoop.txt.zst", disk)
    with connect(analyzed[name]) as con:
        got = match_biosnoop(con, snoop)
    assert got["sized"] == sized
    assert got["found_share"] >= 0.98
    assert got["agree_share"] >= 0.99
    # the probe's zero is its own start, a second or two away from the trace's first event
    assert 0.5e9 < abs(got["offset_ns"]) < 3e9


def test_naive_latest_d_join_fails(analyzed: dict[str, Path]) -> None:
    """Why pairing is per segment: 'latest D on the same sector before C' mispairs requeues."""
    with connect(analyzed["mq-writeback-30s"]) as con:
        requeued = con.execute("""
            SELECT sector, nsectors, first_d_time_ns, d_time_ns, c_time_ns, d2c_ns, requeues
            FROM requests WHERE requeues > 0 ORDER BY c_time_ns LIMIT 1""").fetchone()
    assert requeued is not None
    sector, nsectors, first_d, last_d, c, d2c, requeues = requeued
    assert requeues >= 1 and first_d < last_d < c and d2c == c - last_d
