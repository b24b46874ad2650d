"""The bundled capture's report in real headless Chromium, driven over the DevTools protocol
(tests/reports/cdp.py) with the network blocked: the charts are drawn with nothing logged and
nothing fetched, the prober's series and the heat map are there, hovering names what is under
the pointer, zooming one time chart moves them all, and a hostile process name runs nothing."""

from __future__ import annotations

import math
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from blkscope.dataset import Dataset
from blkscope.reports.charts import CHARTS
from blkscope.reports.make_report import Written
from blkscope.reports.timeline import TIME_CHARTS
from tests.reports.cdp import Browser
from tests.reports.conftest import ARTIFACTS, HOSTILE_COMM

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)"
)

# the centre of an element, scrolled to the middle of the viewport, in viewport CSS pixels
CENTRE = """(e => { e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect();
  return [r.x + r.width / 2, r.y + r.height / 2]; })"""
TIP = "(t => t.hidden ? null : t.innerText)(document.getElementById('blkscope-tip'))"
# viewport pixels of (time, y in the chart's own units) on a time chart, scrolled into view
POINT = """((key, t_ns, y) => { const s = document.querySelector(`svg[data-chart=${key}]`);
  s.scrollIntoView({block: 'center'}); const t0 = Number(s.dataset.viewT0);
  const t1 = Number(s.dataset.viewT1); const p = s.createSVGPoint();
  p.x = 78 + (t_ns - t0) / (t1 - t0) * 908; p.y = y;
  const q = p.matrixTransform(s.getScreenCTM()); return [q.x, q.y]; })"""
VIEWS = (
    "[...document.querySelectorAll('svg.tchart')].map(s => [s.dataset.viewT0, s.dataset.viewT1])"
)


def _shot(browser: Browser, name: str, whole_page: bool = False) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / name
    path.unlink(missing_ok=True)
    browser.screenshot(path, whole_page)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return path


@pytest.fixture(scope="module")
def page(mq_report: Written, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    assert CHROMIUM is not None
    with Browser(CHROMIUM, tmp_path_factory.mktemp("chromium")) as browser:
        browser.open(mq_report.report)
        yield browser


def _move_to(page: Browser, selector: str) -> str | None:
    """Point at the element and return the tooltip's text."""
    x, y = page.js(f"{CENTRE}(document.querySelector({selector!r}))")
    page.mouse("mouseMoved", x, y)
    tip: str | None = page.js(TIP)
    return tip


def test_the_harness_sees_console_messages_requests_and_dialogs(tmp_path: Path) -> None:
    assert CHROMIUM is not None
    bad = tmp_path / "bad.html"
    bad.write_text(
        '<html><body><img src="http://example.invalid/x.png">'
        '<script>console.error("boom"); onload = () => setTimeout(() => alert("ran"))</script></body></html>'
    )
    with Browser(CHROMIUM, tmp_path / "profile") as browser:
        browser.open(bad)
        browser.wait_for("Page.javascriptDialogOpening", timeout=30)
        assert browser.dialogs() == ["ran"]
        assert sorted(browser.console()) == [
            "Failed to load resource: net::ERR_PROXY_CONNECTION_FAILED",
            "boom",
        ]
        assert browser.requests() == ["http://example.invalid/x.png"]
        browser.send("Page.handleJavaScriptDialog", accept=True)


def test_the_page_draws_offline_without_console_messages(page: Browser) -> None:
    assert page.js("document.documentElement.dataset.chartsDrawn") == str(len(TIME_CHARTS))
    assert page.console() == []
    assert page.requests() == []
    assert page.dialogs() == []
    assert page.js("document.querySelectorAll('.needs-script').length") == 0


def test_every_chart_is_drawn_in_page_order(page: Browser) -> None:
    keys = page.js("[...document.querySelectorAll('section.chart')].map(s => s.dataset.chart)")
    assert keys == [*TIME_CHARTS, *CHARTS]
    drawn = page.js("[...document.querySelectorAll('section.chart')].map(s => "
                    "s.querySelectorAll('figure svg').length)")  # fmt: skip
    assert drawn == [1] * len(keys)


def test_the_probers_series_is_drawn_on_both_latency_panels(
    page: Browser, mq_report: Written
) -> None:
    with Dataset(mq_report.dataset).con as con:
        ((placed, slowest_t, slowest_us),) = con.execute(
            "SELECT count(t_ns), arg_max(t_ns, value), max(value) FROM series "
            "WHERE series = 'prober'"
        ).fetchall()
    dots = page.js(
        "[...document.querySelectorAll('svg[data-chart=latency] circle[data-series=\"user:prober\"]')]"
        ".map(c => [Number(c.dataset.tNs), Number(c.dataset.ns)])"
    )
    assert placed == 1444 and len(dots) == 2 * placed  # D2C and Q2C panels, every sample
    assert max(dots, key=lambda d: d[1]) == [slowest_t, slowest_us * 1000]
    assert (
        page.js("document.querySelectorAll('svg[data-chart=latency] path.user-line').length") == 2
    )
    # its 6 spikes ringed on each panel (the table's user:prober spikes)
    assert page.js("document.querySelectorAll('svg[data-chart=latency] "
                   "circle.spike[data-metric=\"user:prober\"]').length") == 12  # fmt: skip
    legend = page.js("document.querySelector('[data-legend=latency]').innerText")
    assert "user:prober" in legend


def test_the_heat_map_is_drawn_from_its_table(page: Browser, mq_report: Written) -> None:
    with Dataset(mq_report.dataset).con as con:
        most = con.execute(
            "SELECT stage, max(n) FROM latency_heatmap GROUP BY 1 ORDER BY 1"
        ).fetchall()
    assert most == [("D2C", 57), ("Q2C", 73)]
    svg = "document.querySelector('svg[data-chart=heatmap]')"
    assert page.js(f"{svg}.querySelectorAll('path.cell').length") >= 4  # one path per colour
    keys = page.js(f"[...{svg}.querySelectorAll('text')].map(t => t.textContent)"
                   ".filter(t => t.endsWith('IOs per cell'))")  # fmt: skip
    assert keys == ["57 IOs per cell", "73 IOs per cell"]
    assert page.js(f"{svg}.querySelectorAll('circle[data-series=\"user:prober\"]').length") == 2888


def test_hovering_names_the_point_the_cell_and_the_episode(page: Browser) -> None:
    prober = "svg[data-chart=latency] circle[data-series='user:prober'][data-t-ns='25176822526']"
    tip = _move_to(page, prober)
    # the sample, then the spike ringing it, then the sample next to it (within 7 px)
    assert tip is not None and tip.splitlines()[:6] == [
        "user:prober: 76.7 ms",
        "at 25.177 s (23:38:14.503 UTC)",
        "the application's own log (us)",
        "Spike 9 of user:prober: 76.7 ms",
        "at 25.177 s (23:38:14.503 UTC)",
        "window 24.0 s to 26.0 s, episode 5",
    ]
    # the slowest IO of the trace: its bin's p50/p99/count are the bios' (quantile_disc over
    # the 40 bios completing in 25.20-25.25 s: 30,528,203 and 53,065,207 ns)
    slowest = "svg[data-chart=latency] > g:nth-of-type(2) circle.max[data-ns='53065207']"
    tip = _move_to(page, slowest)
    assert (
        tip is not None
        and (
            "Slowest IO in 25.200 s to 25.250 s: 53.1 ms\n23:38:14.526 UTC\nprocess: kworker/u8:4\n"
            "p50 30.5 ms, p99 53.1 ms of 40 IOs (Q2C)"
        )
        in tip
    )
    assert tip.startswith("Spike 3 of q2c: 53.1 ms\nat 25.217 s (23:38:14.543 UTC)\n")
    _shot(page, "browser-hover-prober.png")
    # an empty spot in episode 3 (13.0-14.0 s): high in the Q2C panel, no dot near
    x, y = page.js(f"{POINT}('latency', 13.55e9, 34 + 190 + 22 + 30)")
    page.mouse("mouseMoved", x, y)
    tip = page.js(TIP)
    assert tip is not None and tip.splitlines()[:2] == [
        "Episode 3: 13.000 s to 14.000 s (23:38:02.326 UTC)",
        "cause: unexplained",
    ]
    # the episode's reason, as the episodes table holds it
    assert tip.splitlines()[2].startswith(
        "user:prober (python3 pid 11562): worst 2.99 ms; its extra time went 27% queued in the "
        "block layer before dispatch"
    )


def test_hovering_a_heat_map_cell_names_its_count_latency_and_process(
    page: Browser, mq_report: Written
) -> None:
    """The busiest Q2C cell: the observer's own reads at the trace's end (bpftrace), flagged."""
    with Dataset(mq_report.dataset).con as con:
        ((b, lo, hi, n, observer, slowest, comm),) = con.execute(
            "SELECT bin, lo_ns, hi_ns, n, observer_n, max_ns, slowest_comm FROM latency_heatmap "
            "WHERE stage = 'Q2C' ORDER BY n DESC, bin LIMIT 1"
        ).fetchall()
    assert (b, lo, hi, n, observer, slowest, comm) == (
        689, 2_621_440, 3_145_728, 73, 73, 3_111_360, "bpftrace",
    )  # fmt: skip
    # the cell's middle (on the log axis) from the panel's own tick labels (ms)
    ticks = dict(reversed(page.js(
        "[...document.querySelectorAll('svg[data-chart=heatmap] > g:nth-of-type(2) "
        "text.tick[text-anchor=end]')].map(t => [t.textContent, Number(t.getAttribute('y')) - 3])"
    )))  # fmt: skip
    y = ticks["1"] + math.log10(math.sqrt(lo * hi) / 1e6) * (ticks["10"] - ticks["1"])
    x, y = page.js(f"{POINT}('heatmap', {(b + 0.5) * 50e6}, {y})")
    page.mouse("mouseMoved", x, y)
    assert page.js(TIP) == (
        "73 IOs with Q2C 2.62 ms to 3.15 ms\n"
        "completed 34.450 s to 34.500 s (23:38:23.776 UTC)\n"
        "slowest 3.11 ms, process bpftrace\n"
        "73 of them by the capture's own tools"
    )
    _shot(page, "browser-hover-heatmap-cell.png")


def test_the_wall_clock_axis_reads_round_utc_times(page: Browser) -> None:
    labels = page.js("[...document.querySelectorAll('svg[data-chart=latency] text.walltick')]"
                     ".map(t => t.textContent)")  # fmt: skip
    assert labels == [f"23:37:{s}" for s in (50, 55)] + [f"23:38:{s:02d}" for s in range(0, 25, 5)]


def _tick_labels(page: Browser) -> list[list[str]]:
    return page.js(
        "[...document.querySelectorAll('svg.tchart')].map(s => "
        "[...s.querySelectorAll('text.xtick')].map(t => t.textContent))"
    )


def test_dragging_on_one_chart_zooms_every_time_chart_and_double_click_resets(
    page: Browser,
) -> None:
    full = page.js(VIEWS)
    assert len(full) == len(TIME_CHARTS) and all(v == full[0] for v in full)
    before = _tick_labels(page)
    # drag across the heat map's D2C panel from 18 s to 22 s
    x0, y = page.js(f"{POINT}('heatmap', 18e9, 34 + 100)")
    x1, _ = page.js(f"{POINT}('heatmap', 22e9, 34 + 100)")
    page.drag(x0, x1, y)
    zoomed = page.js(VIEWS)
    assert all(v == zoomed[0] for v in zoomed)  # every time chart, one window
    t0, t1 = (int(v) / 1e9 for v in zoomed[0])
    assert 17.8 < t0 < 18.2 and 21.8 < t1 < 22.2
    after = _tick_labels(page)
    for labels in after:  # every chart's own time axis now reads 18..22 s
        assert labels and all(18 <= float(t) <= 22 for t in labels)
    assert after != before
    _shot(page, "browser-zoomed-18-22s.png")
    page.double_click(*page.js(f"{POINT}('depth', 20e9, 34 + 100)"))
    assert page.js(VIEWS) == full
    assert _tick_labels(page) == before


def test_screenshots_of_the_whole_page(page: Browser) -> None:
    page.js("window.scrollTo(0, 0)")
    shot = _shot(page, "report-mq-writeback-30s.png", whole_page=True)
    assert shot.stat().st_size > 200_000  # a blank page is a few KB


def test_a_hostile_process_and_series_name_runs_nothing(
    hostile_report: Written, tmp_path: Path
) -> None:
    assert CHROMIUM is not None
    html = hostile_report.report.read_text()
    assert "<img" not in html and "</script><" not in html
    with Browser(CHROMIUM, tmp_path / "profile") as browser:
        browser.open(hostile_report.report)
        assert browser.js("document.documentElement.dataset.chartsDrawn") == str(len(TIME_CHARTS))
        assert browser.dialogs() == [] and browser.console() == [] and browser.requests() == []
        assert browser.js("document.images.length") == 0
        # the names are shown, as text: in the process table and under the pointer
        cells = browser.js("[...document.querySelectorAll('table.top td')].map(t => t.textContent)")
        assert HOSTILE_COMM in cells
        tips = []
        for k in range(
            browser.js("document.querySelectorAll('svg[data-chart=latency] circle.max').length")
        ):
            x, y = browser.js(
                f"{CENTRE}(document.querySelectorAll('svg[data-chart=latency] circle.max')[{k}])"
            )
            browser.mouse("mouseMoved", x, y)
            tips.append(browser.js(TIP) or "")
        assert f"process: {HOSTILE_COMM}" in "\n".join(tips)
        legend = browser.js("document.querySelector('[data-legend=latency]').innerText")
        assert "user:<img src=x onerror=alert(2)>" in legend
        _shot(browser, "browser-hostile-names.png")
        assert browser.dialogs() == [] and browser.js("document.images.length") == 0


def test_the_script_names_no_url_and_writes_no_markup() -> None:
    """The script is the page's only code: it names no URL and reads no clock."""
    from blkscope.reports.page import timeline_script

    js = timeline_script()
    assert not re.search(r"https?:|//[a-z]", js.replace("// ", ""))
    assert "innerHTML" not in js.replace('probe.innerHTML = "<svg></svg>"', "")
    assert "</script" not in js.lower() and "<!--" not in js  # it sits inside a <script>
