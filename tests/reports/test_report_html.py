"""The report page without a browser: structure, no URLs, determinism, summary.json, inputs."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from blkscope.cli import app
from blkscope.dataset import Dataset
from blkscope.reports.charts import CHARTS
from blkscope.reports.make_report import Written, make_report
from blkscope.reports.summary_json import SUMMARY_SCHEMA
from blkscope.reports.timeline import TIME_CHARTS
from blkscope.store.manifest import read_manifest_doc as read_manifest
from tests.golden import golden_json
from tests.reports.conftest import GOLDEN
from tests.reports.page_parser import parse


def test_every_chart_is_there_once_per_device_with_its_svg(mq_report: Written) -> None:
    """The still charts are inline SVG; the time charts are figures the page's script fills
    from the device's embedded data (test_browser.py sees them drawn)."""
    page = parse(mq_report.report.read_text())
    assert page.charts == {"dev0": [*TIME_CHARTS, *CHARTS]}
    assert [page.svg_in_chart[f"d0-{k}-section"] for k in [*TIME_CHARTS, *CHARTS]] == [0] * len(
        TIME_CHARTS
    ) + [1] * len(CHARTS)
    assert page.tags["svg"] == len(CHARTS)
    assert page.tags["figure"] == len(TIME_CHARTS) + len(CHARTS)
    html = mq_report.report.read_text()
    assert html.count('<figure class="timechart" data-device="d0"') == len(TIME_CHARTS)


def test_the_page_is_self_contained(mq_report: Written) -> None:
    html = mq_report.report.read_text()
    assert not re.search(r"https?:", html)
    assert "src=" not in html and "@import" not in html
    # its own script inline, and the data it draws as JSON (one document per device + clock)
    assert re.findall(r"<script[^>]*>", html) == [
        '<script type="application/json" class="blkscope-device" id="data-d0">',
        '<script type="application/json" id="blkscope-clock">',
        "<script>",
    ]
    # The only url() references are to the page's own SVG clip paths; the rasterised layers
    # (dense dots and bands) are inline PNG data, nothing to fetch.
    assert set(re.findall(r"url\((.)", html)) == {"#"}
    assert set(re.findall(r'href="([a-z]+:|#)', html)) <= {"#", "data:"}
    assert len(html.encode()) < 2_000_000


def test_the_headline_says_what_was_measured(mq_report: Written) -> None:
    page = parse(mq_report.report.read_text())
    assert page.headlines[:2] == [
        "11,039 IOs queued, 12,702 completions: D2C p99 27.4 ms (max 36.7 ms), "
        "Q2C p99 30.9 ms (max 53.1 ms).",
        "Worst 50 ms bin: Q2C p99 53.1 ms at 25.23 s (23:38:14 UTC).",
    ]


def test_same_dataset_gives_the_same_bytes_but_the_timestamp_line(
    mq_report: Written, tmp_path: Path
) -> None:
    again = make_report(mq_report.dataset, tmp_path / "a.html", timestamp=False)
    stamped = make_report(mq_report.dataset, tmp_path / "b.html", timestamp=True)
    assert again.report.read_bytes() == mq_report.report.read_bytes()
    plain = mq_report.report.read_text().splitlines()
    with_stamp = stamped.report.read_text().splitlines()
    extra = [line for line in with_stamp if line not in plain]
    assert len(with_stamp) == len(plain) + 1
    assert len(extra) == 1
    assert re.fullmatch(
        r'<p class="meta" id="generated">Generated \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\.</p>',
        extra[0],
    )
    assert again.summary.read_bytes() == stamped.summary.read_bytes()


def test_summary_json_headline_numbers_match_the_golden_file(mq_report: Written) -> None:
    doc = json.loads(mq_report.summary.read_text())
    assert mq_report.summary.name == "report.summary.json"
    assert mq_report.summary.parent == mq_report.report.parent
    keep = ["dev", "ios", "requests", "completions", "requeues", "errors", "merged_bios",
            "split_bios", "d2c", "q2c"]  # fmt: skip
    got = [{k: d[k] for k in keep} for d in doc["devices"]]
    assert got == golden_json(GOLDEN / "mq30-summary-devices.json", got)
    assert doc["format"] == "blkscope-summary" and doc["version"] == 4
    assert doc["events"] == 75_532 and doc["malformed_lines"] == 0
    device = doc["devices"][0]
    # 4 q2c and 6 prober spikes, in 6 windows: 6 latency episodes
    assert (device["spikes"], device["metric_spikes"]) == (6, 10)
    assert doc["warnings"] == [] and doc["trace_start"]["utc"] == "2026-11-21T23:37:49.326334Z"
    # 3 kworker bursts, too few for a periodogram, all overlap the writeback log's events
    assert [(p["series"], p["method"]) for p in device["periods"]] == [
        ("kworker_writes", "writeback_events"),
        ("writeback_events", "periodogram"),
    ]
    for period in device["periods"]:
        assert abs(period["period_ns"] / 1e9 - 5.12) <= 0.01
        assert "vm.dirty_writeback_centisecs" in period["knobs"]
    documented = {k.split(".")[0].removeprefix("devices[]") for k in SUMMARY_SCHEMA}
    assert set(doc) <= documented
    assert {f"devices[].{k}" for k in doc["devices"][0]} <= set(SUMMARY_SCHEMA)


def test_raw_input_is_ingested_and_analyzed_beside_the_report(mq_report: Written) -> None:
    assert mq_report.ingested and mq_report.analyzed
    assert mq_report.dataset == mq_report.report.with_name("report.dataset")
    tables = read_manifest(mq_report.dataset)["tables"]
    assert {"events", "requests", "bios", "stage_stats", "latency_hist"} <= set(tables)


def test_binning_keeps_the_slowest_io_of_the_whole_trace(mq_report: Written) -> None:
    from blkscope.reports.model import load_report

    (dev,) = load_report(Dataset(mq_report.dataset)).devices
    assert dev.bins.count <= 1500 and dev.bins.width_ns == 50_000_000
    assert np.nanmax(dev.d2c.max) == 36_650_363 == dev.stages["D2C"]["max_ns"]
    assert np.nanmax(dev.q2c.max) == 53_065_207 == dev.stages["Q2C"]["max_ns"]
    assert dev.d2c.n.sum() == dev.stages["D2C"]["n"]  # every bio with a D2C, once


@pytest.mark.parametrize(
    ("span_ns", "width_ns"),
    [(34_489_643_432, 50_000_000), (1_000, 1_000_000), (3_600 * 10**9, 5_000_000_000),
     (1_499_000_000, 1_000_000), (1_499_000_001, 2_000_000)],
)  # fmt: skip
def test_bin_width_is_a_round_number_covering_the_span(span_ns: int, width_ns: int) -> None:
    """The time_bins view: the smallest 1/2/5 x 10^k ns width (>= 1 ms) covering the span in
    at most 1500 bins, from a multiple of the width."""
    import duckdb

    from blkscope.analyze.views import register

    con = duckdb.connect()
    start = 7_654_321
    con.execute(
        "CREATE TABLE events AS SELECT 8 AS dev_major, 0 AS dev_minor, unnest([$a, $b]) AS time_ns",
        {"a": start, "b": start + span_ns},
    )
    register(con, set(), ["time_bins"])
    ((first, width, bins),) = con.execute(
        "SELECT start_ns, width_ns, bins FROM time_bins"
    ).fetchall()
    assert width == width_ns and first % width == 0 and first <= start
    assert first + bins * width > start + span_ns and bins <= 1500


def test_a_capture_folder_is_ingested_and_its_settings_shown(
    cut_dataset: Path, tmp_path: Path
) -> None:
    (cut_dataset / "capture.json").write_text(
        json.dumps(
            {
                "format": "blkscope-capture",
                "devices": [{"dev": "254:0", "scheduler": "mq-deadline", "queue": {}}],
                "vm_sysctls": {"vm.dirty_writeback_centisecs": "500"},
            }
        )
    )
    done = make_report(cut_dataset, tmp_path / "out" / "r.html", timestamp=False)
    assert done.ingested and done.dataset == tmp_path / "out" / "r.dataset"
    page = parse(done.report.read_text())
    text = [t.strip() for t in page.text if t.strip()]
    pairs = list(itertools.pairwise(text))
    assert ("scheduler", "mq-deadline") in pairs
    assert ("vm.dirty_writeback_centisecs", "500") in pairs


def test_cli_report_prints_where_it_wrote_and_the_numbers(
    tmp_path: Path, cut_dataset: Path
) -> None:
    out = tmp_path / "r.html"
    result = CliRunner().invoke(app, ["report", str(cut_dataset), "-o", str(out), "--no-timestamp"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert (
        lines[0]
        == f"wrote {out} and {tmp_path / 'r.summary.json'} (dataset {tmp_path / 'r.dataset'})"
    )
    # 38 IOs: the cut's 38 Q lines (grep ' Q ' agrees); the p99s are summary.json's own
    assert lines[1:] == [
        "  device 254,0: 38 IOs, D2C p99 21.482 ms, Q2C p99 38.418 ms, latency episodes 0 "
        "(0 metric spikes), periods none"
    ]
    (dev,) = json.loads((tmp_path / "r.summary.json").read_text())["devices"]
    assert (dev["ios"], dev["d2c"]["p99_ns"] // 1000, dev["q2c"]["p99_ns"] // 1000) == (
        38,
        21_482,
        38_418,
    )


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p / "nothing", "error: {p}/nothing: does not exist"),
        (lambda p: p, "error: {p}: is a folder but neither a dataset (no manifest.json) nor a "
         "capture (no blkparse.txt[.zst], block_events.txt or NAME.blktrace.N files)"),
    ],
)  # fmt: skip
def test_bad_inputs_say_why_with_exit_2(
    tmp_path: Path, make: Callable[[Path], Path], message: str
) -> None:
    result = CliRunner().invoke(
        app, ["report", str(make(tmp_path)), "-o", str(tmp_path / "r.html")]
    )
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == message.format(p=tmp_path)


def test_writeback_bursts_are_marked_on_the_time_charts(mq_report: Written) -> None:
    from blkscope.reports.model import load_report

    (dev,) = load_report(Dataset(mq_report.dataset)).devices
    kworker = dev.spectra["kworker_writes"]
    assert (kworker.burst_starts_ns // 10_000_000).tolist() == [1970, 2482, 3046]  # 10 ms
    # 3 bursts: a periodogram (315 frequencies, drawn), too few for a significant period...
    assert kworker.z2.size == 315
    # ...but all 3 overlap the flusher wakeups of the capture's writeback log (trace clock)
    assert [p["series"] for p in dev.periods] == ["kworker_writes", "writeback_events"]
    # both the same 5.12 s: dirty_writeback_centisecs=500 (5 s) plus the flusher's own work
    assert [p["period_ns"] for p in dev.periods] == [5_121_936_860, 5_121_936_860]
    # One legend per time chart: latency, heat map, throughput, depth, LBA.
    assert mq_report.report.read_text().count("></span>kworker_writes burst</span>") == 5


def test_element_ids_are_unique_across_the_inline_svgs(mq_report: Written) -> None:
    ids = re.findall(r' id="([^"]+)"', mq_report.report.read_text())
    assert len(ids) > 100
    assert len(set(ids)) == len(ids)


def test_cross_check_section_and_summary(mq_report: Written) -> None:
    """The bundled capture's biosnoop and iostat against the rebuilt requests, on the page and
    in summary.json (numbers: tests/analyze/test_crosscheck.py)."""
    html = mq_report.report.read_text()
    assert "<h3>Cross-check against the capture's own logs</h3>" in html
    assert "9,231 of 9,256 within 50 us (99.7%); found 9,256 of 9,256 rows</td>" in html
    assert (
        'w_await</td><td class="text">6.5% median error, blkscope the lower in 87%, by a median '
        "9.53 us per IO</td>"
    ) in html
    check = json.loads(mq_report.summary.read_text())["devices"][0]["crosscheck"]
    assert check["biosnoop"]["disk"] == "vda" and check["biosnoop"]["agree"] == 9231
    assert check["iostat"]["iostat_device"] == "vda" and check["iostat"]["w_seconds"] == 30
