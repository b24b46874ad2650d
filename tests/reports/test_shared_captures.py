"""Reports of the shared real captures (skipped when ../shared/captures is not beside the checkout)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from blkscope.reports.make_report import make_report
from tests.reports.page_parser import parse

CAPTURES = Path(__file__).resolve().parents[2] / ".." / "shared" / "captures"
MQ60 = CAPTURES / "mq-writeback-60s"


@pytest.mark.slow
@pytest.mark.skipif(not (MQ60 / "blkparse.txt.zst").exists(), reason="needs ../shared/captures")
def test_the_60_s_capture_headline_names_the_5_s_writeback_period(tmp_path: Path) -> None:
    done = make_report(MQ60, tmp_path / "report.html", timestamp=False)
    headline = parse(done.report.read_text()).headlines[-1]
    found = dict(
        re.findall(r"(\w+) every (\d\.\d\d) s \(matches vm\.dirty_writeback_centisecs", headline)
    )
    assert headline.startswith("Periodic: "), headline
    assert set(found) == {"kworker_writes", "writeback_events"}
    assert all(abs(float(v) - 5.0) <= 0.2 for v in found.values())
    (dev,) = done.summary_doc["devices"]
    assert dev["ios"] == 33_664
    assert dev["periods"][0]["knobs"][0] == "vm.dirty_writeback_centisecs"
    assert dev["periods_source"] == "findings"
