"""The API and CLI defects a new user met in their first hour (issue 34, "The API and CLI"),
one test each, with the exact output each now gives. On the bundled capture's dataset."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest
import typer.main
from typer.testing import CliRunner

import blkscope
from blkscope.cli import COMMANDS, FLEET_COMMANDS, app
from blkscope.schemas import EPISODES, SPIKES
from tests.conftest import MQ30, ROOT

runner = CliRunner()
TRACE_START = "2026-11-21T23:37:49.326334Z"  # the bundled capture's trace zero


def _run(*args: str | Path) -> tuple[int, str, str]:
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


# ds.spikes() and ds.periods(): lazy, with Datetime and Duration columns; ds["bios"]; repr.


def test_spike_episodes_have_datetime_and_duration_columns(mq_dataset: Path) -> None:
    with blkscope.open(mq_dataset, progress=False) as ds:
        found = ds.spikes()
        schema = found.episodes.collect_schema()
        first = found.episodes.select("start", "peak", "peak_latency", "window").head(1).collect()
    assert isinstance(found.episodes, pl.LazyFrame) and isinstance(found.spikes, pl.LazyFrame)
    assert (schema["start_ns"], schema["start"]) == (pl.Int64, pl.Datetime("ns", "UTC"))
    assert (schema["peak_latency"], schema["window"]) == (pl.Duration("ns"), pl.Duration("ns"))
    assert first.row(0) == (
        dt.datetime(2026, 11, 21, 23, 37, 51, 326334, tzinfo=dt.timezone.utc),
        dt.datetime(2026, 11, 21, 23, 37, 52, 110048, tzinfo=dt.timezone.utc),
        dt.timedelta(microseconds=34302),
        dt.timedelta(seconds=1),
    )


def test_spikes_found_again_with_other_options_are_lazy_with_times_too(mq_dataset: Path) -> None:
    with blkscope.open(mq_dataset, progress=False) as ds:
        found = ds.spikes(window="500ms", metric="d2c")
        episodes = found.episodes.select("episode_id", "start", "window").collect()
        spikes = found.spikes.collect()
    assert episodes["window"].unique().to_list() == [dt.timedelta(milliseconds=500)]
    assert episodes["start"].dtype == pl.Datetime("ns", "UTC")
    assert set(spikes["metric"]) == {"d2c", "user:prober"}


def test_periods_are_a_lazy_frame_most_significant_first(mq_dataset: Path) -> None:
    with blkscope.open(mq_dataset, progress=False) as ds:
        periods = ds.periods()
        assert isinstance(periods, pl.LazyFrame)
        rows = periods.select("series", "period", "p_value").collect().rows()
    assert [(s, p) for s, p, _ in rows] == [
        ("kworker_writes", dt.timedelta(seconds=5, microseconds=121936)),
        ("writeback_events", dt.timedelta(seconds=5, microseconds=121936)),
    ]
    assert rows[0][2] < rows[1][2]


def test_a_table_by_its_name(mq_dataset: Path) -> None:
    with blkscope.open(mq_dataset, progress=False) as ds:
        by_name = ds["bios"].select(pl.len(), pl.col("d2c").max()).collect().row(0)
        with pytest.raises(blkscope.errors.DatasetError) as err:
            ds["nope"]
    assert by_name == (11039, dt.timedelta(microseconds=36650))
    assert str(err.value) == f"{mq_dataset}: has no table 'nope'"


def test_the_tables_repr_is_one_short_line(mq_dataset: Path) -> None:
    with blkscope.open(mq_dataset, progress=False) as ds:
        tables = ds.tables
        shown = repr(tables)
        bios = tables["bios"]
    assert shown.startswith(
        "<27 tables, rows in each: bio_counts (4), bios (11,039), biosnoop (10,857), "
    )
    assert shown.endswith(", vmstat (35), writeback (158), writeback_verdict (1)>")
    assert len(shown) < 500 and "\n" not in shown
    assert repr(bios) == "<table bios: 11,039 rows, 27 columns>"
    assert [t.name for t in tables][:3] == ["bio_counts", "bios", "biosnoop"]
    assert "bios" in tables and bios.columns[0].name == "dev_major"


# spikes --csv and --nl print the episodes; --per-metric the spikes.


def test_spikes_csv_prints_the_episodes_with_every_column(mq_dataset: Path) -> None:
    code, out, _ = _run("spikes", mq_dataset, "--csv")
    rows = list(csv.reader(io.StringIO(out)))
    assert code == 0
    assert rows[0] == [f.name for f in EPISODES] + ["start_utc", "end_utc", "peak_utc"]
    by_name = [dict(zip(rows[0], r, strict=True)) for r in rows[1:]]
    assert [r["episode_id"] for r in by_name] == ["1", "2", "3", "4", "5", "6"]
    assert (by_name[4]["peak_latency_ns"], by_name[4]["cause"]) == ("76672000", "writeback")
    assert by_name[0]["start_utc"] == "2026-11-21T23:37:51.326334Z"


def test_spikes_nl_prints_the_episodes_and_per_metric_the_spikes(mq_dataset: Path) -> None:
    _, out, _ = _run("spikes", mq_dataset, "--nl")
    episodes = [json.loads(line) for line in out.splitlines()]
    _, out, _ = _run("spikes", mq_dataset, "--nl", "--per-metric")
    spikes = [json.loads(line) for line in out.splitlines()]
    assert [e["episode_id"] for e in episodes] == [1, 2, 3, 4, 5, 6]
    assert len(spikes) == 10
    assert list(spikes[0]) == [f.name for f in SPIKES] + ["start_utc", "end_utc", "peak_utc"]
    assert [(s["metric"], s["episode_id"]) for s in spikes[:4]] == [
        ("q2c", 1), ("q2c", 4), ("q2c", 5), ("q2c", 6)
    ]  # fmt: skip


# Missing paths say they do not exist, and make no folders; hints fit what ingest reads.


@pytest.mark.parametrize("command", [["sql", "{p}", "SELECT 1"], ["spikes", "{p}"]])
def test_a_missing_nested_dataset_does_not_exist_and_no_folder_is_made(
    tmp_path: Path, command: list[str]
) -> None:
    missing = tmp_path / "not" / "here" / "ds"
    code, _, err = _run(*(a.format(p=missing) for a in command))
    assert (code, err) == (
        2,
        f"error: {missing}: does not exist\n"
        "hint: create one with 'blkscope ingest INPUT -o DATASET'\n",
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "command",
    [
        ["report", "{p}", "-o", "{tmp}/r.html"],
        ["check", "{p}", "--max", "spikes=0"],
        ["ingest", "{p}", "-o", "{tmp}/ds"],
    ],
    ids=lambda c: c[0],
)
def test_a_missing_input_does_not_exist(tmp_path: Path, command: list[str]) -> None:
    missing = tmp_path / "gone"
    code, _, err = _run(*(a.format(p=missing, tmp=tmp_path) for a in command))
    assert (code, err) == (2, f"error: {missing}: does not exist\n")


def test_a_missing_fleet_does_not_exist(tmp_path: Path) -> None:
    code, _, err = _run("fleet", "sql", tmp_path / "fleet", "SELECT 1")
    assert (code, err) == (
        2,
        f"error: {tmp_path / 'fleet'}: does not exist\n"
        "hint: create one with 'blkscope fleet add FLEET CAPTURE...'\n",
    )


def test_fleet_add_of_a_missing_capture_says_it_does_not_exist(tmp_path: Path) -> None:
    code, out, err = _run("fleet", "add", tmp_path / "fleet", tmp_path / "gone", "--host", "h")
    assert (code, err, out) == (
        1,
        f"[1/1] host=h capture=gone: FAILED ({tmp_path / 'gone'}): "
        f"{tmp_path / 'gone'}: does not exist\n",
        f"added 0 of 1 capture to {tmp_path / 'fleet'}; 1 failed\n",
    )


def test_a_side_log_given_as_the_trace_is_told_to_pass_the_folder(tmp_path: Path) -> None:
    iostat = MQ30 / "iostat.txt"
    code, _, err = _run("ingest", iostat, "-o", tmp_path / "ds")
    assert (code, err) == (
        2,
        f"error: {iostat}: this looks like iostat output: expected blkparse default-format "
        "text\nhint: pass the capture folder that holds it with the block trace (every side "
        "log in it joins the dataset on the trace's clock), or the block trace itself\n",
    )
    assert "blkparse first" not in err


def test_an_empty_trace_is_told_what_ingest_reads(tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    code, _, err = _run("ingest", empty, "-o", tmp_path / "ds")
    assert (code, err) == (
        2,
        f"error: {empty}: empty input: expected blkparse default-format text\n"
        "hint: ingest reads blktrace per-CPU files (NAME.blktrace.N, or their NAME prefix), "
        "blkparse text, or the ftrace text of the blk tracer or the block tracepoints\n",
    )


# Help shows values as users write them, and an example per command.


def _helps() -> Iterator[tuple[str, str]]:
    for name in [*(c.name or c.run.__name__ for c in COMMANDS),
                 *(f"fleet {c.name or c.run.__name__}" for c in FLEET_COMMANDS), "fleet", ""]:  # fmt: skip
        result = runner.invoke(app, [*name.split(), "--help"], env={"COLUMNS": "200"})
        assert result.exit_code == 0, name
        yield name, result.stdout


def test_help_shows_no_python_types_and_an_example_per_command() -> None:
    for name, text in _helps():
        for python in ("<bool>", "<str>", "<int>", "<path>", "<list", "{dataset}", "<float>"):
            assert python not in text, (name, python)
        if name and name != "fleet":
            assert f"Example: blkscope {name}" in text, name


def test_help_usage_names_the_arguments_in_capitals() -> None:
    helps = dict(_helps())
    assert "Usage: blkscope spikes [OPTIONS] DATASET " in helps["spikes"]
    assert "Usage: blkscope partitions [OPTIONS] DATASET LISTING... " in helps["partitions"]
    assert "Usage: blkscope fleet add [OPTIONS] FLEET CAPTURE... " in helps["fleet add"]
    assert "--window            DURATION  Window width" in helps["spikes"]
    assert "*  --max         METRIC=VALUE  A limit" in helps["check"]


def test_every_non_flag_option_names_its_value() -> None:
    command = typer.main.get_command(app)
    groups = [("", command), ("fleet ", command.commands["fleet"])]  # type: ignore[attr-defined]
    for prefix, group in groups:
        for name, cmd in group.commands.items():
            for param in getattr(cmd, "params", []):
                if getattr(param, "is_flag", False):
                    continue
                shown = param.metavar or ""
                named = shown == shown.upper() or "|" in shown  # DATASET, q2c|d2c
                assert shown and named, f"{prefix}{name} {param.name}: {shown!r}"


# Output: plurals, ISO 8601, one JSON style, true/false in CSV, device names.


def test_one_check_is_one_check_and_the_device_is_named(mq_dataset: Path) -> None:
    code, out, _ = _run("check", mq_dataset, "--max", "spikes=10")
    w = len(str(mq_dataset))
    assert (code, out.splitlines()) == (
        0,
        [
            f"{'target'.ljust(w)}  device  metric  threshold  actual  result",
            f"{mq_dataset}  vda     spikes  <= 10      6       PASS",
            "PASS: 1 check passed",
        ],
    )


def test_check_csv_writes_true_and_false_and_the_device_both_ways(mq_dataset: Path) -> None:
    code, out, _ = _run("check", mq_dataset, "--max", "spikes=10", "--max", "d2c.p99=5ms", "--csv")
    assert (code, out.splitlines()) == (
        1,
        [
            "target,device,dev,metric,threshold,limit,actual,passed",
            f'{mq_dataset},vda,"254,0",spikes,10,10,6,true',
            f'{mq_dataset},vda,"254,0",d2c.p99,5ms,5000000,27426090,false',
        ],
    )


def test_every_json_is_indented_by_two(mq_dataset: Path) -> None:
    code, out, _ = _run("sql", mq_dataset, "SELECT 1 AS one, true AS yes", "--json")
    assert (code, out) == (0, '[\n  {\n    "one": 1,\n    "yes": true\n  }\n]\n')
    _, spikes, _ = _run("spikes", mq_dataset, "--json")
    assert spikes.startswith('{\n  "trace_start": {\n    "wall_ns": 1795304269326334032,\n')


def test_spikes_and_periods_name_the_device(mq_dataset: Path) -> None:
    _, spikes, _ = _run("spikes", mq_dataset)
    _, periods, _ = _run("periods", mq_dataset)
    assert spikes.splitlines()[0] == (
        "6 latency episodes on vda (254,0) (spikes of any metric in overlapping windows)"
    )
    assert spikes.splitlines()[-1].startswith("vda (254,0): writeback explains the episodes: ")
    assert [line.split()[0] for line in periods.splitlines()] == ["device", "vda", "vda"]


def test_ingest_names_the_devices_capture_json_names(tmp_path: Path) -> None:
    code, out, _ = _run("ingest", ROOT / "tests" / "data" / "issue5" / "jbd2-commit", "-o",
                        tmp_path / "ds")  # fmt: skip
    assert code == 0
    assert out.splitlines()[-3:] == [
        f"wrote {tmp_path / 'ds'}: 656 events over 25.133 s",
        "  device loop0 (7,0): 656 events  C=32 D=27 G=17 I=5 M=268 P=11 Q=285 U=11",
        "0 malformed lines",
    ]


def test_times_in_json_are_iso_8601(mq_dataset: Path) -> None:
    _, out, _ = _run("periods", mq_dataset, "--json")
    doc = json.loads(out)
    assert [p["phase_utc"] for p in doc] == ["2026-11-21T23:37:53.807316Z"] * 2
    _, out, _ = _run("spikes", mq_dataset, "--json")
    doc = json.loads(out)
    assert doc["trace_start"]["utc"] == TRACE_START
    assert doc["episodes"][0]["peak_utc"] == "2026-11-21T23:37:52.110048Z"


def test_the_command_list_is_explicit_and_in_pipeline_order() -> None:
    names = [c.name or c.run.__name__ for c in COMMANDS]
    assert names == ["ingest", "analyze", "sql", "crosscheck", "spikes", "periods", "compare",
                     "partitions", "files", "report", "export", "check", "schema", "capture",
                     "capture-restore"]  # fmt: skip
    listed = list(typer.main.get_command(app).commands)  # type: ignore[attr-defined]
    assert listed == [*names, "fleet"]


def test_no_command_touches_the_connection_or_runs_sql() -> None:
    """`grep -rn "\\.con\\b" src/blkscope/cli` is empty, and no command executes SQL itself."""
    for path in (ROOT / "src" / "blkscope" / "cli").glob("*.py"):
        text = path.read_text()
        assert re.search(r"\.con\b", text) is None, path.name
        assert "execute(" not in text and "query_table(" not in text, path.name
