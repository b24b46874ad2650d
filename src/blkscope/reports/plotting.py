"""How the report's still charts draw: one Okabe-Ito style, figures with fixed margins (no second
layout pass), inline SVG that scales with the page. (The time charts are the page's script's:
reports/timeline.py and assets/timeline.js.)"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import matplotlib
from cycler import cycler
from matplotlib.axes import Axes
from matplotlib.backends.backend_svg import FigureCanvasSVG
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, NullLocator

# Okabe & Ito's palette: distinguishable with every common colour-vision deficiency.
OKABE_ITO = {
    "orange": "#E69F00",
    "sky": "#56B4E9",
    "green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "purple": "#CC79A7",
    "black": "#000000",
}
OP_COLOURS = {
    "read": OKABE_ITO["blue"],
    "write": OKABE_ITO["vermillion"],
    "discard": OKABE_ITO["green"],
    "flush": OKABE_ITO["purple"],
    "other": OKABE_ITO["black"],
}
STYLE: dict[str, Any] = {
    "svg.fonttype": "none",  # text stays text: small, searchable, no embedded glyph paths
    "svg.hashsalt": "blkscope",  # fixed ids, so the same input gives the same bytes
    "font.family": "sans-serif",
    "font.size": 9,
    "axes.grid": True,
    "grid.color": "#dddddd",
    "grid.linewidth": 0.6,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.prop_cycle": cycler(color=list(OKABE_ITO.values())),
    "legend.fontsize": 8,
    "legend.frameon": False,
    "path.simplify": False,  # simplification could drop a one-bin spike
    "savefig.dpi": 110,  # resolution of the rasterised layers only
    # labels carry names from traced machines (series files, CSV headers): a name with two $
    # would be parsed as TeX, and one like pro$\x$ made the whole report fail (ValueError)
    "text.parse_math": False,
}
WIDTH_IN = 10.0
# 0.1, 1, 10 on log axes, not 10^-1: plain text, and no mathtext parser to build
PLAIN = FuncFormatter(lambda v, _: f"{v:g}")
LEFT_IN, RIGHT_IN = 0.85, 0.3


@contextmanager
def style() -> Iterator[None]:
    """The report's matplotlib settings, for the duration of one chart."""
    with matplotlib.rc_context(STYLE):  # type: ignore[arg-type]
        yield


def figure(
    rows: Sequence[float],
    *,
    top_in: float = 0.35,
    bottom_in: float = 0.5,
    gap_in: float = 0.3,
    cols: int = 1,
    col_gap_in: float = 0.9,
    sharex: bool = True,
) -> tuple[Figure, list[list[Axes]]]:
    """A figure of len(rows) rows (heights in inches) x cols panels, with margins in inches:
    laid out once by arithmetic instead of a tight-bbox pass that draws everything twice."""
    height = top_in + bottom_in + sum(rows) + gap_in * (len(rows) - 1)
    fig = Figure(figsize=(WIDTH_IN, height))
    FigureCanvasSVG(fig)
    width = (WIDTH_IN - LEFT_IN - RIGHT_IN - col_gap_in * (cols - 1)) / cols
    axes: list[list[Axes]] = []
    y = height - top_in
    for h in rows:
        y -= h
        row = []
        for c in range(cols):
            x = LEFT_IN + c * (width + col_gap_in)
            share = axes[0][c] if sharex and axes else None
            row.append(
                fig.add_axes((x / WIDTH_IN, y / height, width / WIDTH_IN, h / height), sharex=share)
            )
        axes.append(row)
        y -= gap_in
    return fig, axes


def to_svg(fig: Figure, chart_id: str) -> str:
    """Render a figure as an <svg> element whose ids are unique to chart_id, sized by the page."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None})
    svg = buf.getvalue()
    svg = svg[svg.index("<svg") :]
    # The page must hold no URL at all: drop the RDF metadata (creator links) and the namespace
    # declarations, which the HTML parser supplies itself for inline SVG (xlink:href included).
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", svg, flags=re.S)
    svg = re.sub(r'\s+xmlns(:\w+)?="[^"]*"', "", svg)
    # The viewBox alone sizes it: the chart takes the width of the page, not a fixed 720 pt.
    head_end = svg.index(">")
    head = re.sub(r'\s(width|height)="[^"]*"', "", svg[:head_end])
    svg = head + svg[head_end:]
    # Path data with 6 decimals of a point and a line per vertex: 0.01 pt is finer than any
    # screen, and spaces do as well as newlines.
    svg = re.sub(r'\sd="([^"]*)"', _short_path, svg)
    # Several SVGs share one HTML document: prefix their ids so clip paths cannot collide.
    svg = re.sub(r'id="([^"]+)"', rf'id="{chart_id}-\1"', svg)
    svg = re.sub(r"url\(#([^)]+)\)", rf"url(#{chart_id}-\1)", svg)
    svg = re.sub(r'href="#([^"]+)"', rf'href="#{chart_id}-\1"', svg)
    return svg.replace("<svg ", f'<svg role="img" aria-labelledby="{chart_id}-title" ', 1)


_DECIMALS = re.compile(r"(\d+\.\d\d)\d+")


def _short_path(m: re.Match[str]) -> str:
    data = _DECIMALS.sub(r"\1", m.group(1))
    return ' d="' + " ".join(data.split()) + '"'


def no_minor_ticks(ax: Axes) -> None:
    """Drop minor ticks (log axes place dozens, each laid out and drawn)."""
    ax.xaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_minor_locator(NullLocator())


def number(v: float) -> str:
    """A value for a label: 4,700 or 12.5 or 0.31."""
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"


def legend_above(fig: Figure) -> None:
    """One legend for the whole figure, above its top panel (never over a panel's data)."""
    handles, labels = [], []
    for a in fig.axes:
        h, lab = a.get_legend_handles_labels()
        for hh, ll in zip(h, lab, strict=True):
            if ll not in labels:
                handles.append(hh)
                labels.append(ll)
    if not handles:
        return
    height = fig.get_figheight()
    fig.legend(handles, labels, loc="upper left", ncols=min(len(labels), 6),
               bbox_to_anchor=(LEFT_IN / WIDTH_IN, 1 - 0.02 / height), borderaxespad=0,
               handlelength=1.6, columnspacing=1.2)  # fmt: skip


def empty_panel(ax: Axes, text: str) -> None:
    """A panel with nothing to draw says why, instead of an empty or broken axis."""
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", color="#8a5a00")
    ax.set_yticks([])
