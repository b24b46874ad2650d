"""Every trace string is escaped: a process named like a script tag shows as text."""

from __future__ import annotations

from blkscope.dataset import Dataset
from blkscope.reports.make_report import Written
from blkscope.reports.plotting import figure, style, to_svg
from tests.reports.conftest import XSS
from tests.reports.page_parser import parse


def test_the_crafted_process_name_reached_the_dataset(xss_report: Written) -> None:
    con = Dataset(xss_report.dataset).con
    row = con.execute("SELECT count(*) FROM bios WHERE comm = $1", [XSS]).fetchone()
    assert row is not None and row[0] > 0


def test_a_script_tag_in_a_process_name_is_shown_as_text(xss_report: Written) -> None:
    html = xss_report.report.read_text()
    assert "<script" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    page = parse(html)
    assert "script" not in page.tags
    assert XSS in [t.strip() for t in page.text]  # the name is there, as plain text


def test_a_series_named_like_tex_is_plain_text_in_the_charts() -> None:
    """A user series' period panel is titled with its name (a series file's name): matplotlib
    parsed `user:pro$\\x$` as TeX and failed the whole report (ValueError: Unknown symbol)."""
    with style():
        fig, ((ax,),) = figure([1.5])
        ax.set_title("user:pro$\\x$: 5.00 s")
        svg = to_svg(fig, "tex")
    assert ">user:pro$\\x$: 5.00 s<" in svg
