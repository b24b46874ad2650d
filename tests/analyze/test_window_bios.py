"""The findings' window bios (evidence.WindowBios): each episode's window gets exactly the bios in
flight in it, in queue order, and windows that overlap each get their own rows."""

from __future__ import annotations

import duckdb
import numpy as np
import pytest

from blkscope.analyze import evidence

TRACE_END = 1_000

# (dev_major, dev_minor, pid, comm, op, q, d, c, nsectors): c NULL never completed
BIOS = [
    (8, 0, 1, "fio", "R", 10, 12, 50, 8),
    (8, 0, 2, "kworker", "W", 40, 45, 90, 16),
    (8, 0, 1, "fio", "R", 60, None, None, 8),
    (8, 16, 3, "dd", "W", 20, 25, 30, None),
    (8, 16, 3, "dd", "W", 70, 71, 200, 256),
    (8, 0, 4, None, "R", 300, 301, 310, 8),
]

# (dev_major, dev_minor, lo, hi) or None (no slow item): overlapping, on both devices
WINDOWS = [
    (8, 0, 0, 55),
    None,
    (8, 0, 45, 100),
    (8, 16, 0, 1_000),
    (8, 0, 0, 1_000),
    (8, 16, 100, 150),
]


@pytest.fixture
def con() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE bios (dev_major INT, dev_minor INT, pid INT, comm VARCHAR, op VARCHAR, "
        "flags VARCHAR, sector BIGINT, q_time_ns BIGINT, d_time_ns BIGINT, c_time_ns BIGINT, "
        "nsectors INT, q_eid BIGINT)"
    )
    # stored out of queue order (the event ids run backwards)
    con.executemany(
        "INSERT INTO bios VALUES (?, ?, ?, ?, ?, '', 0, ?, ?, ?, ?, ?)",
        [[*b, 1_000 - q] for q, b in enumerate(BIOS)],
    )
    con.execute("CREATE MACRO is_writeback_write(comm, op, flags, sector) AS comm = 'kworker'")
    con.execute("CREATE MACRO is_journal(comm) AS comm = 'jbd2'")
    return con


def _expected(window: tuple[int, int, int, int]) -> list[int]:
    """The q times of the bios in flight in window, by their definition."""
    major, minor, lo, hi = window
    return [
        b[5]
        for b in BIOS
        if (b[0], b[1]) == (major, minor) and b[5] < hi and (b[7] is None or b[7] > lo)
    ]


def test_each_window_gets_its_own_bios_in_queue_order(con: duckdb.DuckDBPyConnection) -> None:
    bios = evidence.WindowBios(con, TRACE_END, WINDOWS)
    for k, window in enumerate(WINDOWS):
        if window is None:
            continue
        cols = bios.of(k)
        assert cols["q"].tolist() == _expected(window)[::-1]  # by event id
        open_ = cols["open"]
        assert cols["c"][open_].tolist() == [TRACE_END] * int(open_.sum())
        assert set(cols) == {
            "pid", "comm", "op", "q", "d", "c", "open", "bytes", "writeback", "journal"
        }  # fmt: skip
    assert _expected((8, 0, 0, 55)) == [10, 40]  # the fixture exercises what it means to


def test_a_bio_that_never_completed_is_in_flight_until_the_trace_end(
    con: duckdb.DuckDBPyConnection,
) -> None:
    bios = evidence.WindowBios(con, TRACE_END, WINDOWS)
    cols = bios.of(2)  # (8, 0) from 45 to 100: fio's read queued at 60 never completed
    assert cols["q"].tolist() == [60, 40, 10]
    assert cols["open"].tolist() == [True, False, False]
    assert cols["d"].tolist() == [60, 45, 12]  # never dispatched: its queue time
    assert cols["c"].tolist() == [TRACE_END, 90, 50]
    assert cols["bytes"].tolist() == [4096, 8192, 4096]
    assert cols["writeback"].tolist() == [False, True, False]
    assert cols["comm"].tolist() == ["fio", "kworker", "fio"]
    assert bios.of(0)["q"].tolist() == [40, 10]  # queued after the window: not in it


def test_overlapping_windows_do_not_share_rows(con: duckdb.DuckDBPyConnection) -> None:
    bios = evidence.WindowBios(con, TRACE_END, WINDOWS)
    first = bios.of(0)
    first["q"][:] = -1  # a copy: the overlapping window 4 still sees the real times
    overlapping = WINDOWS[4]
    assert overlapping is not None
    assert sorted(bios.of(4)["q"].tolist()) == _expected(overlapping)
    assert np.all(first["q"] == -1)


def test_windows_that_overlap_or_touch_share_a_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(evidence, "WINDOWS_PER_READ", 2)
    windows = [
        (8, 0, 50, 60),  # touches the first: shares its read, which is then full
        None,
        (8, 0, 0, 50),
        (8, 16, 55, 70),  # another device: its own read
        (8, 0, 55, 58),  # overlaps, but the read of the first two is full
        (8, 0, 100, 200),  # after a gap
    ]
    assert evidence._reads(windows) == [0, None, 0, 3, 1, 2]


def test_a_shared_read_gives_each_window_what_its_own_query_gives(
    con: duckdb.DuckDBPyConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    con.execute("DELETE FROM bios WHERE comm IS NULL")  # a null makes each window read alone
    shared = evidence.WindowBios(con, TRACE_END, WINDOWS)
    assert shared.read_of == [0, None, 0, 1, 0, 1]
    monkeypatch.setattr(evidence, "WINDOWS_PER_READ", 1)
    alone = evidence.WindowBios(con, TRACE_END, WINDOWS)
    for k in (4, 0, 3, 2, 5):  # out of time order: each read is held until its last window
        mine, theirs = shared.of(k), alone.of(k)
        assert {n: (v.dtype, v.tolist()) for n, v in mine.items()} == {
            n: (v.dtype, v.tolist()) for n, v in theirs.items()
        }
    assert not shared._held


def test_a_read_with_a_null_is_read_per_window(con: duckdb.DuckDBPyConnection) -> None:
    bios = evidence.WindowBios(con, TRACE_END, WINDOWS)
    assert bios.of(4)["comm"].tolist() == ["?", "fio", "kworker", "fio"]
    assert bios._held == {0: None}  # the null-comm bio's writeback flag is null
    assert bios.of(0)["q"].tolist() == [40, 10]
