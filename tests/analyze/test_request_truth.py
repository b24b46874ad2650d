"""Per-request D2C against the kernel-tracepoint biosnoop log of the same capture."""

from __future__ import annotations

from pathlib import Path

import pytest

from blkscope.dataset import Dataset
from tests.analyze.biosnoop import match_biosnoop, read_biosnoop
from tests.analyze.conftest import capture


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "disk", "sized"),
    [
        ("mq-writeback-30s", "vda", 9256),
        ("loop-split-merge", "loop0", 234645),
        ("mq-writeback-60s", "vda", 29120),
    ],
)
def test_d2c_matches_biosnoop(analyzed: dict[str, Path], name: str, disk: str, sized: int) -> None:
    snoop = read_biosnoop(capture(name) / "biosnoop.txt.zst", disk)
    with Dataset(analyzed[name]).con as con:
        got = match_biosnoop(con, snoop)
    assert got["sized"] == sized
    assert got["found_share"] >= 0.98
    assert got["agree_share"] >= 0.99
    # the probe's zero is its own start, a second or two away from the trace's first event
    assert 0.5e9 < abs(got["offset_ns"]) < 3e9
