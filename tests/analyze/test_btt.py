"""blkscope against btt: equal where btt is right, and the events that show where it is wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from blkscope.dataset import Dataset
from blkscope.ingest.block_events import ingest_blkparse
from blkscope.pipeline import analyze
from tests.analyze.btt_avg import read_btt_avg
from tests.analyze.conftest import DATA, capture

NOSPLIT = DATA / "nosplit-fio"


@pytest.fixture(scope="module")
def nosplit(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ds = tmp_path_factory.mktemp("nosplit") / "ds"
    ingest_blkparse([str(NOSPLIT / "blkparse.txt.zst")], ds)
    analyze(ds).close()
    return ds


def test_btt_avg_matches_without_splits(nosplit: Path) -> None:
    """On a capture without splits every btt stage (N, min, avg, max) agrees within 1%."""
    btt = read_btt_avg(NOSPLIT / "btt.avg")
    assert set(btt) == {"Q2Q", "Q2C", "Q2G", "G2I", "I2D", "D2C"}
    with Dataset(nosplit).con as con:
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
    with Dataset(analyzed["mq-writeback-30s"]).con as con:
        lines = dict(
            con.execute(
                "SELECT line_no, time_ns FROM events WHERE line_no IN (2273, 73707, 73708)"
            ).fetchall()
        )
        split_q = con.execute("""
            SELECT sector, nsectors, pieces, q2c_ns FROM bios
            WHERE q_eid = 2273""").fetchall()[0]
        read = con.execute("""
            SELECT flags, sector, nsectors, g_time_ns - q_time_ns, status FROM bios
            WHERE q_eid = 73707""").fetchall()[0]
        q2g_max = con.execute("""
            SELECT max_ns FROM stage_stats WHERE level = 'device' AND stage = 'Q2G'""").fetchall()[
            0
        ]
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
    with Dataset(analyzed["loop-split-merge"]).con as con:
        by_split = dict(
            con.execute("""
            SELECT split, count(q2c_ns) FROM bios GROUP BY split""").fetchall()
        )
        first = con.execute("""
            SELECT sector, nsectors, pieces, q_time_ns, c_time_ns, q2c_ns FROM bios
            WHERE q_eid = 7""").fetchall()[0]
        unsplit_d2c = con.execute("""
            SELECT count(*), avg(d2c_ns), max(d2c_ns) FROM bios WHERE NOT split""").fetchall()[0]
    assert by_split == {False: 24, True: 14491}
    assert first == (393216, 2048, 16, 106367446, 107201099, 833653)
    # where btt does see the bio, its D2C agrees with ours
    assert unsplit_d2c[0] == 24
    assert unsplit_d2c[1] / 1e9 == pytest.approx(btt["D2C"][1], rel=1e-6)
    assert unsplit_d2c[2] / 1e9 == btt["D2C"][2]


KYBER = DATA / "kyber-split-discard.blkparse.txt"


def test_btt_pairs_split_writes_with_a_discard_24_s_later(tmp_path: Path) -> None:
    """btt's Q2C max (23.94 s) and I2D max (23.92 s) on a kyber capture made for this test.

    fio wrote a file with 8 MiB bios that were split in two (`Q WS 37158912 + 16384`, X, two
    pieces done by 4.641805461) and `rm` discarded its blocks 24 s later (`Q DS 37093376 +
    131072`, C at 28.547824027). btt keeps a split Q in its tree, so the discard's C covering
    it completes it again: Q2C = 28.547824027 - 4.602893700 and, for the I of the second piece,
    I2D = 28.527423553 - 4.603173965. Over the whole 1.06 M-line capture (25 lines cut here)
    btt's Q2C mean is 7.85 ms; blkscope's is 0.131 ms (its max 43 ms).
    """
    btt = read_btt_avg(DATA / "kyber-mix.btt.avg")
    assert btt["Q2C"] == (1.7667e-05, 0.007850417, 23.944930327, 150892)
    assert btt["I2D"][2] == 23.924249588
    ds = tmp_path / "ds"
    ingest_blkparse([str(KYBER)], ds)
    with analyze(ds).con as con:
        times = {
            (action, sector, nsectors): t
            for action, sector, nsectors, t in con.execute(
                "SELECT action, sector, nsectors, time_ns FROM events"
            ).fetchall()
        }
        bios = con.execute("""
            SELECT op, sector, nsectors, pieces, status, q2c_ns FROM bios ORDER BY q_time_ns
            """).fetchall()
        i2d_max = con.execute(
            "SELECT max_ns FROM stage_stats WHERE level = 'device' AND stage = 'I2D'"
        ).fetchall()[0][0]
    discard_c, discard_d = times[("C", 37093376, 131072)], times[("D", 37093376, 131072)]
    assert discard_c - times[("Q", 37158912, 16384)] == 23_944_930_327
    assert discard_d - times[("I", 37167104, 8192)] == 23_924_249_588
    assert bios == [
        ("W", 37093376, 16384, 2, "completed", 17_695_723),
        ("W", 37158912, 16384, 2, "completed", 38_911_761),
        ("D", 37093376, 131072, 1, "completed", 20_456_264),
    ]
    # a bio's I2D runs from its first I to its requests' first D: 16.75 ms, not 23.92 s
    assert i2d_max == times[("D", 37158912, 8192)] - times[("I", 37158912, 8192)] == 16_752_308
