"""What the page draws is what the tables hold, on the bundled real capture: one writeback
event per work item and only the device's own, the periodogram of exactly the periods table's
series, the depth table's depth, one op class per bio everywhere, wall-clock axes that match
clock.txt."""

from __future__ import annotations

import datetime as dt
import re

import numpy as np
import pyarrow as pa
import pytest

from blkscope.analyze.views import query_table
from blkscope.concepts import arrow_writeback_queue
from blkscope.dataset import Dataset
from blkscope.reports.make_report import Written
from blkscope.reports.model import Device, load_report
from blkscope.reports.timeline import clock_doc, device_timeline
from tests.clock_truth import trace_zero_mono
from tests.reports.conftest import MQ30_CAPTURE


@pytest.fixture(scope="module")
def device(mq_report: Written) -> Device:
    (dev,) = load_report(Dataset(mq_report.dataset)).devices
    return dev


def _section(html: str, key: str) -> str:
    start = html.index(f'data-chart="{key}"')
    return html[start : html.index("</section>", start)]


def _monotonic_log(device: str) -> np.ndarray:
    """End times of writeback_ns.txt's rows for one device, on the trace timeline: its
    CLOCK_MONOTONIC stamps minus the blktrace binaries' first record time (independent of
    blkscope's clock model)."""
    zero = trace_zero_mono(MQ30_CAPTURE)
    rows = [line.split() for line in (MQ30_CAPTURE / "writeback_ns.txt").read_text().splitlines()]
    return np.array([int(r[0]) - zero for r in rows if len(r) == 5 and r[1] == device])


def test_one_writeback_event_per_work_item_and_only_the_devices_own(
    mq_report: Written, device: Device
) -> None:
    """Both logs recorded all 72 of vda's work items (144 rows): the page draws 72, at the exact
    monotonic times, and none of loop0's 7."""
    with Dataset(mq_report.dataset).con as con:
        logged = con.execute(
            "SELECT clock, count(*) FROM writeback WHERE device = '254:0' GROUP BY ALL ORDER BY 1"
        ).fetchall()
        loop0 = con.execute("SELECT count(*) FROM writeback_events WHERE dev_major = 7").fetchall()
    assert logged == [("monotonic", 72), ("time_of_day", 72)]
    assert loop0 == [(7,)]
    drawn = np.array([w["end"] for w in device_timeline(device, 0)[0]["writeback"]])
    assert drawn.size == 72
    assert np.array_equal(drawn, _monotonic_log("254:0"))  # integer ns, as logged
    assert not set(_monotonic_log("7:0").tolist()) & set(drawn.tolist())


def test_the_periodogram_draws_exactly_the_periods_tables_series(
    mq_report: Written, device: Device
) -> None:
    with Dataset(mq_report.dataset).con as con:
        periods = con.execute(
            "SELECT series, period_ns, method FROM periods WHERE dev_major = 254 ORDER BY p_value"
        ).fetchall()
        table = con.execute(
            "SELECT series, period_ns, z2 FROM periodogram WHERE dev_major = 254 ORDER BY ALL"
        ).fetchnumpy()
    section = _section(mq_report.report.read_text(), "periodogram")
    titles = re.findall(r">(\w+): (\d+\.\d\d) s = ", section)
    assert [(s, float(p)) for s, p in titles] == [
        (series, round(period / 1e9, 2)) for series, period, _ in periods
    ]
    assert [s for s, _, _ in periods] == ["kworker_writes", "writeback_events"]
    for series, period_ns, method in periods:
        spec = device.spectra[series]
        sel = table["series"] == series
        assert np.array_equal(spec.z2, table["z2"][sel])  # drawn as stored
        if method == "periodogram":  # its own highest peak is the period found
            peak = spec.period_s[int(np.argmax(spec.z2))]
            assert abs(peak - period_ns / 1e9) / (period_ns / 1e9) < 0.03


def test_the_depth_chart_is_the_depth_table(mq_report: Written, device: Device) -> None:
    """Time-weighted over the trace, the chart's per-bin means give the depth table's mean, and
    its per-bin maxima its maximum; requeues (126 here) take requests back out of the driver."""
    with Dataset(mq_report.dataset).con as con:
        ((mean, top),) = con.execute(
            "SELECT sum(depth * held_ns) / sum(held_ns), max(depth) FILTER (held_ns > 0) "
            "FROM depth WHERE level = 'driver'"
        ).fetchall()
        traced = con.execute(
            "SELECT bin, traced_ns FROM depth_bins WHERE level = 'driver' ORDER BY bin"
        ).fetchnumpy()
        naive = con.execute(
            "SELECT sum(coalesce(c_time_ns, (SELECT max(time_ns) FROM events)) - first_d_time_ns)"
            " / (max(c_time_ns) - min(first_d_time_ns)) FROM requests "
            "WHERE first_d_time_ns IS NOT NULL"
        ).fetchall()[0][0]
    drawn = device.depth["driver"]
    weights = np.zeros(device.bins.count)
    weights[traced["bin"]] = traced["traced_ns"]
    assert np.isclose((drawn.mean * weights).sum() / weights.sum(), mean, rtol=1e-9)
    assert drawn.max.max() == top == 81
    # the old chart counted each request from its first D to its C, requeue gaps included
    assert not np.isclose(naive, mean, rtol=1e-3)


def test_one_op_class_per_bio_everywhere(mq_report: Written) -> None:
    """The 1,506 data-less preflush bios (Q FWS) are flushes in every view, and ingest's
    writeback filter picks the same Q events as the SQL one."""
    with Dataset(mq_report.dataset).con as con:
        counts = con.execute("""
            SELECT
              (SELECT count(*) FROM internal._bio_class WHERE op_base = 'flush'),
              (SELECT queued FROM io_ratios WHERE op = 'flush'),
              (SELECT n FROM stage_stats WHERE level = 'op' AND op_class = 'flush'
                 AND stage = 'Q2C'),
              (SELECT sum(n) FROM latency_hist WHERE op_class = 'flush' AND stage = 'Q2C'),
              (SELECT count(*) FROM bios WHERE flags = 'FWS' AND sector IS NULL)""").fetchall()
        windows = con.execute(
            "SELECT sum(ios) FROM internal._window_latency WHERE op_class = 'flush' AND stage = 'Q2C'"
        ).fetchall()
        unpartial = con.execute(
            "SELECT count(*) FROM bios WHERE op_class(op, flags, sector) = 'flush' "
            "AND NOT partial AND q2c_ns IS NOT NULL"
        ).fetchall()
        events = query_table(con, "SELECT * FROM events WHERE action = 'Q'")
        sql_wb = con.execute(
            "SELECT count(*) FROM events WHERE action = 'Q' "
            "AND is_writeback_write(comm, op, rwbs, sector)"
        ).fetchall()
    assert counts == [(1506, 1506, 1506, 1506, 1506)]
    assert windows == unpartial
    arrow_wb = int(pa.compute.sum(arrow_writeback_queue(events)).as_py())
    assert (arrow_wb,) == sql_wb[0] and arrow_wb == 388


def test_the_wall_clock_the_script_draws_matches_clock_txt(mq_report: Written) -> None:
    """clock.txt pairs CLOCK_MONOTONIC with the wall clock; the binaries' first record is the
    trace's zero on CLOCK_MONOTONIC. The page's script labels its wall-clock axis and tooltips
    from trace zero's second of the day (test_browser.py reads the labels it draws)."""
    mono, wall = (int(v) for v in (MQ30_CAPTURE / "clock.txt").read_text().split())
    zero = trace_zero_mono(MQ30_CAPTURE)
    clock = load_report(Dataset(mq_report.dataset)).clock
    doc = clock_doc(clock)
    wall_zero_ns = wall + (zero - mono)
    assert abs(doc["zero_day_s"] * 1e9 - wall_zero_ns % (86_400 * 10**9)) < 1_000  # 1 us
    when = dt.datetime.fromtimestamp(wall_zero_ns / 1e9, dt.timezone.utc)
    assert when.strftime("%H:%M:%S.%f")[:12] == "23:37:49.326"
    assert (doc["known"], doc["zone"]) == (True, None)


def test_device_names_come_with_major_minor(mq_report: Written) -> None:
    """No capture.json here: the name comes from the biosnoop log whose rows matched 254,0."""
    html = mq_report.report.read_text()
    assert "<h2>Device vda (254,0)</h2>" in html
    assert "Name from biosnoop log, matched by sector." in html
    assert mq_report.summary_doc["devices"][0]["name"] == "vda"
