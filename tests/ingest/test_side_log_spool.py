"""Big side-log tables spill to disk while ingest waits for the trace's clock (bounded memory;
the bench's writeback-big bomb measures it), and nothing else changes: the same tables, the
same alignments, no spill file left in the dataset."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from blkscope.ingest.folder import SPOOL_FOLDER, ingest_folder
from blkscope.ingest.logs import spool, textlog
from blkscope.ingest.logs.writeback_log import parse_writeback
from blkscope.ingest.timeline import align, align_rows
from tests.conftest import MQ30

SIDE_TABLES = ("writeback", "biosnoop", "iostat_log", "vmstat", "meminfo", "series")


def _ingest(out: Path) -> dict[str, object]:
    ingest_folder(MQ30, out)
    return json.loads((out / "manifest.json").read_text())


def test_spilled_side_logs_give_the_same_dataset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = _ingest(tmp_path / "held.dataset")
    spilled_files = []
    real_spool = spool.Spool

    def counting(schema: pa.Schema) -> spool.Spool:
        made = real_spool(schema)
        spilled_files.append(made.path)
        return made

    monkeypatch.setattr(textlog, "BATCH_ROWS", 1000)  # the real logs: several batches each
    monkeypatch.setattr(textlog, "SPOOL_AFTER_BATCHES", 1)
    monkeypatch.setattr(textlog, "Spool", counting)
    spilled = _ingest(tmp_path / "spilled.dataset")
    # biosnoop (10,857 rows) spills; the small logs (writeback: 79 rows) stay on the heap
    assert len(spilled_files) == 1
    assert not any(Path(f).exists() for f in spilled_files)
    assert not (tmp_path / "spilled.dataset" / SPOOL_FOLDER).exists()
    assert spilled["clock"] == held["clock"]  # the alignments, rows used, offsets
    for name in SIDE_TABLES:
        a = pq.read_table(tmp_path / "held.dataset" / f"{name}.parquet")
        b = pq.read_table(tmp_path / "spilled.dataset" / f"{name}.parquet")
        assert a.num_rows > 0
        assert b.equals(a), name


def _work_in_one_piece(
    table: pa.Table, traced: set[tuple[int, int]]
) -> tuple[np.ndarray, np.ndarray, int]:
    # what the alignment did before it read batches: whole columns, then align_writeback's own
    # filter and even sample
    major = pc.fill_null(table["dev_major"], -1).to_numpy().astype(np.int64)
    minor = pc.fill_null(table["dev_minor"], -1).to_numpy().astype(np.int64)
    wanted = np.array([(a << 32) + b for a, b in traced], np.int64)
    on = np.isin((major << 32) + minor, wanted)
    stamps = table["time_ns"].to_numpy()[on]
    durations = table["duration_ns"].to_numpy()[on]
    keep = durations >= align.MIN_WORK_NS
    s, d = stamps[keep], durations[keep]
    if s.size > align.WORK_ROWS:
        pick = np.linspace(0, s.size - 1, align.WORK_ROWS).round().astype(np.int64)
        s, d = s[pick], d[pick]
    return s, d, int(stamps[0])


@pytest.mark.parametrize("work_rows", [20, 5000])
@pytest.mark.parametrize("batch_rows", [7, 1000, 1 << 18])
def test_work_items_read_in_batches_are_those_of_the_whole_log(
    monkeypatch: pytest.MonkeyPatch, work_rows: int, batch_rows: int
) -> None:
    table = parse_writeback(str(MQ30 / "writeback_ns.txt"))
    assert table.num_rows == 79
    monkeypatch.setattr(align, "WORK_ROWS", work_rows)
    monkeypatch.setattr(align_rows, "WORK_ROWS", work_rows)
    monkeypatch.setattr(align_rows, "BATCH_ROWS", batch_rows)
    traced = {(254, 0)}
    got = align_rows.writeback_work(table, traced)
    assert got is not None
    want = _work_in_one_piece(table, traced)
    assert len(got[0]) == min(work_rows, len(want[0]))
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    assert got[2] == want[2]


def test_a_log_of_other_devices_only_gives_no_work_items() -> None:
    table = parse_writeback(str(MQ30 / "writeback_ns.txt"))
    assert align_rows.writeback_work(table, {(8, 0)}) is None
