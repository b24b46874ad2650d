"""`blkscope analyze` and `blkscope sql` on a real capture, and their error messages."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
from rich.progress import Progress
from typer.testing import CliRunner

from blkscope.cli import app
from blkscope.ingest.block_events import ingest_blkparse
from blkscope.pipeline import analyze
from blkscope.progress_columns import AmountColumn
from tests.analyze.conftest import capture

runner = CliRunner()


def test_analyze_json_summary(analyzed: dict[str, Path]) -> None:
    result = runner.invoke(app, ["analyze", str(analyzed["mq-writeback-30s"]), "--json"])
    assert result.exit_code == 0, result.output
    dev = json.loads(result.output)["devices"][0]
    assert dev["dev"] == "254,0"
    assert (dev["queued"], dev["dispatches"], dev["completions"], dev["requeues"]) == (
        11039,
        11322,
        12702,
        126,
    )
    assert (dev["merged_bios"], dev["split_bios"], dev["partial_bios"]) == (97, 256, 0)
    d2c = dev["stages"]["D2C"]
    assert d2c["n"] == 11039 and d2c["min_ns"] == 23990 and d2c["max_ns"] == 36650363
    assert list(dev["stages"]) == ["Q2Q", "Q2G", "G2I", "Q2M", "I2D", "M2D", "D2C", "Q2C"]


def test_analyze_text_summary(analyzed: dict[str, Path]) -> None:
    result = runner.invoke(app, ["analyze", str(analyzed["mq-writeback-30s"])])
    assert result.exit_code == 0, result.output
    assert "device 254,0" in result.output
    d2c = next(line for line in result.output.splitlines() if line.split()[:1] == ["D2C"])
    assert d2c.split()[1:3] == ["11,039", "0.023990"]


def test_sql_csv_and_json(analyzed: dict[str, Path]) -> None:
    ds = str(analyzed["mq-writeback-30s"])
    q = "SELECT op, count(*) AS n FROM requests GROUP BY op ORDER BY op"
    csv_out = runner.invoke(app, ["sql", ds, q, "--csv"])
    assert csv_out.output == "op,n\nD,39\nF,1506\nR,5981\nW,5176\n"
    js = json.loads(runner.invoke(app, ["sql", ds, q, "--json"]).output)
    assert js[1] == {"op": "F", "n": 1506}
    table = runner.invoke(app, ["sql", ds, q]).output.splitlines()
    assert table[0].split() == ["op", "n"] and table[-1] == "(4 rows)"


def test_sql_error_message(analyzed: dict[str, Path]) -> None:
    result = runner.invoke(
        app, ["sql", str(analyzed["mq-writeback-30s"]), "SELECT nope FROM requests"]
    )
    assert result.exit_code == 2  # the query is bad input
    assert result.stderr.startswith('error: query failed: Binder Error: Referenced column "nope"')
    assert result.stderr.splitlines()[-1] == (
        "hint: DESCRIBE NAME lists a table's or view's columns and their docs"
    )


def test_analyze_not_a_dataset(tmp_path: Path) -> None:
    result = runner.invoke(app, ["analyze", str(tmp_path)])
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: {tmp_path}: not a blkscope dataset (no manifest.json)\n"
        "hint: create one with 'blkscope ingest INPUT -o DATASET'\n"
    )


def test_analyze_of_a_missing_path_says_it_does_not_exist(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    result = runner.invoke(app, ["analyze", str(missing)])
    assert (result.exit_code, result.stderr) == (
        2,
        f"error: {missing}: does not exist\n"
        "hint: create one with 'blkscope ingest INPUT -o DATASET'\n",
    )


def test_sql_before_analyze_hints(tmp_path: Path) -> None:
    from blkscope.ingest.block_events import ingest_blkparse
    from tests.analyze.conftest import DATA

    ds = tmp_path / "ds"
    ingest_blkparse([str(DATA / "mq30-flush.blkparse.txt")], ds)
    result = runner.invoke(app, ["sql", str(ds), "SELECT count(*) FROM bios"])
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "error: query failed: Catalog Error: Table with name bios does not exist!",
        "hint: requests, bios, stage_stats, iostat, latency_hist, depth and io_dist are written "
        "by 'blkscope analyze DATASET'",
    ]
    count = runner.invoke(app, ["sql", str(ds), "SELECT count(*) AS n FROM events", "--csv"])
    assert count.output == "n\n41\n"


def test_analyze_reports_each_table_to_progress(analyzed: dict[str, Path], tmp_path: Path) -> None:
    dataset = tmp_path / "ds"
    shutil.copytree(analyzed["mq-writeback-30s"], dataset)
    calls: list[tuple[str, int, int, str, str]] = []
    analyze(
        dataset,
        progress=lambda key, done, total, unit, label: calls.append(
            (key, done, total, unit, label)
        ),
    ).close()
    events = [c for c in calls if c[3] == "events"]
    calls = [c for c in calls if c[3] != "events"]
    # the pairing pass counts events read, up to all of them
    assert {(key, total) for key, _, total, _, _ in events} == {("analyze ds events", 75532)}
    assert events[-1][1] == 75532
    assert {(key, total, unit) for key, _, total, unit, _ in calls} == {("analyze ds", 17, "steps")}
    assert [(done, label.split(": ")[1]) for _, done, _, _, label in calls] == [
        (0, "requests"),
        (1, "bios"),
        (2, "stage_stats"),
        (3, "iostat"),
        (4, "latency_hist"),
        (5, "latency_heatmap"),
        (6, "depth"),
        (7, "depth_bins"),
        (8, "io_dist"),
        (9, "bio_counts"),
        (10, "request_counts"),
        (11, "spikes"),
        (12, "episodes"),
        (13, "writeback_verdict"),
        (14, "periods"),
        (15, "periodogram"),
        (16, "bursts"),
        (17, "done"),
    ]


def test_step_bars_count_steps_not_bytes() -> None:
    bar = Progress(AmountColumn())
    steps = bar.add_task("analyze", total=9, unit="steps", completed=3)
    reading = bar.add_task("trace", total=2048, completed=1024)
    pairing = bar.add_task("events", total=44_175_530, unit="events", completed=1_048_576)
    column = AmountColumn()
    assert column.render(bar.tasks[steps]).plain == "3/9 steps"
    assert column.render(bar.tasks[pairing]).plain == "1.0/44.2 M events"
    assert column.render(bar.tasks[reading]).plain == "1.0/2.0 kB"


def test_analyze_quiet_prints_nothing(analyzed: dict[str, Path], tmp_path: Path) -> None:
    """-q still analyses: a dataset that was only ingested gains the same tables, row for row,
    as the one analysed through the library."""
    dataset = tmp_path / "ds"
    ingest_blkparse([str(capture("mq-writeback-30s") / "blkparse.txt.zst")], dataset)
    assert not (dataset / "bios.parquet").exists()
    result = runner.invoke(app, ["analyze", "-q", str(dataset)])
    assert (result.exit_code, result.output) == (0, "")
    reference = analyzed["mq-writeback-30s"]
    for table in ("requests", "bios", "stage_stats", "spikes"):
        got = pq.read_table(dataset / f"{table}.parquet")
        assert got.equals(pq.read_table(reference / f"{table}.parquet")), table
    assert pq.read_metadata(dataset / "bios.parquet").num_rows == 11_039  # one per Q
