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
    # the only script elements are the page's own: its data (JSON, the name \u-escaped) and code
    assert html.count("<script") == 3 and "<script>alert" not in html
    assert "\\u003cscript\\u003ealert(1)\\u003c/script\\u003e" in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    page = parse(html)
    assert page.tags["script"] == 3
    assert XSS in [t.strip() for t in page.text]  # the name is there, as plain text


def test_a_series_named_like_tex_is_plain_text_in_the_charts() -> None:
    """A user series' period panel is titled with its name (a series file's name): matplotlib
    parsed `user:pro$\\x$` as TeX and failed the whole report (ValueError: Unknown symbol)."""
    with style():
        fig, ((ax,),) = figure([1.5])
        ax.set_title("user:pro$\\x$: 5.00 s")
        svg = to_svg(fig, "tex")
    assert ">user:pro$\\x$: 5.00 s<" in svg


def test_embedded_json_cannot_end_its_element_or_the_line() -> None:
    """Every character that could close the <script>, open a comment or end a JavaScript line
    is escaped, and the text reads back as the same document."""
    import json

    from blkscope.reports.page import json_for_script

    doc = {"comm": "</script><!--<img src=x onerror=alert(1)>&amp;\u2028\u2029\x00é"}
    text = json_for_script(doc)
    assert text.isascii() and not set("<>&") & set(text)
    assert "\\u2028" in text and "\\u2029" in text
    assert json.loads(text) == doc
