"""The streaming pass (analyze/stream) on inputs that are not one time-ordered file, and what
analyze leaves behind."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from blkscope.analyze import memory
from blkscope.analyze.memory import SPILL_DIR
from blkscope.analyze.stream import events as stream_events
from blkscope.ingest.blkparse_ingest import ingest_blkparse
from blkscope.pipeline import analyse
from tests.analyze.conftest import DATA

# every column but the event ids, which carry the input's index
REQUESTS = "SELECT * EXCLUDE (d_eid, c_eid) FROM requests ORDER BY ALL"
BIOS = "SELECT * EXCLUDE (q_eid, d_eid) FROM bios ORDER BY ALL"


def test_two_inputs_interleaved_in_time_give_the_tables_of_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A capture given as two blkparse files, one per CPU (each in time order, but the second
    one's events fall between the first one's): the pass reads the events merged in time order
    (through DuckDB's sort, under the analysis' memory limit and spilling into the dataset's
    next version) and rebuilds the same requests and bios as from the one file."""
    bounded: list[str] = []

    def spy(con: duckdb.DuckDBPyConnection, dataset: Path) -> Path:
        bounded.append(dataset.name)
        return memory.bound_memory(con, dataset)

    monkeypatch.setattr(stream_events, "bound_memory", spy)
    sample = (DATA / "mq30-requeue.blkparse.txt").read_text().splitlines(keepends=True)
    by_cpu = {cpu: [line for line in sample if line.split()[1] == cpu] for cpu in ("0", "1")}
    assert len(by_cpu["0"]) > 50 and len(by_cpu["1"]) > 50
    parts = []
    for cpu, lines in by_cpu.items():
        parts.append(tmp_path / f"cpu{cpu}.txt")
        parts[-1].write_text("".join(lines))
    whole, split = tmp_path / "whole", tmp_path / "split"
    ingest_blkparse([str(DATA / "mq30-requeue.blkparse.txt")], whole)
    ingest_blkparse([str(p) for p in parts], split)
    with analyse(whole).con as one, analyse(split).con as two:
        for query in (REQUESTS, BIOS):
            assert one.sql(query).fetchall() == two.sql(query).fetchall()
        assert two.sql("SELECT count(DISTINCT d_eid >> 40) FROM requests").fetchall() == [(2,)]
    # once, on the version being written (.split.tmp-PID-RANDOM), never on the dataset itself
    assert len(bounded) == 1 and bounded[0].startswith(".split.tmp-"), bounded
    assert not (split / SPILL_DIR).exists()


def test_analyze_leaves_no_spill_folder(tmp_path: Path) -> None:
    """DuckDB spills into the dataset's next version while it works; that folder never becomes
    part of the dataset."""
    ds = tmp_path / "ds"
    ingest_blkparse([str(DATA / "mq30-flush.blkparse.txt")], ds)
    analyse(ds).close()
    assert not (ds / SPILL_DIR).exists()
    assert {"requests.parquet", "bios.parquet"} <= {p.name for p in ds.iterdir()}
