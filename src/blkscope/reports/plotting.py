"""How the report draws: one Okabe-Ito style, figures with fixed margins (no second layout pass),
inline SVG that scales with the page, wall-clock time axes, clipped axes that say so, and the
markers every time chart shares (episodes, the device's writeback work, flusher bursts)."""

from __future__ import annotations

import io
import math
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import matplotlib
import numpy as np
from cycler import cycler
from matplotlib.axes import Axes
from matplotlib.backends.backend_svg import FigureCanvasSVG
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, NullLocator

from blkscope.units import NS_PER_S
from blkscope.wallclock import WallClock

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


def steps(ax: Axes, edges_s: np.ndarray, values: np.ndarray, **kw: Any) -> None:
    """A per-bin series as a step line with one vertex per change of value: the same picture
    as one per bin, a fraction of the path (idle stretches are one segment)."""
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        return
    change = np.concatenate(([True], (v[1:] != v[:-1]) & ~(np.isnan(v[1:]) & np.isnan(v[:-1]))))
    x = np.append(edges_s[:-1][change], edges_s[-1])
    y = np.append(v[change], v[-1])
    ax.plot(x, y, drawstyle="steps-post", **kw)


def no_minor_ticks(ax: Axes) -> None:
    """Drop minor ticks (log axes place dozens, each laid out and drawn)."""
    ax.xaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_minor_locator(NullLocator())


WALL_STEPS_S = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200)


def wall_ticks(
    clock: WallClock, t0_s: float, t1_s: float, most: int = 9
) -> list[tuple[float, str]]:
    """Trace-second positions of round wall-clock times in [t0_s, t1_s] and their labels:
    'HH:MM:SS' UTC, and the host zone's time on a second line when it is known and not UTC."""
    if clock.zero_ns is None or t1_s <= t0_s:
        return []
    step = next((s for s in WALL_STEPS_S if (t1_s - t0_s) / s <= most), WALL_STEPS_S[-1])
    zero_ns = clock.zero_ns
    first = math.ceil((zero_ns + t0_s * NS_PER_S) / (step * NS_PER_S)) * step * NS_PER_S
    out = []
    for wall_ns in range(first, int(zero_ns + t1_s * NS_PER_S) + 1, step * NS_PER_S):
        t_ns = wall_ns - zero_ns
        text = clock.clock_text(t_ns)
        utc, _, local = text.partition(" = ")
        label = utc.removesuffix(" UTC") + ("\n" + local.rsplit(" ", 1)[0] if local else "")
        out.append((t_ns / NS_PER_S, label))
    return out


def time_axis(top: Axes, bottom: Axes, clock: WallClock, span_s: tuple[float, float]) -> None:
    """Seconds since trace start under the bottom panel; round wall-clock times over the top
    panel (UTC, and the capture host's zone when known)."""
    bottom.set_xlabel("time since trace start (s)")
    bottom.set_xlim(*span_s)
    width_in = top.get_position().width * WIDTH_IN
    ticks = wall_ticks(clock, *span_s, most=max(3, int(width_in / 0.95)))  # labels ~0.8 in wide
    if not ticks:
        return
    wall = top.secondary_xaxis("top")
    wall.set_xticks([p for p, _ in ticks], [label for _, label in ticks])
    wall.tick_params(labelsize=8, pad=1)
    # the zone names the row of labels, left of them (above they would meet the legend)
    zone = "UTC" if "\n" not in ticks[0][1] else f"UTC\n{clock.zone_label()}"
    top.annotate(zone, (0, 1), xycoords="axes fraction", xytext=(-30, 2),
                 textcoords="offset points", ha="right", va="bottom", fontsize=8,
                 fontweight="bold")  # fmt: skip


@dataclass
class Clip:
    """A y axis cut below the one burst that dominates, and what was cut."""

    limit: float | None  # None: nothing clipped
    notes: list[str] = field(default_factory=list)


def clip_outliers(
    ax: Axes, x: np.ndarray, y: np.ndarray, what: str, unit: str, colour: str
) -> Clip:
    """Keep a panel readable when a burst dominates it, and say how:
    - the top bin is over 20x the 95th percentile of the bins with data (a burst towering over
      the usual level): a log axis (linear below 1), so both stay visible;
    - else a few bins reach over twice the 99.5th percentile: the axis is cut at 1.25x that
      percentile, the cut bins marked ^ at the top with the highest value."""
    positive = y[np.isfinite(y) & (y > 0)]
    if positive.size < 20:
        return Clip(None)
    top = float(positive.max())
    usual = float(np.quantile(positive, 0.95))
    worst = int(np.nanargmax(y))
    if usual > 0 and top > 20 * usual:
        ax.set_yscale("symlog", linthresh=1.0)
        ax.yaxis.set_minor_locator(NullLocator())
        ax.yaxis.set_major_formatter(PLAIN)
        return Clip(
            None,
            [
                f"{what}: log axis, because one burst reaches {number(top)} {unit} (at "
                f"{x[worst]:.2f} s) against a usual {number(usual)} {unit} (95th percentile)."
            ],
        )
    base = float(np.quantile(positive, 0.995))
    if base <= 0 or top <= 2 * base:
        return Clip(None)
    limit = 1.25 * base
    ax.set_ylim(0, limit)
    cut = np.flatnonzero(y > limit)
    ax.plot(x[cut], np.full(cut.size, limit), "^", color=colour, ms=5, clip_on=False)
    right = x[worst] > x[0] + 0.8 * (x[-1] - x[0])  # label towards the middle of the panel
    ax.annotate(
        f"max {number(top)}", (x[worst], limit), xytext=(-6 if right else 6, -2),
        textcoords="offset points", fontsize=7, va="top", ha="right" if right else "left",
        color=colour,
    )  # fmt: skip
    return Clip(
        limit,
        [
            f"{what}: axis cut at {number(limit)} {unit} so one burst does not flatten the rest; "
            f"{cut.size} bin{'s' * (cut.size != 1)} above it (marked ^ at the top), the highest "
            f"{number(top)} {unit} at {x[worst]:.2f} s."
        ],
    )


def number(v: float) -> str:
    """A value for a label: 4,700 or 12.5 or 0.31."""
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"


BURST_MARKERS = {"kworker_writes": ("v", "vermillion"), "jbd2_writes": ("^", "blue")}


@dataclass(frozen=True)
class Markers:
    """What every time chart of a device overlays: latency episodes (shaded), the device's own
    writeback work items (ticks at the top), and where flusher and journal bursts began."""

    episodes: list[tuple[float, float]]  # (start s, end s)
    writeback_s: np.ndarray  # end of each writeback work item, s
    bursts: dict[str, np.ndarray]  # series -> burst start, s

    def draw(self, ax: Axes, legend: bool) -> None:
        """Overlay the markers on one panel (legend labels on one panel only)."""
        for i, (a, b) in enumerate(self.episodes):
            ax.axvspan(a, b, color=OKABE_ITO["yellow"], alpha=0.35, lw=0,
                       label="latency episode" if legend and i == 0 else None)  # fmt: skip
        axis = ax.get_xaxis_transform()  # x in data, y as a fraction of the panel
        if self.writeback_s.size:  # one path of ticks, not one element per tick
            n = self.writeback_s.size
            x = np.repeat(self.writeback_s, 3)
            y = np.tile([0.9, 1.0, np.nan], n)
            ax.plot(x, y, transform=axis, color=OKABE_ITO["green"], lw=0.8,
                    label="writeback work (log)" if legend else None)  # fmt: skip
        for series, starts in self.bursts.items():
            marker, colour = BURST_MARKERS[series]
            ax.plot(starts, np.full(starts.size, 0.86), marker, color=OKABE_ITO[colour], ms=4,
                    transform=axis, label=f"{series} burst" if legend else None)  # fmt: skip


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
