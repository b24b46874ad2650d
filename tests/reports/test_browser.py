"""The mq fixture's report in headless Chromium with the network blocked: it renders every chart,
logs nothing to the console and asks for nothing over the network."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from blkscope.reports.charts import CHARTS
from blkscope.reports.make_report import Written
from tests.reports.conftest import ARTIFACTS
from tests.reports.page_parser import parse

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)"
)
OFFLINE = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--proxy-server=127.0.0.1:9",  # anything that does reach for the network goes nowhere
    "--enable-logging=stderr",
    "--v=0",
    "--hide-scrollbars",
]
WINDOW = "--window-size=1280,2400"
WHOLE_PAGE = "--window-size=1280,10000"  # tall enough for a one-device report, top to bottom


def _chromium(page: Path, profile: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    return subprocess.run(
        [CHROMIUM, *OFFLINE, f"--user-data-dir={profile}", *extra, page.resolve().as_uri()],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def page_requests(net_log: Path) -> list[str]:
    """URLs the page itself asked for; the browser's own background calls carry no origin."""
    log = json.loads(net_log.read_text())
    start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    return [
        e["params"]["url"]
        for e in log["events"]
        if e["type"] == start
        and e.get("params", {}).get("initiator", "not an origin") != "not an origin"
    ]


def console_lines(stderr: str) -> list[str]:
    """Console messages Chromium logged (any of them: the page has no script at all)."""
    return [line for line in stderr.splitlines() if re.search(r":CONSOLE(\(\d+\))?:", line)]


@pytest.fixture(scope="module")
def rendered(mq_report: Written, tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    tmp = tmp_path_factory.mktemp("chromium")
    net_log = tmp / "net.json"
    dom = _chromium(
        mq_report.report, tmp / "profile", WINDOW, f"--log-net-log={net_log}", "--dump-dom"
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "report-mq-writeback-30s.png"
    shot.unlink(missing_ok=True)
    done = _chromium(mq_report.report, tmp / "profile2", WHOLE_PAGE, f"--screenshot={shot}")
    assert done.returncode == 0, done.stderr[-2000:]
    return {"dom": dom.stdout, "stderr": dom.stderr, "net_log": net_log, "shot": shot}


def test_the_harness_sees_console_messages_and_page_requests(tmp_path: Path) -> None:
    bad = tmp_path / "bad.html"
    bad.write_text(
        '<html><body><img src="http://example.invalid/x.png">'
        '<script>console.error("boom")</script></body></html>'
    )
    net_log = tmp_path / "net.json"
    run = _chromium(bad, tmp_path / "profile", WINDOW, f"--log-net-log={net_log}", "--dump-dom")
    (message,) = console_lines(run.stderr)
    assert '"boom"' in message
    assert page_requests(net_log) == ["http://example.invalid/x.png"]


def test_the_page_loads_offline_without_console_messages(rendered: dict[str, object]) -> None:
    assert console_lines(str(rendered["stderr"])) == []
    assert page_requests(Path(str(rendered["net_log"]))) == []


def test_every_chart_is_rendered(rendered: dict[str, object]) -> None:
    page = parse(str(rendered["dom"]))
    assert page.charts == {"dev0": list(CHARTS)}
    assert all(n == 1 for n in page.svg_in_chart.values())
    assert page.tags["table"] >= 4


def test_a_screenshot_is_saved(rendered: dict[str, object]) -> None:
    shot = Path(str(rendered["shot"]))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size > 50_000  # a blank page is a few KB


def test_the_headline_names_the_5_s_writeback_period(rendered: dict[str, object]) -> None:
    headline = " ".join(parse(str(rendered["dom"])).headlines)
    assert re.search(r"every 5\.\d\d s \(matches vm\.dirty_writeback_centisecs", headline)


SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "captures"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["mq-writeback-30s", "mq-writeback-60s"])
def test_screenshots_of_the_shared_mq_captures(name: str, tmp_path: Path) -> None:
    """Whole-page screenshots of both real mq captures, kept in test-artifacts/ to look at."""
    from blkscope.reports.make_report import make_report

    capture = SHARED / name
    if not (capture / "blkparse.txt.zst").exists():
        pytest.skip("needs ../shared/captures")
    done = make_report(capture, tmp_path / "report.html", timestamp=False)
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / f"report-shared-{name}.png"
    shot.unlink(missing_ok=True)
    run = _chromium(done.report, tmp_path / "profile", WHOLE_PAGE, f"--screenshot={shot}")
    assert run.returncode == 0, run.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 200_000
    assert console_lines(run.stderr) == []
