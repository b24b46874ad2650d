"""One command opens its dataset once: at most one manifest read and one DuckDB connection
(counted in-process), and the Dataset handle's own behaviour."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pytest
from typer.testing import CliRunner

import blkscope
from blkscope.cli import app
from blkscope.dataset import Dataset
from blkscope.errors import DatasetError, InputFormatError
from blkscope.store import manifest as manifest_module

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "fixtures" / "mq-writeback-30s"
runner = CliRunner()


@pytest.fixture
def mq(mq_dataset: Path) -> Path:
    return mq_dataset


@dataclass
class Opened:
    """How often the manifest was read and DuckDB connected."""

    manifests: int = 0
    connections: int = 0


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> Opened:
    counts = Opened()
    read, connect = manifest_module.read_manifest_doc, duckdb.connect

    def counted_read(path: Path) -> dict[str, Any]:
        counts.manifests += 1
        return read(path)

    def counted_connect(*args: Any, **kwargs: Any) -> duckdb.DuckDBPyConnection:
        counts.connections += 1
        return connect(*args, **kwargs)

    monkeypatch.setattr(manifest_module, "read_manifest_doc", counted_read)
    monkeypatch.setattr(duckdb, "connect", counted_connect)
    return counts


@pytest.mark.parametrize(
    "command",
    [
        ["report", "{ds}", "-o", "{tmp}/r.html", "-q"],
        ["spikes", "{ds}", "--json"],
        ["periods", "{ds}"],
        ["crosscheck", "{ds}"],
        ["sql", "{ds}", "SELECT count(*) FROM bios"],
        ["check", "{ds}", "--max", "d2c.p99=1s"],
    ],
    ids=lambda c: c[0],
)
def test_a_command_opens_an_analyzed_dataset_once(
    mq: Path, tmp_path: Path, opened: Opened, command: list[str]
) -> None:
    args = [a.format(ds=mq, tmp=tmp_path) for a in command]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert (opened.manifests, opened.connections) == (1, 1)


def test_a_report_of_a_capture_reads_the_manifest_it_wrote_once(
    tmp_path: Path, opened: Opened
) -> None:
    """From the capture folder: ingest, analysis, report. The analysis works on the dataset's
    next version (one connection there), the report on the result (one more); the manifest is
    read once, after ingest, and the analysis hands on the one it wrote."""
    capture = tmp_path / "capture"
    shutil.copytree(FIXTURE, capture)
    result = runner.invoke(app, ["report", str(capture), "-o", str(tmp_path / "r.html"), "-q"])
    assert result.exit_code == 0, result.output
    assert opened.manifests == 1
    assert opened.connections == 2  # the analysis's (on the next version), the report's


def test_the_handle_connects_lazily_and_once(mq: Path, opened: Opened) -> None:
    ds = Dataset(str(mq))  # a str works as well as a Path
    assert (opened.manifests, opened.connections) == (0, 0)
    assert ds.sql("SELECT count(*) AS n FROM bios")["n"].to_list() == [11039]
    assert ds.periods().collect().height == 2
    assert ds.manifest.tables["bios"].rows == 11039
    assert (opened.manifests, opened.connections) == (1, 1)
    ds.close()


def test_a_missing_table_is_named_with_what_there_is(mq: Path) -> None:
    with Dataset(mq) as ds, pytest.raises(DatasetError) as err:
        ds.frame("partitions")
    assert str(err.value) == f"{mq}: has no table 'partitions'"
    assert err.value.hint is not None and err.value.hint.startswith(
        "it has: bio_counts, bios, biosnoop, "
    )


def test_a_path_that_does_not_exist_says_so(tmp_path: Path) -> None:
    with pytest.raises(InputFormatError) as err:
        blkscope.open(tmp_path / "nope", progress=False)
    assert str(err.value) == f"{tmp_path / 'nope'}: does not exist"
