"""Time-of-day logs across midnight: the date comes from the trace's wall time."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from blkscope.ingest.clock import parse_trace_start
from blkscope.ingest.folder import ingest_folder

EVENTS = [
    "254,0    0       68     0.000000000 11421  Q  WS 2168560 + 16 [python3]",
    "254,0    0       69     0.000023184 11421  G  WS 2168560 + 16 [python3]",
    "254,0    0       73     0.000032819 11421  D  WS 2168560 + 16 [python3]",
    "254,0    1       74     0.000207129     0  C  WS 2168560 + 16 [0]",
]
WRITEBACK = [
    "Attaching 4 probes...",
    "Tracing writeback... Hit Ctrl-C to end.",
    "TIME      DEVICE   PAGES    REASON           ms",
    "23:59:59  254:0    100      periodic         1.000",
    "00:00:01  254:0    100      periodic         1.000",
]


@pytest.mark.parametrize(
    ("trace_start", "expected"),
    [
        ("2026-11-21T23:59:58Z", [1_500_000_000, 3_500_000_000]),
        ("2026-11-22T00:00:00.5Z", [-1_000_000_000, 1_000_000_000]),
        ("2026-11-22T01:00:00+01:00", [-500_000_000, 1_500_000_000]),
    ],
)
def test_writeback_crossing_midnight(tmp_path: Path, trace_start: str, expected: list) -> None:
    src = tmp_path / "cap"
    src.mkdir()
    (src / "blkparse.txt").write_text("\n".join(EVENTS) + "\n")
    (src / "writeback.txt").write_text("\n".join(WRITEBACK) + "\n")
    ingest_folder(src, tmp_path / "ds", trace_start_ns=parse_trace_start(trace_start))
    table = pq.read_table(tmp_path / "ds" / "writeback.parquet")
    assert table["t_ns"].to_pylist() == expected
