"""The streaming pass (analyze/stream) on inputs that are not one time-ordered file, and what
analyze leaves behind."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from blkscope.analyze import memory
from blkscope.analyze.memory import SPILL_DIR
from blkscope.analyze.stream import events as stream_events
from blkscope.ingest.block_events import ingest_blkparse
from blkscope.pipeline import analyze
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
    with analyze(whole).con as one, analyze(split).con as two:
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
    analyze(ds).close()
    assert not (ds / SPILL_DIR).exists()
    assert {"requests.parquet", "bios.parquet"} <= {p.name for p in ds.iterdir()}


def test_events_before_the_trace_base_time_are_in_order(tmp_path: Path) -> None:
    """blktrace binaries can hold events stamped before the trace's base time (a CPU's events
    from before its first timestamp note: /work/caps/bfq-sync has 24, down to -10.8 ms). The pass
    took the first negative time for an order violation, then raised OutOfOrder out of the
    sorted retry too: a traceback from `blkscope report`. Negative times pair like any other."""
    plain, shifted = tmp_path / "plain", tmp_path / "shifted"
    ingest_blkparse([str(DATA / "mq30-requeue.blkparse.txt")], plain)
    shutil.copytree(plain, shifted)
    events = pq.read_table(shifted / "events.parquet")
    shift = pc.min(events["time_ns"]).as_py() + 10_764_683  # the first event at -10.8 ms
    moved = pc.subtract(events["time_ns"], shift)
    pq.write_table(events.set_column(events.schema.get_field_index("time_ns"), "time_ns", moved),
                   shifted / "events.parquet")  # fmt: skip
    same = (
        "SELECT sector, nsectors, status, q2c_ns, d2c_ns, q_time_ns + {s} FROM bios ORDER BY ALL",
        "SELECT kind, nsectors, requeues, c_time_ns + {s} FROM requests ORDER BY ALL",
    )
    with analyze(plain).con as one, analyze(shifted).con as two:
        assert two.sql("SELECT min(q_time_ns) < 0 FROM bios").fetchall() == [(True,)]
        for query in same:
            want = one.sql(query.format(s=0)).fetchall()
            assert two.sql(query.format(s=shift)).fetchall() == want
            assert len(want) > 30
