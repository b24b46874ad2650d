"""Each side log is recognised from its content (detect_format) and parsed by its format's parser
(logs.PARSERS), the way folder ingest reads a capture's logs, into the tables it fills."""

from __future__ import annotations

import pytest

from blkscope.ingest.detect import detect_format
from blkscope.ingest.logs.registry import PARSERS
from tests.ingest.formats_golden import DATA


@pytest.mark.parametrize(
    ("sample", "fmt", "tables"),
    [
        ("iostat_old.txt", "iostat", {"iostat_log": 8, "iostat_cpu": 8}),
        ("vmstat_t.txt", "vmstat", {"vmstat": 3}),
        ("meminfo_capture.txt", "meminfo", {"meminfo": 12}),
        ("writeback_ns.txt", "writeback_ns", {"writeback": 9}),
        ("biosnoop_bt.txt", "biosnoop_bt", {"biosnoop": 71}),
        ("bcc_biolatency_j.txt", "hist_json", {"histogram": 50}),
        ("prober.csv", "series_csv", {"series": 20}),
    ],
)
def test_dispatch(sample: str, fmt: str, tables: dict[str, int]) -> None:
    name = detect_format(str(DATA / sample))
    assert name == fmt
    parsed = PARSERS[name](str(DATA / sample))
    assert {k: t.num_rows for k, t in parsed.items()} == tables


def test_blkparse_text_and_prose_are_not_side_logs() -> None:
    assert detect_format(str(DATA / "mq30.blkparse.txt")) not in PARSERS
    assert detect_format(str(DATA / "README.md")) is None
