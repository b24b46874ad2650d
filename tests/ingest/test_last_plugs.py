"""The last_plugs table ingest writes (each task's last P, counted by the compiled audit as the
events are written) against a query of the stored events, on every kind of input that writes
events; and analyze reading it or, for a dataset without it, scanning the events."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from blkscope.analyze.stream.run import last_plugs
from blkscope.cli import app
from blkscope.ingest.block_events import ingest_events
from blkscope.ingest.folder import ingest_folder
from blkscope.store.manifest import MANIFEST_VERSION
from tests.conftest import LOOP_TAIL, MQ30

TRACEPOINTS = Path(__file__).parents[1] / "data" / "tracepoints"

INPUTS = {
    "blkparse text": [MQ30 / "blkparse.txt.zst"],
    "two blkparse texts": [MQ30 / "blkparse.txt.zst", LOOP_TAIL / "blkparse.txt.zst"],
    "blktrace binaries": [MQ30 / f"trace.blktrace.{i}.zst" for i in (0, 1)],
    "tracepoint binaries": [TRACEPOINTS / f"trace.blktrace.{i}.zst" for i in (0, 1)],
    **{
        f"{name} text": [TRACEPOINTS / f"{name}.txt.zst"]
        for name in ("blk-classic", "blk-text", "ftrace", "perf", "trace-cmd")
    },
}


def _queried(dataset: Path) -> list[tuple[int, int]]:
    """What analyze asked DuckDB before ingest stored it: (pid, max time_ns of its P events)."""
    return (
        duckdb.connect()
        .execute(
            f"SELECT pid, max(time_ns) FROM '{dataset / 'events.parquet'}' "
            "WHERE action = 'P' GROUP BY pid ORDER BY pid"
        )
        .fetchall()
    )


def _stored(dataset: Path) -> list[tuple[int, int]]:
    table = pq.read_table(dataset / "last_plugs.parquet")
    return list(zip(table["pid"].to_pylist(), table["last_plug_ns"].to_pylist(), strict=True))


def _check(dataset: Path) -> None:
    stored = _stored(dataset)
    assert stored, "the fixture has P events"
    assert stored == _queried(dataset)
    manifest = json.loads((dataset / "manifest.json").read_text())
    assert manifest["tables"]["last_plugs"] == {"file": "last_plugs.parquet", "rows": len(stored)}


@pytest.mark.parametrize("kind", sorted(INPUTS))
def test_ingest_stores_each_tasks_last_plug_as_the_events_hold_it(
    kind: str, tmp_path: Path
) -> None:
    ingest_events([str(p) for p in INPUTS[kind]], tmp_path / "ds")
    _check(tmp_path / "ds")


def test_a_capture_folder_stores_them_too(tmp_path: Path) -> None:
    ingest_folder(MQ30, tmp_path / "ds")
    _check(tmp_path / "ds")


def test_analyze_reads_the_table_or_scans_a_dataset_without_it(tmp_path: Path) -> None:
    dataset = tmp_path / "ds"
    ingest_events([str(MQ30 / "blkparse.txt.zst")], dataset)
    con = duckdb.connect()
    con.execute(f"CREATE VIEW events AS SELECT * FROM '{dataset / 'events.parquet'}'")
    stored = last_plugs(con, dataset)
    assert stored == _queried(dataset)
    (dataset / "last_plugs.parquet").unlink()  # as a dataset ingested before the table was
    assert sorted(last_plugs(con, dataset)) == stored
    assert sorted(last_plugs(con, None)) == stored


def test_a_dataset_with_the_table_says_which_manifest_version_lists_it(tmp_path: Path) -> None:
    """A blkscope that predates the table reads manifest version 1 and refuses version 2 with
    "upgrade" (not "damaged"); this one reads both."""
    dataset = tmp_path / "ds"
    ingest_events([str(MQ30 / "blkparse.txt.zst")], dataset)
    manifest = json.loads((dataset / "manifest.json").read_text())
    assert manifest["version"] == MANIFEST_VERSION == 2
    manifest["version"] = 3
    (dataset / "manifest.json").write_text(json.dumps(manifest))
    result = CliRunner().invoke(app, ["sql", str(dataset), "SELECT 1"])
    assert result.exit_code != 0
    assert result.output == (
        f"error: {dataset}/manifest.json: manifest version 3 is newer than this blkscope reads "
        "(2)\nhint: upgrade blkscope, or ingest the capture again with this one\n"
    )
    manifest["version"] = 1
    (dataset / "manifest.json").write_text(json.dumps(manifest))
    result = CliRunner().invoke(app, ["sql", str(dataset), "SELECT count(*) FROM last_plugs"])
    assert result.exit_code == 0, result.output
