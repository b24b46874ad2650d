"""Reports built once per session: the bundled mq-writeback-30s fixture and small real cuts."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from blkscope.reports.make_report import Written, make_report

ROOT = Path(__file__).resolve().parents[2]
MQ30_CAPTURE = ROOT / "fixtures" / "mq-writeback-30s"
CUTS = ROOT / "tests" / "data" / "analyze"
GOLDEN = ROOT / "tests" / "golden" / "report"
ARTIFACTS = ROOT / "test-artifacts"
XSS = "<script>alert(1)</script>"
# ends a script element, opens markup that runs script, opens a comment
HOSTILE_COMM = "</script><img src=x onerror=alert(1)><!--"
# a series is named after its file: markup, and U+2028 (a line end to old JavaScript parsers)
HOSTILE_SERIES = "<img src=x onerror=alert(2)>\u2028"


@pytest.fixture(scope="session")
def mq_report(tmp_path_factory: pytest.TempPathFactory) -> Written:
    """The README's main job on the bundled capture folder, without the timestamp."""
    out = tmp_path_factory.mktemp("mq") / "report.html"
    return make_report(MQ30_CAPTURE, out, timestamp=False)


@pytest.fixture(scope="session")
def xss_report(tmp_path_factory: pytest.TempPathFactory) -> Written:
    """A real cut whose application process is renamed to a script tag."""
    tmp = tmp_path_factory.mktemp("xss")
    text = (CUTS / "mq30-requeue.blkparse.txt").read_text().replace("[python3]", f"[{XSS}]")
    (tmp / "trace.txt").write_text(text)
    return make_report(tmp / "trace.txt", tmp / "xss.html", timestamp=False)


@pytest.fixture
def cut_dataset(tmp_path: Path) -> Path:
    """A small real capture folder (blkparse.txt only), to be ingested by the command."""
    capture = tmp_path / "capture"
    capture.mkdir()
    shutil.copy(CUTS / "mq30-requeue.blkparse.txt", capture / "blkparse.txt")
    return capture


@pytest.fixture(scope="session")
def hostile_report(tmp_path_factory: pytest.TempPathFactory) -> Written:
    """A real cut whose application process has a hostile name, beside a user series whose file
    name is hostile too (the cut has no clock, so its samples stay off the charts)."""
    tmp = tmp_path_factory.mktemp("hostile")
    capture = tmp / "capture"
    capture.mkdir()
    text = (CUTS / "mq30-requeue.blkparse.txt").read_text()
    (capture / "blkparse.txt").write_text(text.replace("[python3]", f"[{HOSTILE_COMM}]"))
    rows = "".join(f"{562_513_615_569 + k * 20_000_000},{300 + k}\n" for k in range(50))
    (capture / f"{HOSTILE_SERIES}.csv").write_text("mono_ns,latency_us\n" + rows)
    return make_report(capture, tmp / "hostile.html", timestamp=False)
