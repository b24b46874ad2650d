"""Golden tests: small real cuts of captures -> ingest -> analyze -> CSVs of the tables.

The cuts (tests/data/analyze) each hold one hard case, with IOs cut at both ends:
- mq30-flush: `Q FWS` / `G FWS` / `D FN` / `C FN 0` / `C WS 0 [0]` flush sequences.
- mq30-requeue: requeues (R then a second D: D2C from the last D), splits of 16384-sector bios.
- mq30-request-merge: a front merge (F), bio merges (M) and two request-request merges (M at
  unplug), whose bios end in the D of the request they were merged into.
- loop-flush-split: 2048-sector bios split into 16 pieces, a `Q FWFSM` with a preflush and
  post-flush, and the zero-length `C WSM 524560 [0]` ending it.
- mq60-two-flushes: two processes' `Q FWS` / `G FWS` back to back, then two `D FN`, `C FN 0`,
  `C WS 0 [0]` sequences, paired first-in first-out.
- fio-same-sector (from the 8 M-event fio_sched capture): two writers' requests for the same
  sector in flight at once (D D C C), paired first-in first-out.
- synthetic-dm-remap: the one hand-written cut (the capture VM's kernel has no device mapper):
  a bio-based device 253,0 (Q and C only) remapped (A) onto 8,0, the second IO cut by the end.
- loop-partitions-remap: the first 300 lines of a capture of fio on two GPT partitions of loop0
  (added with `partx -a`, since this kernel does not scan partitions; tests/data/analyze/
  README.md tells how), traced on loop0: every Q follows an A from 259,0 or 259,1.
Regenerate with BLKSCOPE_UPDATE_GOLDEN=1 after checking the diff by eye.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from blkscope.ingest.block_events import ingest_blkparse
from blkscope.pipeline import analyze
from tests.analyze.conftest import DATA, GOLDEN
from tests.golden import golden_text

SAMPLES = [
    "mq30-flush",
    "mq30-requeue",
    "mq30-request-merge",
    "loop-flush-split",
    "mq60-two-flushes",
    "fio-same-sector",
    "synthetic-dm-remap",
    "loop-partitions-remap",
]
TABLES = {
    "requests": "SELECT * FROM requests ORDER BY d_eid NULLS LAST, c_eid",
    "bios": "SELECT * FROM bios ORDER BY q_eid",
    "stage_stats": "SELECT * FROM stage_stats WHERE level IN ('device', 'op') ORDER BY ALL",
    "depth": "SELECT * FROM depth ORDER BY ALL",
}


def _csv(names: list[str], rows: list[tuple[object, ...]]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(names)
    writer.writerows(rows)
    return buf.getvalue()


@pytest.mark.slow
@pytest.mark.parametrize("sample", SAMPLES)
def test_golden(tmp_path: Path, sample: str) -> None:
    ds = tmp_path / "ds"
    ingest_blkparse([str(DATA / f"{sample}.blkparse.txt")], ds)
    with analyze(ds).con as con:
        for table, query in TABLES.items():
            rel = con.sql(query)
            got = _csv(rel.columns, rel.fetchall())
            golden = GOLDEN / f"{sample}.{table}.csv"
            assert got == golden_text(golden, got), f"{golden} differs"


def test_partition_remaps_put_each_bio_back_at_its_partition_start(tmp_path: Path) -> None:
    """loop0p1 starts at sector 2048 and loop0p2 at 411648 (sfdisk's GPT: 200 MiB, then the
    rest); every bio's remap source plus that start is its sector on loop0."""
    ds = tmp_path / "ds"
    ingest_blkparse([str(DATA / "loop-partitions-remap.blkparse.txt")], ds)
    with analyze(ds).con as con:
        rows = con.execute("""
            SELECT remap_dev_major, remap_dev_minor, min(sector - remap_sector),
                   max(sector - remap_sector), count(*), count(q2c_ns)
            FROM bios GROUP BY ALL ORDER BY ALL""").fetchall()
    assert rows == [(259, 0, 2048, 2048, 2, 2), (259, 1, 411648, 411648, 41, 40)]
