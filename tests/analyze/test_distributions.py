"""Depth step functions, latency histograms, size/seek distributions, ratios: exact identities."""

from __future__ import annotations

from pathlib import Path

import pytest

from blkscope.dataset import Dataset
from blkscope.ingest.block_events import ingest_blkparse
from blkscope.pipeline import analyze
from tests.analyze.conftest import DATA


@pytest.fixture(scope="module")
def nosplit(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ds = tmp_path_factory.mktemp("nosplit") / "ds"
    ingest_blkparse([str(DATA / "nosplit-fio" / "blkparse.txt.zst")], ds)
    analyze(ds).close()
    return ds


def test_depth_integral_is_littles_law(nosplit: Path) -> None:
    """Without requeues or cut IOs, the area under the D..C depth curve is the sum of D2C,
    and under the Q..C curve the sum of Q2C, to the nanosecond."""
    with Dataset(nosplit).con as con:
        area = dict(
            con.execute(
                "SELECT level, sum(depth::BIGINT * held_ns) FROM depth GROUP BY level"
            ).fetchall()
        )
        d2c, q2c = con.execute("SELECT sum(d2c_ns), sum(q2c_ns) FROM bios").fetchall()[0]
        span = con.execute("SELECT max(time_ns) FROM events").fetchall()[0][0]
        held = dict(con.execute("SELECT level, sum(held_ns) FROM depth GROUP BY level").fetchall())
        maxima = dict(
            con.execute(
                "SELECT level, max(depth) FROM depth WHERE held_ns > 0 GROUP BY level"
            ).fetchall()
        )
    assert area == {"driver": d2c, "queue": q2c}
    assert held == {"driver": span, "queue": span}
    assert maxima == {"driver": 3, "queue": 3}


def test_depth_mq30(analyzed: dict[str, Path]) -> None:
    with Dataset(analyzed["mq-writeback-30s"]).con as con:
        rows = con.execute("""SELECT level, max(depth), min(depth), sum(share)
                              FROM depth GROUP BY level ORDER BY level""").fetchall()
    assert [(lv, mx, mn) for lv, mx, mn, _ in rows] == [("driver", 81, 0), ("queue", 101, 0)]
    assert all(share == pytest.approx(1.0) for *_, share in rows)


def test_latency_hist_sums_to_stage_counts(analyzed: dict[str, Path]) -> None:
    with Dataset(analyzed["mq-writeback-30s"]).con as con:
        bad = con.execute("""
            SELECT count(*) FROM (
                SELECT h.stage, sum(h.n) AS n, min(h.lo_ns) AS lo, max(h.hi_ns) AS hi
                FROM latency_hist h WHERE h.op_class = '*' GROUP BY h.stage) h
            JOIN stage_stats s ON s.level = 'device' AND s.stage = h.stage
            WHERE h.n <> s.n OR s.min_ns < h.lo OR s.max_ns >= h.hi""").fetchall()[0][0]
        d2c = con.execute("""SELECT lo_ns, n FROM latency_hist
                             WHERE op_class = '*' AND stage = 'D2C' ORDER BY n DESC LIMIT 1""")
        assert d2c.fetchall()[0] == (32768, 4921)
    assert bad == 0


def test_io_dist_and_ratios(analyzed: dict[str, Path]) -> None:
    with Dataset(analyzed["mq-writeback-30s"]).con as con:
        d_sizes = con.execute(
            "SELECT sum(n), sum(total) FROM io_dist WHERE metric = 'd_size'"
        ).fetchall()[0]
        d_events = con.execute("""SELECT count(*), sum(nsectors) FROM events
                                  WHERE action = 'D' AND nsectors > 0""").fetchall()[0]
        ratios = {
            r[0]: r[1:]
            for r in con.execute("""
            SELECT op, queued, dispatches, requeues, split_bios FROM io_ratios""").fetchall()
        }
    assert d_sizes == d_events
    assert ratios == {  # op classes: the data-less Q FWS and D FN are both flushes
        "discard": (39, 39, 0, 0),
        "flush": (1506, 1506, 0, 0),
        "read": (5988, 5985, 4, 0),
        "write": (3506, 3792, 122, 256),
    }


def test_stage_stats_levels_add_up(analyzed: dict[str, Path]) -> None:
    """Per-process counts add up to their class, classes to ops, ops to the device (not Q2Q:
    its gaps are taken within each level)."""
    with Dataset(analyzed["mq-writeback-30s"]).con as con:
        sums = dict(
            con.execute("""
            SELECT level, sum(n) FROM stage_stats WHERE stage = 'Q2C' GROUP BY level""").fetchall()
        )
        writers = con.execute("""
            SELECT process, n FROM stage_stats WHERE level = 'process' AND stage = 'Q2C'
              AND op_class = 'write' ORDER BY n DESC LIMIT 2""").fetchall()
    assert sums == {"process": 11039, "class": 11039, "op": 11039, "device": 11039}
    assert writers[0][0].startswith("kworker/")


@pytest.mark.parametrize(
    "name", ["mq30-requeue", "loop-flush-split", "synthetic-dm-remap", "kyber-split-discard"]
)
def test_the_row_counts_are_bios_and_requests_grouped(tmp_path: Path, name: str) -> None:
    """bio_counts and request_counts, counted by the pass as it writes the rows, hold what
    grouping the stored bios and requests gives: the summary and io_ratios read them instead."""
    ds = tmp_path / "ds"
    ingest_blkparse([str(DATA / f"{name}.blkparse.txt")], ds)
    analyze(ds).close()
    with Dataset(ds).con as con:
        bios = con.execute("""
            SELECT dev_major, dev_minor, op_class(op, flags, sector), count(*),
                   count(*) FILTER (merged), count(*) FILTER (split), sum(pieces - 1),
                   count(*) FILTER (partial)
            FROM bios GROUP BY ALL ORDER BY ALL""").fetchall()
        requests = con.execute("""
            SELECT dev_major, dev_minor, op_class(op, flags, sector), kind, count(*),
                   sum(dispatches), count(c_time_ns), sum(requeues), count(*) FILTER (partial)
            FROM requests GROUP BY ALL ORDER BY ALL""").fetchall()
        assert con.execute("SELECT * FROM bio_counts ORDER BY ALL").fetchall() == bios
        assert con.execute("SELECT * FROM request_counts ORDER BY ALL").fetchall() == requests
    assert bios and len(requests) >= 2  # classes or kinds to tell apart
