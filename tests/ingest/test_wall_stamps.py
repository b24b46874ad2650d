"""One parser for the side logs' wall-clock stamps (ingest/logs/wall_stamps.py): round trips
against the standard library's own formatting, and the impossible stamps each log refuses."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from blkscope.errors import ParseError
from blkscope.ingest.logs.histogram import parse_histogram
from blkscope.ingest.logs.iostat_log import parse_timestamp
from blkscope.ingest.logs.wall_stamps import date_time_ns, time_of_day_ns
from blkscope.ingest.logs.writeback_log import parse_writeback

MOMENTS = st.datetimes(dt.datetime(1971, 1, 1), dt.datetime(2200, 1, 1)).map(
    lambda d: d.replace(microsecond=0, tzinfo=dt.timezone.utc)
)


@given(MOMENTS)
def test_every_printed_shape_reads_back_to_its_moment(when: dt.datetime) -> None:
    epoch_ns = int(when.timestamp()) * 1_000_000_000
    midnight = when.replace(hour=0, minute=0, second=0)
    since_midnight = int((when - midnight).total_seconds()) * 1_000_000_000
    assert time_of_day_ns(when.strftime("%H:%M:%S")) == since_midnight
    assert time_of_day_ns(when.strftime("%I:%M:%S %p")) == since_midnight  # old iostat
    assert date_time_ns(when.strftime("%Y-%m-%d %H:%M:%S")) == epoch_ns  # vmstat -t, bcc -j
    assert date_time_ns(when.strftime("%Y-%m-%dT%H:%M:%SZ")) == epoch_ns
    east = when.astimezone(dt.timezone(dt.timedelta(hours=8)))
    assert date_time_ns(east.strftime("%Y-%m-%dT%H:%M:%S%z")) == epoch_ns  # iostat -t ISO
    assert parse_timestamp(when.strftime("%m/%d/%Y %I:%M:%S %p")) == epoch_ns  # iostat -t US


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("24:00:00", "no such time of day: '24:00:00'"),
        ("13:00:00 PM", "no such time of day: '13:00:00 PM'"),
        ("10:60:00", "no such time of day: '10:60:00'"),
    ],
)
def test_impossible_times_of_day_are_refused(text: str, message: str) -> None:
    with pytest.raises(ValueError) as exc:
        time_of_day_ns(text)
    assert str(exc.value) == message


def test_text_of_another_shape_is_none_and_a_leap_second_is_read() -> None:
    assert [time_of_day_ns(t) for t in ("10:00", "@usecs:", "1:02:03:04")] == [None] * 3
    assert time_of_day_ns("23:59:60") == 86_400 * 1_000_000_000


def test_an_impossible_date_is_refused() -> None:
    with pytest.raises(ValueError) as exc:
        date_time_ns("2024-02-30 00:00:00")
    assert str(exc.value) == "no such date or time: '2024-02-30 00:00:00'"


def test_each_log_names_the_impossible_stamp_at_its_line(tmp_path: Path) -> None:
    hist = tmp_path / "hist.txt"
    hist.write_text("Attaching 1 probe...\n25:00:00\n@usecs:\n[1, 2)  1 |@|\n")
    with pytest.raises(ParseError) as exc:
        parse_histogram(str(hist))
    assert (exc.value.line, exc.value.reason) == (2, "no such time of day: '25:00:00'")
    wb = tmp_path / "wb.txt"
    wb.write_text("TIME DEVICE PAGES REASON ms\n24:00:01 8:0 10 periodic 1\n")
    with pytest.raises(ParseError) as exc:
        parse_writeback(str(wb))
    assert (exc.value.line, exc.value.reason) == (2, "TIME: expected HH:MM:SS, got '24:00:01'")
