"""blkscope against btt: equal where btt is right, and the events that show where it is wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from blkscope.analyze.build import analyze_dataset
from blkscope.analyze.views import connect
from blkscope.ingest.blkparse_ingest import ingest_blkparse
from tests.analyze.btt_avg import read_btt_avg
from tests.analyze.conftest import DATA, capture

NOSPLIT = DATA / "nosplit-fio"


@pytest.fixture(scope="module")
def nosplit(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ds = tmp_path_factory.mktemp("nosplit") / "ds"
    ingest_blkparse([str(NOSPLIT / "blkparse.txt.zst")], ds)
    analyze_dataset(ds).close()
    return ds


def test_btt_avg_matches_without_splits(nosplit: Path) -> None:
    """On a capture without splits every btt stage (N, min, avg, max) agrees within 1%."""
    btt = read_btt_avg(NOSPLIT / "btt.avg")
    assert set(btt) == {"Q2Q", "Q2C", "Q2G", "G2I", "I2D", "D2C"}
    with connect(nosplit) as con:
        ours = {
            s: (mn / 1e9, mean / 1e9, mx / 1e9, n)
            for s, mn, mean, mx, n in con.execute(
                "SELECT stage, min_ns, mean_ns, max_ns, n FROM stage_stats WHERE level = 'device'"
            ).fetchall()
        }
    for stage, (b_min, b_avg, b_max, b_n) in btt.items():
        o_min, o_avg, o_max, o_n = ours[stage]
        assert o_n == pytest.approx(b_n, rel=0.01), stage
        assert o_min == pytest.approx(b_min, rel=0.01), stage
        assert o_avg == pytest.approx(b_avg, rel=0.01), stage
        assert o_max == pytest.approx(b_max, rel=0.01), stage
    assert ours["D2C"][3] == 9726 and ours["D2C"][2] == 0.026817689


def test_btt_multi_second_q2g_is_a_stale_split_q(analyzed: dict[str, Path]) -> None:
    """btt's Q2G max on mq-writeback-30s (29.36 s) pairs a 4 KiB read's G with a split write's Q.

    btt never removes a Q whose range is not inside one D (a split Q), refuses to insert a new Q
    at a start sector already in its tree, and finds a G's Q by range. So the G of a read at
    32.116902707 (line 73708) pairs with the split `Q WS 36847616 + 16384` of 2.752096470
    (line 2273). blkscope pairs the G with the read's own Q 17.5 us earlier (line 73707).
    """
    btt = read_btt_avg(capture("mq-writeback-30s") / "btt" / "btt.avg")
    assert btt["Q2G"][2] == 29.364806237 and btt["Q2G"][1] > 4.5  # seconds
    with connect(analyzed["mq-writeback-30s"]) as con:
        lines = dict(
            con.execute(
                "SELECT line_no, time_ns FROM events WHERE line_no IN (2273, 73707, 73708)"
            ).fetchall()
        )
        split_q = con.execute("""
            SELECT sector, nsectors, pieces, q2c_ns FROM bios
            WHERE q_eid = 2273""").fetchone()
        read = con.execute("""
            SELECT flags, sector, nsectors, g_time_ns - q_time_ns, status FROM bios
            WHERE q_eid = 73707""").fetchone()
        q2g_max = con.execute("""
            SELECT max_ns FROM stage_stats WHERE level = 'device' AND stage = 'Q2G'""").fetchone()
    assert (lines[73708] - lines[2273]) / 1e9 == 29.364806237
    assert split_q == (36847616, 16384, 2, 31808301)  # done 31.8 ms after its Q
    assert read == ("RS", 36853744, 8, 17506, "completed")
    assert q2g_max[0] < 5_000_000  # < 5 ms, not seconds


def test_btt_drops_split_ios(analyzed: dict[str, Path]) -> None:
    """On loop-split-merge btt has Q2C/D2C for 24 bios; 14491 split bios are dropped.

    The first Q (`Q WS 393216 + 2048` at 0.106367446, line 7) is split by 15 X into 16 pieces
    of 128 sectors whose last C is `C WS 395136 + 128` at 0.107201099 (line 222): Q2C 833653 ns.
    """
    btt = read_btt_avg(capture("loop-split-merge") / "btt" / "btt.avg")
    assert btt["Q2C"][3] == btt["D2C"][3] == 24
    with connect(analyzed["loop-split-merge"]) as con:
        by_split = dict(
            con.execute("""
            SELECT split, count(q2c_ns) FROM bios GROUP BY split""").fetchall()
        )
        first = con.execute("""
            SELECT sector, nsectors, pieces, q_time_ns, c_time_ns, q2c_ns FROM bios
            WHERE q_eid = 7""").fetchone()
        unsplit_d2c = con.execute("""
            SELECT count(*), avg(d2c_ns), max(d2c_ns) FROM bios WHERE NOT split""").fetchone()
    assert by_split == {False: 24, True: 14491}
    assert first == (393216, 2048, 16, 106367446, 107201099, 833653)
    # where btt does see the bio, its D2C agrees with ours
    assert unsplit_d2c[0] == 24
    assert unsplit_d2c[1] / 1e9 == pytest.approx(btt["D2C"][1], rel=1e-6)
    assert unsplit_d2c[2] / 1e9 == btt["D2C"][2]
