"""When the findings tables exist, the report shows them: spikes, causes, periods, writeback.

The findings step is not merged yet, so the tables here are written by hand in its declared
schemas, over two windows of the mq fixture: the big writeback burst at 19.7 s (its real peak,
p99 and IO count) and a made-up quiet one.
"""

from __future__ import annotations

import json
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from blkscope.cli import app
from blkscope.ingest.dataset import MANIFEST
from blkscope.reports.run import Written, make_report
from blkscope.schemas import PERIODS, SPIKES
from tests.reports.page_parser import parse

MS = 1_000_000
SPIKE = {
    "dev_major": 254, "dev_minor": 0, "metric": "q2c", "window_ns": 100 * MS,
    "baseline_p99_ns": 200_000, "threshold_ns": 1 * MS, "jbd2_ios": 0,
    "writeback_events": None, "writeback_lag_ns": None,
}  # fmt: skip


def _spikes() -> pa.Table:
    rows = [
        {**SPIKE, "spike_id": 1, "start_ns": 19_700 * MS, "end_ns": 19_900 * MS,
         "peak_ns": 19_884_892_515, "peak_latency_ns": 36_724_293, "p99_ns": 35_057_422, "ios": 129,
         "writeback_ios": 110, "writeback_share": 0.85, "cause": "writeback",
         "processes": "kworker/u8:4 (110), python3 (19)"},
        {**SPIKE, "spike_id": 2, "start_ns": 10_000 * MS, "end_ns": 10_100 * MS,
         "peak_ns": 10_050 * MS, "peak_latency_ns": 5 * MS, "p99_ns": 4 * MS, "ios": 12,
         "writeback_ios": 0, "writeback_share": 0.0, "cause": "unexplained",
         "processes": "python3 (12)"},
    ]  # fmt: skip
    return pa.Table.from_pylist(rows, schema=SPIKES)


def _periods() -> pa.Table:
    row = {"dev_major": 254, "dev_minor": 0, "series": "kworker_writes", "period_ns": 5_010 * MS,
           "strength": 0.97, "p_value": 1e-4, "phase_ns": 4_700 * MS, "cycles": 6.9,
           "bursts": 7, "knobs": "vm.dirty_writeback_centisecs, jbd2 commit interval",
           "method": "periodogram"}  # fmt: skip
    return pa.Table.from_pylist([row], schema=PERIODS)


@pytest.fixture(scope="module")
def with_findings(mq_report: Written, tmp_path_factory: pytest.TempPathFactory) -> Written:
    tmp = tmp_path_factory.mktemp("findings")
    ds = tmp / "ds"
    shutil.copytree(mq_report.dataset, ds)
    writeback = pa.table({"t_ns": [19_650 * MS], "device": ["vda"], "pages": [51200],
                          "reason": ["periodic"], "duration_ns": [250 * MS]})  # fmt: skip
    manifest = json.loads((ds / MANIFEST).read_text())
    for name, table in (("spikes", _spikes()), ("periods", _periods()), ("writeback", writeback)):
        pq.write_table(table, ds / f"{name}.parquet")
        manifest["tables"][name] = {"file": f"{name}.parquet", "rows": table.num_rows}
    (ds / MANIFEST).write_text(json.dumps(manifest))
    return make_report(ds, tmp / "r.html", timestamp=False)


def test_the_headline_names_spikes_causes_and_the_period(with_findings: Written) -> None:
    lines = parse(with_findings.report.read_text()).headlines
    assert lines[2:] == [
        "2 latency spikes (causes: unexplained 50%, writeback 50%); worst at 19.70 s: "
        "Q2C peak 36.7 ms, cause writeback.",
        "Periodic: kworker_writes every 5.01 s (matches vm.dirty_writeback_centisecs, "
        "jbd2 commit interval).",
    ]


def test_the_spike_table_escapes_and_lists_every_spike(with_findings: Written) -> None:
    page = parse(with_findings.report.read_text())
    text = [t.strip() for t in page.text if t.strip()]
    assert "kworker/u8:4 (110), python3 (19)" in text
    assert "python3 (12)" in text
    assert "Spikes: not computed (the findings step is not available)." not in text


def test_summary_json_carries_the_findings(with_findings: Written) -> None:
    (dev,) = with_findings.summary_doc["devices"]
    assert dev["spikes"] == 2
    assert dev["cause_shares"] == {"unexplained": 0.5, "writeback": 0.5}
    assert dev["periods"] == [
        {
            "series": "kworker_writes",
            "period_ns": 5_010_000_000,
            "knobs": ["vm.dirty_writeback_centisecs", "jbd2 commit interval"],
            "method": "periodogram",
        }
    ]
    assert dev["periods_source"] == "findings"
    assert dev["worst_spike"]["cause"] == "writeback"
    assert dev["worst_spike"]["peak_latency_ns"] == 36_724_293


def test_stages_during_spikes_come_from_the_spike_windows(with_findings: Written) -> None:
    from blkscope.reports.model import load_report

    (dev,) = load_report(with_findings.dataset).devices
    assert dev.spike_stages is not None
    assert dev.spike_stages["D2C"]["max_ns"] == 36_650_363  # the slowest IO completes at 19.8 s
    assert dev.writeback == [
        {"t_ns": 19_650 * MS, "device": "vda", "pages": 51200, "reason": "periodic",
         "duration_ns": 250 * MS}
    ]  # fmt: skip


def test_check_counts_spikes_and_periods(with_findings: Written) -> None:
    result = CliRunner().invoke(
        app, ["check", str(with_findings.dataset), "--max", "spikes=1", "--max", "periods=1"]
    )
    assert result.exit_code == 1
    rows = [line.split()[2:] for line in result.stdout.splitlines()[1:-1]]
    assert rows == [["spikes", "<=", "1", "2", "FAIL"], ["periods", "<=", "1", "1", "PASS"]]


def test_the_charts_mark_spikes_and_writeback(with_findings: Written) -> None:
    html = with_findings.report.read_text()
    # Legends: D2C and Q2C panels, the IOPS panel, the depth chart.
    assert html.count(">detected spike<") == 4
    assert html.count(">writeback event<") == 4
    assert html.count(">detected period<") == 1
