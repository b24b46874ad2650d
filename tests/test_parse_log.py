"""parse_log picks the parser from the content and names the tables it fills."""

from __future__ import annotations

import pytest

from blkscope.errors import InputFormatError
from blkscope.ingest.logs import parse_log
from tests.formats_golden import DATA


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
    name, parsed = parse_log(str(DATA / sample))
    assert name == fmt
    assert {k: t.num_rows for k, t in parsed.items()} == tables


def test_refusals() -> None:
    with pytest.raises(InputFormatError) as err:
        parse_log(str(DATA / "mq30.blkparse.txt"))
    assert str(err.value) == f"{DATA / 'mq30.blkparse.txt'}: this is blkparse text, not a side log"
    with pytest.raises(InputFormatError) as err:
        parse_log(str(DATA / "README.md"))
    assert str(err.value) == f"{DATA / 'README.md'}: unknown format: not a log blkscope reads"
