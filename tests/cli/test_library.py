"""blkscope as a notebook user meets it: open the bundled capture, dig in Polars, and get the
same numbers as `blkscope sql` and `blkscope spikes --json`."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import polars as pl
from typer.testing import CliRunner

import blkscope
from blkscope.cli import app

runner = CliRunner()
PYTHON3 = "comm = 'python3'"


def cli_json(*args: str) -> Any:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_bios_filtered_by_process_and_time_window_match_blkscope_sql(mq_dataset: Path) -> None:
    ds = blkscope.open(str(mq_dataset), progress=False)
    start = ds.clock.at(5_000_000_000)  # 5 s to 10 s after the trace's first event
    end = ds.clock.at(10_000_000_000)
    assert start is not None and end is not None
    picked = (
        ds.bios.filter(pl.col("comm") == "python3")
        .filter(pl.col("q_time").is_between(start, end, closed="left"))
        .select(pl.len().alias("ios"), pl.col("d2c").max().dt.total_nanoseconds().alias("worst"))
        .collect()
    )
    (row,) = cli_json(
        "sql", str(mq_dataset), "--json",
        f"SELECT count(*) AS ios, max(d2c_ns) AS worst FROM bios WHERE {PYTHON3} "
        "AND q_time_ns >= 5000000000 AND q_time_ns < 10000000000",
    )  # fmt: skip
    assert picked["ios"][0] == row["ios"] == 1719
    assert picked["worst"][0] == row["worst"] == 6_473_716  # ns: the Duration keeps them all
    assert ds.bios.select(pl.col("d2c_ns").max()).collect().item() == 36_650_363


def test_bios_joined_with_spikes_match_spikes_json(mq_dataset: Path) -> None:
    """The episodes from ds.spikes() are those of `blkscope spikes --json`; the python3 bios
    completing inside each are counted in Polars and in SQL alike."""
    ds = blkscope.open(mq_dataset, progress=False)
    found = ds.spikes()
    doc = cli_json("spikes", str(mq_dataset), "--json")
    episodes = found.episodes.select("episode_id", "start_ns", "end_ns")
    assert episodes.collect().to_dicts() == [
        {k: e[k] for k in ("episode_id", "start_ns", "end_ns")} for e in doc["episodes"]
    ]
    spike_ids = found.spikes.select("spike_id").collect().to_series().to_list()
    assert spike_ids == [s["spike_id"] for s in doc["spikes"]]
    inside = (
        ds.bios.filter(pl.col("comm") == "python3")
        .join(episodes.lazy(), how="cross")
        .filter(pl.col("c_time_ns").is_between(pl.col("start_ns"), pl.col("end_ns")))
        .group_by("episode_id")
        .agg(pl.len().alias("ios"))
        .sort("episode_id")
        .collect()
    )
    windows = " UNION ALL ".join(
        f"SELECT {e['episode_id']} AS episode_id, {e['start_ns']} AS s, {e['end_ns']} AS e"
        for e in doc["episodes"]
    )
    rows = cli_json(
        "sql", str(mq_dataset), "--json",
        f"SELECT episode_id, count(*) AS ios FROM bios JOIN ({windows}) w "
        f"ON c_time_ns BETWEEN w.s AND w.e WHERE {PYTHON3} GROUP BY 1 ORDER BY 1",
    )  # fmt: skip
    assert inside.to_dicts() == rows
    assert len(doc["episodes"]) == 6 and sum(r["ios"] for r in inside.to_dicts()) > 0


def test_the_tables_carry_their_docs(mq_dataset: Path) -> None:
    with blkscope.open(mq_dataset, progress=False) as ds:
        tables = {t.name: t for t in ds.tables}
        assert tables["bios"].rows == 11039
        assert tables["bios"].doc.startswith("One row per Q event")
        columns = {c.name: c for c in tables["bios"].columns}
        assert columns["q_time_ns"].doc == "Q time, ns since the trace's first event."
        assert columns["q_time_ns"].type == "int64"


def test_times_are_datetimes_and_durations_beside_the_ns(mq_dataset: Path) -> None:
    with blkscope.open(mq_dataset, progress=False) as ds:
        schema = ds.requests.collect_schema()
        assert schema["d_time"] == pl.Datetime("ns", "UTC")
        assert schema["d2c"] == pl.Duration("ns")
        first = ds.events.select("time_ns", "time").head(1).collect().row(0)
        # trace time 0 is 2026-11-21 23:37:49.326334032 UTC (the capture's clock note)
        assert first[0] == 0
        assert first[1] == dt.datetime(2026, 11, 21, 23, 37, 49, 326334, tzinfo=dt.timezone.utc)


def test_periods_are_lazy_like_the_tables_and_sql_is_a_frame(mq_dataset: Path) -> None:
    with blkscope.open(mq_dataset, progress=False) as ds:
        lazy = ds.periods()
        assert isinstance(lazy, pl.LazyFrame)
        periods = lazy.collect()
        assert periods["series"].to_list() == ["kworker_writes", "writeback_events"]
        assert periods["period_ns"].to_list() == [5_121_936_860, 5_121_936_860]
        assert periods["period"].to_list() == [dt.timedelta(seconds=5, microseconds=121_936)] * 2
        assert isinstance(ds.sql("SELECT 1 AS one"), pl.DataFrame)


def test_compare_returns_a_typed_comparison(mq_dataset: Path) -> None:
    result = blkscope.compare(mq_dataset, mq_dataset)
    assert result.significant == []
    assert {(s.device, s.before, s.after) for s in result.spikes} == {("254,0", 6, 6)}
    assert result.as_doc()["before"] == str(mq_dataset)
