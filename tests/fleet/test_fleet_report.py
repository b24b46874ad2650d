"""The fleet report: styled like the single report, OUTLIER only where there are enough
captures to judge, and no knob match claimed where the knob is unknown (issue 34)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from blkscope.fleet.handle import Fleet
from blkscope.fleet.report import OUTLIER_MIN_DEVICES, fleet_page
from blkscope.reports.page import CSS

SQL = Path(__file__).resolve().parents[2] / "src" / "blkscope" / "fleet" / "sql"


def _cells(page: str, heading: str) -> list[list[str]]:
    """The rows of the table under an h2, as text."""
    section = page.split(f"<h2>{heading}</h2>", 1)[1].split("<h2>", 1)[0]
    rows = re.findall(r"<tr>(.*?)</tr>", section, re.S)
    return [re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", r, re.S) for r in rows]


def test_the_fleet_page_wears_the_single_reports_style(
    local_fleet: tuple[Path, list[dict[str, Any]]],
) -> None:
    page = fleet_page(local_fleet[0])
    assert f"<style>{CSS}</style>" in page
    assert '<p class="meta">3 hosts, 8 captures, ' in page
    assert '<td class="text">edge-1</td>' in page


def test_outliers_are_judged_among_enough_captures(
    local_fleet: tuple[Path, list[dict[str, Any]]],
) -> None:
    page = fleet_page(local_fleet[0])
    assert OUTLIER_MIN_DEVICES == 5 and "f.n >= 5 AND" in (SQL / "fleet_outliers.sql").read_text()
    assert "judged only among at least 5 capture devices.</p>" in page
    devices = Fleet(local_fleet[0]).sql("SELECT DISTINCT fleet_devices FROM fleet_outliers").rows
    assert devices == [(8,)]


def test_a_period_beside_an_unknown_knob_is_no_match_claimed(
    local_fleet: tuple[Path, list[dict[str, Any]]],
) -> None:
    rows = _cells(fleet_page(local_fleet[0]), "Periods per host and the knobs they match")
    judged = {(r[1], r[2]): (r[5], r[6]) for r in rows[1:]}
    # the bundled capture recorded no sysctls: its 5.12 s flusher period cannot be matched
    assert judged[("mq-writeback-30s", "kworker_writes")] == ("-", "unknown")
    assert ("500", "yes") in judged.values()
    assert ("-", "no") not in judged.values()
