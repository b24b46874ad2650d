"""The report's still charts (the distributions and the periodogram): each draws one device's
rows from the report model and returns inline SVG plus the notes a reader needs. The time charts
are drawn by the page's script (reports/timeline.py, assets/timeline.js)."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from blkscope.reports.model import BREAKDOWN_STAGES, HIST_OPS, Device
from blkscope.reports.plotting import (
    OKABE_ITO,
    OP_COLOURS,
    PLAIN,
    empty_panel,
    figure,
    legend_above,
    no_minor_ticks,
    style,
    to_svg,
)
from blkscope.reports.text import period_caption
from blkscope.units import ns_to_ms, ns_to_s
from blkscope.wallclock import WallClock


@dataclass
class Chart:
    """One rendered chart."""

    svg: str
    notes: list[str] = field(default_factory=list)


def _ms(a: np.ndarray) -> np.ndarray:
    return ns_to_ms(np.asarray(a, dtype=float))


def stages_chart(dev: Device, clock: WallClock, chart_id: str) -> Chart:
    """Mean and p99 of Q2G/G2I/I2D/D2C, overall and during episodes, on a log axis."""
    del clock
    with style():
        fig, ((ax,),) = figure([2.4], top_in=0.4, bottom_in=0.5)
        groups = [("all IO", dev.stages)]
        if dev.episode_stages:
            groups.append(("during episodes", dev.episode_stages))
        y = np.arange(len(BREAKDOWN_STAGES))
        height = 0.8 / (2 * len(groups))
        colours = [OKABE_ITO[c] for c in ("sky", "blue", "orange", "vermillion")]
        k = 0
        drawn = False
        for label, stats in groups:
            for stat in ("mean_ns", "p99_ns"):
                vals = [_ms(np.array([stats.get(s, {}).get(stat) or np.nan]))[0]
                        for s in BREAKDOWN_STAGES]  # fmt: skip
                ax.barh(y + (k - 1.5) * height, vals, height, color=colours[k],
                        label=f"{label}: {stat[:-3]}")  # fmt: skip
                drawn |= any(np.isfinite(v) and v > 0 for v in vals)
                k += 1
        ax.set_yticks(y, BREAKDOWN_STAGES)
        ax.invert_yaxis()
        if drawn:  # a log axis needs something positive on it
            ax.set_xscale("log")
            no_minor_ticks(ax)
            ax.xaxis.set_major_formatter(PLAIN)
        ax.set_xlabel("time in stage (ms, log)")
        legend_above(fig)
        return Chart(to_svg(fig, chart_id))


def _log2_steps(rows: list[tuple[int, int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """Edges (ms) and counts over every bucket from the first to the last, empty ones as 0."""
    by_lo = {max(lo, 1): n for lo, _, n in rows}  # the 0 ns bucket sits at 1 ns on a log axis
    first = int(np.log2(min(by_lo)))
    last = int(np.log2(max(by_lo)))
    los = [2**b for b in range(first, last + 1)]
    counts = np.array([by_lo.get(lo, 0) for lo in los], dtype=float)
    return ns_to_ms(np.array([*los, 2 ** (last + 1)], dtype=float)), counts


def histogram_chart(dev: Device, clock: WallClock, chart_id: str) -> Chart:
    """Log2 histograms of D2C and Q2C per op class, as IO counts per power-of-two bucket."""
    del clock
    with style():
        fig, (axes,) = figure([2.6], cols=2, top_in=0.3, bottom_in=0.5, sharex=False)
        for ax, stage in zip(axes, ("D2C", "Q2C"), strict=True):
            drawn = False
            for op in HIST_OPS:
                rows = dev.hist.get(stage, {}).get(op)
                if rows:
                    edges, counts = _log2_steps(rows)
                    ax.stairs(counts, edges, color=OP_COLOURS[op], lw=1.2, label=op)
                    drawn = True
            ax.set_xlabel(f"{stage} latency (ms, log2 buckets)")
            ax.set_title(stage, loc="left", fontsize=9, pad=2)
            if not drawn:
                empty_panel(ax, "no completions")
                continue
            ax.set_xscale("log")
            ax.set_yscale("log")
            no_minor_ticks(ax)
            ax.xaxis.set_major_formatter(PLAIN)
            ax.yaxis.set_major_formatter(PLAIN)
        axes[0].set_ylabel("IOs per bucket (log)")
        if axes[0].get_legend_handles_labels()[0]:
            axes[0].legend(loc="upper right")
        return Chart(to_svg(fig, chart_id))


def _size_label(sectors: int) -> str:
    size = sectors * 512
    for unit, scale in (("G", 2**30), ("M", 2**20), ("K", 2**10)):
        if size >= scale:
            return f"{size / scale:.3g}{unit}"
    return f"{size}B"


def distributions_chart(dev: Device, clock: WallClock, chart_id: str) -> Chart:
    """Bio sizes at Q and seek distances between dispatches, per op class (io_dist table)."""
    del clock
    panels = (("q_size", "bio size at Q"), ("d2d_seek", "seek from the previous dispatch"))
    notes = []
    with style():
        fig, (axes,) = figure([2.4], cols=2, top_in=0.3, bottom_in=0.6, sharex=False)
        for ax, (metric, title) in zip(axes, panels, strict=True):
            by_op = dev.sizes.get(metric, {})
            buckets = sorted({b for rows in by_op.values() for b, _, _ in rows})
            ax.set_title(title, loc="left", fontsize=9, pad=2)
            if not buckets:
                empty_panel(ax, "no sized IO")
                continue
            span = np.arange(buckets[0], buckets[-1] + 1)
            for op, rows in by_op.items():
                n = {int(b): int(c) for b, _, c in rows}
                counts = np.array([n.get(int(b), 0) for b in span], dtype=np.float64)
                ax.stairs(counts, np.append(span, span[-1] + 1) - 0.5, color=OP_COLOURS[op],
                          lw=1.2, label=op)  # fmt: skip
                if metric == "d2d_seek" and counts.sum():
                    notes.append(
                        f"{op}: {n.get(-1, 0) / counts.sum():.1%} of dispatches sequential"
                    )
            step = 1 if span.size <= 9 else 2 if span.size <= 18 else 4
            ticks = span[span % step == 0]
            ax.set_xticks(ticks, ["0" if b < 0 else _size_label(2**b) for b in ticks])
            ax.set_yscale("log")
            no_minor_ticks(ax)
            ax.yaxis.set_major_formatter(PLAIN)
            ax.set_xlabel("distance, log2 buckets (0: sequential)" if metric == "d2d_seek"
                          else "size, log2 buckets")  # fmt: skip
        axes[0].set_ylabel("IOs per bucket (log)")
        if axes[0].get_legend_handles_labels()[0]:
            axes[0].legend(loc="upper right")
        return Chart(to_svg(fig, chart_id), ["Seeks: " + "; ".join(notes) + "."] if notes else [])


def periodogram_chart(dev: Device, clock: WallClock, chart_id: str) -> Chart:
    """One panel per series of the periods table: its Z² periodogram (periodogram table) with
    the period found marked."""
    del clock
    shown = list(dict.fromkeys(p["series"] for p in dev.periods))
    with style():
        fig, axes = figure([1.5] * max(1, len(shown)), top_in=0.45, gap_in=0.85, sharex=False)
        if not shown:
            empty_panel(axes[0][0], "no significant period in any series")
        for (ax,), name in zip(axes, shown, strict=False):
            spec = dev.spectra.get(name)
            found = [p for p in dev.periods if p["series"] == name]
            colour = OKABE_ITO["vermillion" if name == "kworker_writes" else "blue"]
            if spec is not None and spec.z2.size:
                ax.plot(spec.period_s, spec.z2, color=colour, lw=0.9)
            for p in found:
                ax.axvline(ns_to_s(p["period_ns"]), color=OKABE_ITO["green"], ls="--", lw=1)
            # wrapped: one line overran the panel and was cut at the figure's edge
            title = textwrap.fill(f"{name}: " + "; ".join(period_caption(p) for p in found), 105)
            ax.set_title(title, loc="left", fontsize=9, pad=2)
            ax.set_xscale("log")
            no_minor_ticks(ax)
            ticks = [t for t in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000)
                     if spec is not None and spec.period_s.size
                     and 0.95 * spec.period_s.min() <= t <= spec.period_s.max()]  # fmt: skip
            ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
            ax.set_ylabel("Rayleigh Z²")
            ax.set_xlabel("period (s, log)")
        return Chart(to_svg(fig, chart_id))


Render = Callable[[Device, WallClock, str], Chart]
CHARTS: dict[str, tuple[Render, str]] = {
    "stages": (stages_chart, "Stage breakdown"),
    "histogram": (histogram_chart, "Latency histograms"),
    "distributions": (distributions_chart, "IO sizes and seek distances"),
    "periodogram": (periodogram_chart, "Periodogram"),
}
