"""Every trace string is escaped: a process named like a script tag shows as text."""

from __future__ import annotations

from blkscope.analyze.views import connect
from blkscope.reports.run import Written
from tests.reports.conftest import XSS
from tests.reports.page_parser import parse


def test_the_crafted_process_name_reached_the_dataset(xss_report: Written) -> None:
    con = connect(xss_report.dataset)
    row = con.execute("SELECT count(*) FROM bios WHERE comm = $1", [XSS]).fetchone()
    assert row is not None and row[0] > 0


def test_a_script_tag_in_a_process_name_is_shown_as_text(xss_report: Written) -> None:
    html = xss_report.report.read_text()
    assert "<script" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    page = parse(html)
    assert "script" not in page.tags
    assert XSS in [t.strip() for t in page.text]  # the name is there, as plain text
