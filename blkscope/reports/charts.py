"""The report's charts as deterministic inline SVG (matplotlib Agg, one Okabe-Ito style)."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
from cycler import cycler
from matplotlib.figure import Figure

from blkscope.reports.model import BREAKDOWN_STAGES, HIST_OPS, Device

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
    "R": OKABE_ITO["blue"],
    "W": OKABE_ITO["vermillion"],
    "D": OKABE_ITO["green"],
    "F": OKABE_ITO["purple"],
    "read": OKABE_ITO["blue"],
    "write": OKABE_ITO["vermillion"],
    "discard": OKABE_ITO["green"],
    "flush": OKABE_ITO["purple"],
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
}
WIDTH_IN = 10.0


@contextmanager
def _style() -> Iterator[None]:
    with matplotlib.rc_context(STYLE):  # type: ignore[arg-type]
        yield


def to_svg(fig: Figure, chart_id: str) -> str:
    """Render a figure as an <svg> element whose ids are unique to chart_id."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None}, bbox_inches="tight")
    plt.close(fig)
    svg = buf.getvalue()
    svg = svg[svg.index("<svg") :]
    # The page must hold no URL at all: drop the RDF metadata (creator links) and the namespace
    # declarations, which the HTML parser supplies itself for inline SVG (xlink:href included).
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", svg, flags=re.S)
    svg = re.sub(r'\s+xmlns(:\w+)?="[^"]*"', "", svg)
    # Several SVGs share one HTML document: prefix their ids so clip paths cannot collide.
    svg = re.sub(r'id="([^"]+)"', rf'id="{chart_id}-\1"', svg)
    svg = re.sub(r"url\(#([^)]+)\)", rf"url(#{chart_id}-\1)", svg)
    svg = re.sub(r'href="#([^"]+)"', rf'href="#{chart_id}-\1"', svg)
    return svg.replace("<svg ", f'<svg role="img" aria-labelledby="{chart_id}-title" ', 1)


def _ms(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, dtype=float) / 1e6


BURST_MARKERS = {"kworker_writes": ("v", "vermillion"), "jbd2_writes": ("^", "blue")}


def _spans(ax: Any, dev: Device) -> None:
    """Shade detected spikes, mark writeback events and writeback/journal IO bursts in time."""
    for sp in dev.spectra:
        marker, colour = BURST_MARKERS.get(sp.series, ("v", "black"))
        ax.plot(
            sp.burst_starts_ns / 1e9,
            np.full(sp.burst_starts_ns.size, 0.97),
            marker,
            color=OKABE_ITO[colour],
            ms=5,
            transform=ax.get_xaxis_transform(),  # x in seconds, y as a fraction of the axes
            label=f"{sp.series} burst",
        )
    for i, s in enumerate(dev.spikes or []):
        ax.axvspan(
            s["start_ns"] / 1e9,
            s["end_ns"] / 1e9,
            color=OKABE_ITO["yellow"],
            alpha=0.35,
            lw=0,
            label="detected spike" if i == 0 else None,
        )
    for i, w in enumerate(dev.writeback or []):
        ax.axvline(
            w["t_ns"] / 1e9,
            color=OKABE_ITO["green"],
            lw=0.8,
            ls="--",
            label="writeback event" if i == 0 else None,
        )


def latency_chart(dev: Device, chart_id: str) -> str:
    """D2C and Q2C per bin: p50 line, p50..p99 band, max points; spikes and writeback overlaid."""
    with _style():
        fig, axes = plt.subplots(2, 1, figsize=(WIDTH_IN, 5.6), sharex=True)
        x = dev.bins.centers_s()
        for ax, band, name in ((axes[0], dev.d2c, "D2C"), (axes[1], dev.q2c, "Q2C")):
            _spans(ax, dev)
            ax.fill_between(
                x, _ms(band.p50), _ms(band.p99), color=OKABE_ITO["sky"], alpha=0.5, lw=0,
                label="p50..p99", step="mid",
            )  # fmt: skip
            ax.plot(x, _ms(band.p50), color=OKABE_ITO["blue"], lw=0.9, label="p50",
                    drawstyle="steps-mid")  # fmt: skip
            ax.plot(x, _ms(band.max), ".", color=OKABE_ITO["vermillion"], ms=2.5, label="max")
            ax.set_yscale("log")
            ax.set_ylabel(f"{name} latency (ms, log)")
            ax.legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), ncols=5)
            ax.set_title(f"{name} per {dev.bins.width_ns / 1e6:g} ms bin", loc="left")
        axes[1].set_xlabel("time since trace start (s)")
        return to_svg(fig, chart_id)


def throughput_chart(dev: Device, chart_id: str) -> str:
    """IOs/s and MiB/s per op per bin, counted at completion."""
    with _style():
        fig, axes = plt.subplots(2, 1, figsize=(WIDTH_IN, 4.8), sharex=True)
        x = dev.bins.centers_s()
        for op, (iops, mib) in dev.rates.items():
            colour = OP_COLOURS[op]
            axes[0].plot(x, iops, color=colour, lw=0.9, label=op, drawstyle="steps-mid")
            axes[1].plot(x, mib, color=colour, lw=0.9, label=op, drawstyle="steps-mid")
        for ax in axes:
            _spans(ax, dev)
        axes[0].set_ylabel("IOs per second")
        axes[1].set_ylabel("throughput (MiB/s)")
        axes[1].set_xlabel("time since trace start (s)")
        axes[0].legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), ncols=6)
        return to_svg(fig, chart_id)


def depth_chart(dev: Device, chart_id: str) -> str:
    """Requests in the driver (first D to C): max and time-weighted mean per bin."""
    with _style():
        fig, ax = plt.subplots(figsize=(WIDTH_IN, 2.6))
        x = dev.bins.centers_s()
        _spans(ax, dev)
        ax.plot(x, dev.depth_max, color=OKABE_ITO["vermillion"], lw=0.9, label="max",
                drawstyle="steps-mid")  # fmt: skip
        ax.plot(x, dev.depth_mean, color=OKABE_ITO["blue"], lw=0.9, label="mean",
                drawstyle="steps-mid")  # fmt: skip
        ax.set_ylabel("requests in flight")
        ax.set_xlabel("time since trace start (s)")
        ax.legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), ncols=4)
        return to_svg(fig, chart_id)


def stages_chart(dev: Device, chart_id: str) -> str:
    """Mean and p99 of Q2G/G2I/I2D/D2C, overall and during spikes, on a log axis."""
    with _style():
        fig, ax = plt.subplots(figsize=(WIDTH_IN, 3.0))
        groups = [("all IO", dev.stages)]
        if dev.spike_stages:
            groups.append(("during spikes", dev.spike_stages))
        y = np.arange(len(BREAKDOWN_STAGES))
        height = 0.8 / (2 * len(groups))
        colours = [
            OKABE_ITO["sky"],
            OKABE_ITO["blue"],
            OKABE_ITO["orange"],
            OKABE_ITO["vermillion"],
        ]
        k = 0
        for label, stats in groups:
            for stat in ("mean_ns", "p99_ns"):
                vals = [_ms(np.array([stats.get(s, {}).get(stat) or np.nan]))[0]
                        for s in BREAKDOWN_STAGES]  # fmt: skip
                ax.barh(y + (k - 1.5) * height, vals, height, color=colours[k],
                        label=f"{label}: {stat[:-3]}")  # fmt: skip
                k += 1
        ax.set_yticks(y, BREAKDOWN_STAGES)
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.set_xlabel("time in stage (ms, log)")
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), ncols=4)
        return to_svg(fig, chart_id)


def histogram_chart(dev: Device, chart_id: str) -> str:
    """Log2 histograms of D2C and Q2C per op, as IO counts per power-of-two latency bucket."""
    with _style():
        fig, axes = plt.subplots(1, 2, figsize=(WIDTH_IN, 3.2), sharey=True)
        for ax, stage in zip(axes, ("D2C", "Q2C"), strict=True):
            for op in HIST_OPS:
                rows = dev.hist.get(stage, {}).get(op)
                if not rows:
                    continue
                edges, counts = _log2_steps(rows)
                ax.stairs(counts, edges, color=OP_COLOURS[op], lw=1.2, label=op)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel(f"{stage} latency (ms, log2 buckets)")
            ax.set_title(stage, loc="left")
        axes[0].set_ylabel("IOs per bucket (log)")
        axes[0].legend(loc="upper right")
        return to_svg(fig, chart_id)


def _log2_steps(rows: list[tuple[int, int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """Edges (ms) and counts over every bucket from the first to the last, empty ones as 0."""
    by_lo = {max(lo, 1): n for lo, _, n in rows}  # the 0 ns bucket sits at 1 ns on a log axis
    first = int(np.log2(min(by_lo)))
    last = int(np.log2(max(by_lo)))
    los = [2**b for b in range(first, last + 1)]
    counts = np.array([by_lo.get(lo, 0) for lo in los], dtype=float)
    return np.array([*los, 2 ** (last + 1)], dtype=float) / 1e6, counts


def periodogram_chart(dev: Device, chart_id: str) -> str:
    """Rayleigh Z² of writeback-like IO bursts against period, detected periods marked."""
    with _style():
        fig, ax = plt.subplots(figsize=(WIDTH_IN, 3.0))
        colours = {"kworker_writes": OKABE_ITO["vermillion"], "jbd2_writes": OKABE_ITO["blue"]}
        for sp in (sp for sp in dev.spectra if sp.z2.size):
            ax.plot(sp.period_s, sp.z2, color=colours.get(sp.series, OKABE_ITO["black"]), lw=0.9,
                    label=f"{sp.series} ({sp.bursts} bursts)")  # fmt: skip
        for i, p in enumerate(dev.periods or []):
            ax.axvline(p["period_ns"] / 1e9, color=OKABE_ITO["green"], ls="--", lw=1,
                       label="detected period" if i == 0 else None)  # fmt: skip
            ax.annotate(f"{p['period_ns'] / 1e9:.2f} s", (p["period_ns"] / 1e9, 1),
                        xycoords=("data", "axes fraction"), va="top", ha="left", fontsize=8)  # fmt: skip
        ax.set_xscale("log")
        ax.set_xlabel("period (s, log)")
        ax.set_ylabel("Rayleigh Z² (unitless)")
        if any(sp.z2.size for sp in dev.spectra) or dev.periods:
            ax.legend(loc="upper left")
        return to_svg(fig, chart_id)


CHARTS = {
    "latency": (latency_chart, "Latency over time"),
    "throughput": (throughput_chart, "IOPS and throughput per op"),
    "depth": (depth_chart, "In-flight depth"),
    "stages": (stages_chart, "Stage breakdown"),
    "histogram": (histogram_chart, "Latency histograms"),
    "periodogram": (periodogram_chart, "Periodogram"),
}
