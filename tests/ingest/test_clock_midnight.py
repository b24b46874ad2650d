"""Time-of-day logs across midnight: the date comes from the trace's wall time."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from blkscope.ingest.folder import ingest_folder
from blkscope.ingest.timeline.clock_model import parse_trace_start

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


def test_iostat_without_date_takes_it_from_another_source(tmp_path: Path) -> None:
    folder = Path(__file__).parents[2] / "fixtures" / "mq-writeback-30s"
    src = tmp_path / "cap"
    src.mkdir()
    text = (folder / "iostat.txt").read_text()
    (src / "iostat.txt").write_text(text.replace("\n11/21/26 ", "\nTime: "))
    for name in ("blkparse.txt.zst", "writeback.txt", "meminfo.txt"):
        (src / name).write_bytes((folder / name).read_bytes())
    ingest_folder(src, tmp_path / "ds")
    manifest = json.loads((tmp_path / "ds" / "manifest.json").read_text())
    zero = manifest["clock"]["trace_zero"]
    # the date comes from meminfo's epoch stamps; the trace's wall zero is 23:37:49.326334032
    assert zero["date_known"] is True
    assert abs(zero["wall_ns"] - 1795304269326334032) < 100_000_000
    assert zero["alignments"]["iostat.txt"]["agrees"] is True
    iostat = pq.read_table(tmp_path / "ds" / "iostat_log.parquet")
    assert iostat["time_text"][0].as_py() == "Time: 23:37:49"
    # the first report (23:37:49) is centred at 23:37:49.5, i.e. 0.17 s after trace zero
    assert abs(iostat["t_ns"][0].as_py() - 173_665_968) < 100_000_000
