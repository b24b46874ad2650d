"""Invariants of the reconstruction on any window of a real trace (hypothesis picks the capture,
where the window starts and how long it is, so IOs are cut at both ends):
- every Q gets exactly one fate: one bios row per Q event, whose status says which;
- no stage is negative: each stage time of a bio comes at or after the one before it;
- every C of a data or flush request closes exactly one requests row."""

from __future__ import annotations

from pathlib import Path

import pytest
import zstandard
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from blkscope.ingest.block_events import ingest_blkparse
from blkscope.pipeline import analyze
from tests.analyze.conftest import DATA
from tests.conftest import FIXTURES


def _lines(path: Path) -> list[str]:
    raw = path.read_bytes()
    if path.suffix == ".zst":
        raw = zstandard.ZstdDecompressor().decompressobj().decompress(raw)
    lines = raw.decode().splitlines(keepends=True)
    # events only: a window that ends in blkparse's summary is another test's subject
    return [line for line in lines if line[:1] == " " or line[:1].isdigit()]


TRACES = {
    f"{path.parent.name}/{path.name}": _lines(path)
    for path in [
        *sorted(DATA.glob("*.blkparse.txt")),
        FIXTURES / "mq-writeback-30s" / "blkparse.txt.zst",
        FIXTURES / "loop-split-merge-tail" / "blkparse.txt.zst",
    ]
}

WINDOW = st.sampled_from(sorted(TRACES)).flatmap(
    lambda name: st.tuples(
        st.just(name),
        st.integers(0, max(0, len(TRACES[name]) - 40)),
        st.integers(40, 4000),
    )
)


@pytest.mark.slow
@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(WINDOW)
def test_every_q_has_one_fate_and_no_stage_is_negative(
    tmp_path_factory: pytest.TempPathFactory, window: tuple[str, int, int]
) -> None:
    name, start, length = window
    folder = tmp_path_factory.mktemp("window")
    trace = folder / "window.blkparse.txt"
    trace.write_text("".join(TRACES[name][start : start + length]))
    ingest_blkparse([str(trace)], folder / "ds")
    with analyze(folder / "ds").con as con:
        queued = con.sql(
            "SELECT (input_id::BIGINT << 40) + line_no FROM events WHERE action = 'Q' ORDER BY 1"
        ).fetchall()
        fates = con.sql("SELECT q_eid FROM bios ORDER BY 1").fetchall()
        assert fates == queued
        note(f"{len(queued)} Qs")
        statuses = con.sql(
            "SELECT DISTINCT status FROM bios WHERE status NOT IN ('completed', 'merged', 'partial')"
        ).fetchall()
        assert statuses == []
        negative = con.sql(
            """SELECT q_eid, q_time_ns, g_time_ns, i_time_ns, m_time_ns, d_time_ns, c_time_ns
               FROM bios WHERE g_time_ns < q_time_ns OR m_time_ns < q_time_ns
                 OR i_time_ns < g_time_ns OR d_time_ns < q_time_ns OR c_time_ns < q_time_ns
                 OR d2c_ns < 0 OR q2c_ns < 0 OR (status = 'partial') <> partial"""
        ).fetchall()
        assert negative == []
        assert con.sql("SELECT count(*) FROM stage_stats WHERE min_ns < 0").fetchall() == [(0,)]
        closed = con.sql(
            "SELECT c_eid, count(*) FROM requests WHERE c_eid IS NOT NULL "
            "AND kind IN ('data', 'flush') GROUP BY 1 HAVING count(*) > 1"
        ).fetchall()
        assert closed == []


def test_a_split_bio_whose_pieces_took_different_paths_has_no_i2d(tmp_path: Path) -> None:
    """Found by the test above: on loop-split-merge-tail, dd's 6 MiB bio at line 1 is split into
    96 pieces; 95 are dispatched at once (G then D, no I), the last is inserted (I) 517 us after
    the Q. Its earliest D (74 us) comes before its earliest I: the bio's I2D was -443,191 ns, an
    interval no piece spent. It now has no I2D (btt times I2D per piece), nor has the 8 MiB bio
    at line 262 (128 pieces, I 176,783 ns after its first D); stage_stats' I2D latencies on the
    capture are 6, all >= 0 (were 8, min -443,191)."""
    folder = tmp_path / "ds"
    ingest_blkparse([str(FIXTURES / "loop-split-merge-tail" / "blkparse.txt.zst")], folder)
    with analyze(folder).con as con:
        bio = con.sql("SELECT pieces, i_time_ns - d_time_ns FROM bios WHERE q_eid = 1").fetchall()
        assert bio == [(96, 443_191)]
        i2d = con.sql(
            "SELECT n, min_ns FROM stage_stats WHERE level = 'device' AND stage = 'I2D'"
        ).fetchall()
        assert i2d == [(6, 3_094)]
