"""Side logs are read a chunk at a time and become Arrow a batch of rows at a time (bounded
memory), with the same tables as in one piece: chunk edges in the middle of a blank run, rows
and batches of any size change nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from blkscope.errors import ParseError
from blkscope.ingest.detect import detect_format
from blkscope.ingest.logs import textlog
from blkscope.ingest.logs.biosnoop import parse_biosnoop
from blkscope.ingest.logs.registry import PARSERS
from tests.conftest import ROOT

LOG = ROOT / "fixtures" / "mq-writeback-30s" / "biosnoop.txt.zst"
FORMATS = ROOT / "tests" / "data" / "formats"
REAL_LOGS = [
    *(ROOT / "fixtures" / "mq-writeback-30s" / name for name in (
        "biosnoop.txt.zst", "iostat.txt", "meminfo.txt", "vmstat.txt", "writeback.txt",
        "writeback_ns.txt", "prober.csv",
    )),
    *(FORMATS / name for name in (
        "bcc_biolatency_DT.txt", "bcc_biolatency_j.txt", "bt_hist.json", "bt_hist.txt",
        "bt_hist_interval.txt", "biosnoop_bt.txt", "biosnoop_lost.txt", "biosnoop_que.txt",
        "iostat_dxk.txt", "iostat_new_mt.txt", "iostat_old.txt", "iostat_x_no_t.txt",
        "meminfo_snapshots.txt", "vmstat_a.txt", "vmstat_t.txt",
    )),
]  # fmt: skip


@pytest.mark.parametrize("log", REAL_LOGS, ids=lambda p: p.name)
def test_tiny_chunks_and_batches_give_the_same_tables(
    log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kind = detect_format(str(log))
    assert kind is not None
    whole = PARSERS[kind](str(log))
    assert any(t.num_rows for t in whole.values())
    monkeypatch.setattr(textlog, "CHUNK_BYTES", 100)  # a chunk ends at the first newline past it
    monkeypatch.setattr(textlog, "BATCH_ROWS", 3)
    assert PARSERS[kind](str(log)) == whole


def test_a_blank_run_across_chunks_is_one_blank_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A vmstat report ends at a blank line; 300 of them split over three chunks stay one,
    and the line numbers after them count every one."""
    log = tmp_path / "vmstat.txt"
    head = (FORMATS / "vmstat_a.txt").read_text().splitlines(keepends=True)
    log.write_text("".join(head[:4]) + "\n" * 300 + "".join(head[4:]) + " x\n")
    monkeypatch.setattr(textlog, "CHUNK_BYTES", 100)
    with pytest.raises(ParseError) as err:
        PARSERS["vmstat"](str(log))
    assert str(err.value).startswith(f"{log}:{len(head) + 301}: expected")


def test_batches_of_any_size_give_the_same_table(monkeypatch: pytest.MonkeyPatch) -> None:
    whole = parse_biosnoop(str(LOG))
    assert whole.num_rows == 10_857
    monkeypatch.setattr(textlog, "BATCH_ROWS", 1000)
    batched = parse_biosnoop(str(LOG))
    assert batched.equals(whole)
    assert batched.schema.metadata == whole.schema.metadata


def test_an_out_of_range_value_in_a_later_batch_names_its_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(textlog, "BATCH_ROWS", 2)
    rows = [f"{i}.000000 dd 100 vda W {i * 8} 4096 0.10" for i in range(5)]
    rows[3] = "3.000000 dd 100 vda W 99999999999999999999 4096 0.10"
    log = tmp_path / "biosnoop.txt"
    log.write_text("TIME(s) COMM PID DISK T SECTOR BYTES LAT(ms)\n" + "\n".join(rows) + "\n")
    with pytest.raises(ParseError) as err:
        parse_biosnoop(str(log))
    assert str(err.value).startswith(f"{log}:5: SECTOR: 99999999999999999999 is out of range")
