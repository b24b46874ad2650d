"""Read a report page's structure with the standard library's HTML parser."""

from __future__ import annotations

from html.parser import HTMLParser


class PageStructure(HTMLParser):
    """Tags, chart sections per device, headline sentences (each device's div.headline list)
    and all text of a page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: dict[str, int] = {}
        self.charts: dict[str, list[str]] = {}  # device section id -> data-chart keys in order
        self.svg_in_chart: dict[str, int] = {}  # chart section id -> <svg> elements inside
        self.headlines: list[str] = []
        self.text: list[str] = []
        self._device = ""
        self._chart = ""
        self._in_li = False
        self._in_headline = False  # the headline's sentences are its <li> (lists elsewhere are not)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.tags[tag] = self.tags.get(tag, 0) + 1
        if tag == "section" and a.get("class") == "device":
            self._device = a["id"] or ""
            self.charts[self._device] = []
        if tag == "section" and a.get("class") == "chart":
            self._chart = a["id"] or ""
            self.charts[self._device].append(a["data-chart"] or "")
            self.svg_in_chart[self._chart] = 0
        if tag == "svg" and self._chart:
            self.svg_in_chart[self._chart] += 1
        if tag == "div" and a.get("class") == "headline":
            self._in_headline = True
        if tag == "li" and self._in_headline:
            self._in_li = True
            self.headlines.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "li":
            self._in_li = False
        if tag == "ul":  # the headline's list ends its div (no nested lists there)
            self._in_headline = False
        if tag == "figure":
            self._chart = ""

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._in_li:
            self.headlines[-1] += data


def parse(html: str) -> PageStructure:
    """Parse a whole page."""
    page = PageStructure()
    page.feed(html)
    page.close()
    return page
