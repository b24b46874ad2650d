"""The time charts' data on the bundled capture: what the page's script draws is the tables'
rows, the notes under the charts say what the observer's IO and the axes do, and the readability
fixes of issue 34 hold (no solid band of flushes, no observer-driven axis note, round LBA cells)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from blkscope.dataset import Dataset
from blkscope.reports.make_report import Written
from blkscope.reports.model import Device, load_report
from blkscope.reports.timeline import _floats, device_timeline, log_axis_note


@pytest.fixture(scope="module")
def device(mq_report: Written) -> Device:
    (dev,) = load_report(Dataset(mq_report.dataset)).devices
    return dev


@pytest.fixture(scope="module")
def timeline(device: Device) -> tuple[dict[str, Any], dict[str, list[str]]]:
    return device_timeline(device, 0)


def test_the_heat_map_document_is_the_table(
    mq_report: Written, timeline: tuple[dict[str, Any], dict[str, list[str]]]
) -> None:
    doc, _ = timeline
    with Dataset(mq_report.dataset).con as con:
        for stage in ("D2C", "Q2C"):
            rows = con.execute(
                "SELECT bin, lo_ns, hi_ns, n, observer_n, max_ns, slowest_comm FROM "
                f"latency_heatmap WHERE stage = '{stage}' ORDER BY bin, bucket"
            ).fetchall()
            cells = doc["heatmap"][stage]
            drawn = list(zip(cells["bin"], cells["lo"], cells["hi"], cells["n"],
                             cells["observer"], cells["max"],
                             [doc["strings"][k] for k in cells["slowest"]], strict=True))  # fmt: skip
            assert drawn == rows
            assert sum(cells["n"]) == 11_039  # every bio with a latency, once


def test_the_user_series_is_in_ns_on_the_trace_clock(
    mq_report: Written, timeline: tuple[dict[str, Any], dict[str, list[str]]]
) -> None:
    doc, notes = timeline
    (prober,) = doc["user"]
    with Dataset(mq_report.dataset).con as con:
        rows = con.execute("SELECT t_ns, value FROM series ORDER BY t_ns, line_no").fetchall()
    assert prober["name"] == "user:prober" and prober["unit"] == "us"
    assert list(zip(prober["t"], prober["ns"], strict=True)) == [
        (t, round(v * 1000)) for t, v in rows
    ]
    assert notes["latency"] == []  # every sample placed on the clock
    with Dataset(mq_report.dataset).con as con:
        peaks = con.execute(
            "SELECT spike_id, peak_ns, peak_latency_ns FROM spikes "
            "WHERE metric = 'user:prober' ORDER BY spike_id"
        ).fetchall()
    drawn = [(s["id"], s["peak"], s["peak_latency"]) for s in doc["spikes"]
             if s["metric"] == "user:prober"]  # fmt: skip
    assert drawn == peaks and len(peaks) == 6
    assert max(p for _, _, p in peaks) == 76_672_000 == max(prober["ns"])


def test_the_observer_sets_no_axis_and_is_said_to(
    timeline: tuple[dict[str, Any], dict[str, list[str]]], device: Device
) -> None:
    doc, notes = timeline
    # bpftrace's reads at 34.48 s (4,700 IOs/s in one bin) are the observer's, drawn apart
    assert device.observer_rates["read"][0].max() == 4_700
    assert device.rates["read"][0].max() < 400
    assert notes["throughput"] == [
        "write MiB/s: log axis, because one burst reaches 4,720 MiB/s (at 19.82 s) against a "
        "usual 123 MiB/s (95th percentile).",
        "Grey: IO of the capture's own tools (blkscope, blktrace, blkparse, btrace, bpftrace, "
        "biosnoop, iostat, vmstat, capture.sh), drawn apart and never setting an axis.",
    ]
    assert not doc["rates"]["read"]["iops"]["log"]
    assert notes["depth"] == [
        "depth: 81 requests at 34.48 s, with the capture's own tools' IO in flight, runs off "
        "the top: the observer does not set the axis."
    ]
    assert doc["depth"]["log"] is False


def test_the_lba_cell_is_a_round_size(
    timeline: tuple[dict[str, Any], dict[str, list[str]]],
) -> None:
    doc, notes = timeline
    assert doc["lba"]["bucket_sectors"] == 2**20
    assert notes["lba"] == [
        "Each mark is one cell of 50 ms x 512 MiB of the device holding at least one bio (at Q)."
    ]


def test_the_flush_rate_is_no_solid_band(device: Device) -> None:
    """Per 50 ms bin the flushes alternate between 40 and 60 IOs/s (2 or 3 a bin): drawn per bin
    that was a solid band. Over the script's 500 ms steps (10 bins, about 100 steps across the
    chart) the rate is level: what the line draws."""
    iops = device.rates["flush"][0]
    busy = iops[60:640]  # while the workload ran
    assert np.isin(busy, (40.0, 60.0)).mean() > 0.9  # the band: 40, 60, 40, 60...
    steps = busy.reshape(-1, 10).mean(axis=1)
    low, high = np.quantile(steps, [0.05, 0.95])
    assert low >= 48 and high <= 54  # the line: ~50 IOs/s


def test_log_axis_notes_and_nan() -> None:
    at = np.arange(30) * 0.05
    values = np.full(30, 10.0)
    assert log_axis_note(values, "x", "IOs/s", at) is None
    values[7] = 1_000
    assert log_axis_note(values, "x", "IOs/s", at) == (
        "x: log axis, because one burst reaches 1,000 IOs/s (at 0.35 s) against a usual 10 IOs/s "
        "(95th percentile)."
    )
    assert _floats(np.array([1.23456, np.nan, 0.0])) == [1.235, None, 0.0]
