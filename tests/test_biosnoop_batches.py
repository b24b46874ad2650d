"""biosnoop logs become Arrow a batch of rows at a time (memory), with the same table."""

from __future__ import annotations

from pathlib import Path

import pytest

from blkscope.errors import ParseError
from blkscope.ingest import biosnoop
from blkscope.ingest.biosnoop import parse_biosnoop

LOG = Path(__file__).parent.parent / "fixtures" / "mq-writeback-30s" / "biosnoop.txt.zst"


def test_batches_of_any_size_give_the_same_table(monkeypatch: pytest.MonkeyPatch) -> None:
    whole = parse_biosnoop(str(LOG))
    assert whole.num_rows == 10_857
    monkeypatch.setattr(biosnoop, "BATCH_ROWS", 1000)
    batched = parse_biosnoop(str(LOG))
    assert batched.equals(whole)
    assert batched.schema.metadata == whole.schema.metadata


def test_an_out_of_range_value_in_a_later_batch_names_its_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(biosnoop, "BATCH_ROWS", 2)
    rows = [f"{i}.000000 dd 100 vda W {i * 8} 4096 0.10" for i in range(5)]
    rows[3] = "3.000000 dd 100 vda W 99999999999999999999 4096 0.10"
    log = tmp_path / "biosnoop.txt"
    log.write_text("TIME(s) COMM PID DISK T SECTOR BYTES LAT(ms)\n" + "\n".join(rows) + "\n")
    with pytest.raises(ParseError) as err:
        parse_biosnoop(str(log))
    assert str(err.value).startswith(f"{log}:5: SECTOR: 99999999999999999999 is out of range")
