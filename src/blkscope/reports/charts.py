"""The report's charts: each draws one device's pre-binned series from the report model and
returns inline SVG plus the notes a reader needs (an axis cut, a series with nothing to draw)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from blkscope.concepts import OP_CLASSES
from blkscope.reports.model import BREAKDOWN_STAGES, HIST_OPS, Device
from blkscope.reports.plotting import (
    OKABE_ITO,
    OP_COLOURS,
    PLAIN,
    Markers,
    clip_outliers,
    empty_panel,
    figure,
    legend_above,
    no_minor_ticks,
    steps,
    style,
    time_axis,
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


def markers(dev: Device) -> Markers:
    """The device's own episodes, writeback work and flusher/journal bursts, in seconds."""
    return Markers(
        episodes=[(ns_to_s(e["start_ns"]), ns_to_s(e["end_ns"])) for e in dev.episodes],
        writeback_s=ns_to_s(np.array([w["end_ns"] for w in dev.writeback], dtype=np.float64)),
        bursts={
            s: ns_to_s(dev.spectra[s].burst_starts_ns)
            for s in ("kworker_writes", "jbd2_writes")
            if s in dev.spectra and dev.spectra[s].burst_starts_ns.size
        },
    )


def _span_s(dev: Device) -> tuple[float, float]:
    edges = dev.bins.edges_ns()
    return ns_to_s(float(edges[0])), ns_to_s(float(edges[-1]))


def _ms(a: np.ndarray) -> np.ndarray:
    return ns_to_ms(np.asarray(a, dtype=float))


TOP_TIME_IN = 0.85  # legend row + wall-clock axis


def latency_chart(dev: Device, clock: WallClock, chart_id: str) -> Chart:
    """D2C and Q2C per bin: p50 line, p50..p99 band, max points; episodes and writeback."""
    with style():
        fig, axes = figure([2.2, 2.2], top_in=TOP_TIME_IN)
        x = dev.bins.centers_s()
        edges = ns_to_s(dev.bins.edges_ns())
        mark = markers(dev)
        for (ax,), band, name in ((axes[0], dev.d2c, "D2C"), (axes[1], dev.q2c, "Q2C")):
            mark.draw(ax, legend=name == "D2C")
            # every latency 0 ns (all events at one time): nothing to draw on a log axis
            log = not band.empty and bool((np.asarray(band.max) > 0).any())
            scale = ", log" if log else ""
            ax.set_ylabel(f"{name} per {ns_to_ms(dev.bins.width_ns):g} ms bin\n(ms{scale})")
            if band.empty:
                empty_panel(ax, "no completions: no latency to draw")
                continue
            ax.fill_between(x, _ms(band.p50), _ms(band.p99), color=OKABE_ITO["sky"], alpha=0.6,
                            lw=0, step="mid", label="p50..p99", rasterized=True)  # fmt: skip
            steps(ax, edges, _ms(band.p50), color=OKABE_ITO["blue"], lw=0.8, label="p50")
            ax.plot(x, _ms(band.max), ".", color=OKABE_ITO["vermillion"], ms=2.2,
                    label="slowest IO", rasterized=True)  # fmt: skip
            if log:
                ax.set_yscale("log")
            no_minor_ticks(ax)
            ax.yaxis.set_major_formatter(PLAIN)
        axes[0][0].tick_params(labelbottom=False)
        time_axis(axes[0][0], axes[1][0], clock, _span_s(dev))
        legend_above(fig)
        return Chart(to_svg(fig, chart_id))


def throughput_chart(dev: Device, clock: WallClock, chart_id: str) -> Chart:
    """IOs/s and MiB/s per op class per bin, one row of panels per class (each its own scale,
    so a rare op is never a flat line under the busy ones)."""
    ops = [op for op in OP_CLASSES if op in dev.rates] or ["read"]
    with style():
        fig, axes = figure([1.05] * len(ops), top_in=TOP_TIME_IN, cols=2, gap_in=0.2)
        x = dev.bins.centers_s()
        edges = ns_to_s(dev.bins.edges_ns())
        mark = markers(dev)
        notes: list[str] = []
        for row, op in zip(axes, ops, strict=True):
            iops, mib = dev.rates.get(op, (np.zeros(x.size), np.zeros(x.size)))
            for ax, values, unit in ((row[0], iops, "IOs/s"), (row[1], mib, "MiB/s")):
                mark.draw(ax, legend=ax is axes[0][0])
                steps(ax, edges, values, color=OP_COLOURS[op], lw=0.8)
                ax.set_ylabel(f"{op}\n{unit}", fontsize=8)
                ax.set_ylim(bottom=0)
                notes += clip_outliers(ax, x, values, f"{op} {unit}", unit, OP_COLOURS[op]).notes
                if op == "flush" and unit == "MiB/s":
                    empty_panel(ax, "flushes carry no data")
        for c in (0, 1):
            time_axis(axes[0][c], axes[-1][c], clock, _span_s(dev))
            for row in axes[:-1]:
                row[c].tick_params(labelbottom=False)
        if not dev.rates:
            empty_panel(axes[0][0], "no completions: no rate to draw")
        legend_above(fig)
        return Chart(to_svg(fig, chart_id), notes)


def depth_chart(dev: Device, clock: WallClock, chart_id: str) -> Chart:
    """Requests in the driver (D to C) per bin: max and time-weighted mean (depth_bins)."""
    with style():
        fig, ((ax,),) = figure([2.2], top_in=TOP_TIME_IN)
        x = dev.bins.centers_s()
        edges = ns_to_s(dev.bins.edges_ns())
        markers(dev).draw(ax, legend=True)
        driver = dev.depth.get("driver")
        notes: list[str] = []
        if driver is None:
            empty_panel(ax, "no dispatches: no depth to draw")
        else:
            steps(ax, edges, driver.max, color=OKABE_ITO["vermillion"], lw=0.8, label="max")
            steps(ax, edges, driver.mean, color=OKABE_ITO["blue"], lw=0.8,
                  label="time-weighted mean")  # fmt: skip
            ax.set_ylim(bottom=0)
            notes = clip_outliers(
                ax, x, driver.max, "depth", "requests", OKABE_ITO["vermillion"]
            ).notes
        ax.set_ylabel("requests in the driver")
        time_axis(ax, ax, clock, _span_s(dev))
        legend_above(fig)
        return Chart(to_svg(fig, chart_id), notes)


def lba_chart(dev: Device, clock: WallClock, chart_id: str) -> Chart:
    """Where on the device IO went over time (like iowatcher): bios per time bin and sector
    bucket, one colour per op class."""
    m = dev.lba
    with style():
        fig, ((ax,),) = figure([3.0], top_in=TOP_TIME_IN)
        markers(dev).draw(ax, legend=False)
        centre = dev.bins.centers_s()
        if m.n.size == 0:
            empty_panel(ax, "no bio with a sector")
        for op in OP_CLASSES:
            sel = (m.op_class == op) & (m.bin >= 0) & (m.bin < centre.size)
            if not sel.any():
                continue
            gib = (m.lo_sector + (m.bucket[sel] + 0.5) * m.bucket_sectors) * 512 / 2**30
            ax.scatter(centre[m.bin[sel]], gib, s=3, marker="s", lw=0, color=OP_COLOURS[op],
                       alpha=0.7, label=op, rasterized=True)  # fmt: skip
        ax.set_ylabel("offset on the device (GiB)")
        time_axis(ax, ax, clock, _span_s(dev))
        legend_above(fig)
        notes = [
            f"Each dot is a cell of {ns_to_ms(dev.bins.width_ns):g} ms x "
            f"{_size_label(m.bucket_sectors)} of the device holding at least one bio (at Q)."
        ]
        return Chart(to_svg(fig, chart_id), notes)


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
        fig, axes = figure([1.5] * max(1, len(shown)), top_in=0.3, gap_in=0.7, sharex=False)
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
            ax.set_title(f"{name}: " + "; ".join(period_caption(p) for p in found), loc="left",
                         fontsize=9, pad=2)  # fmt: skip
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
    "latency": (latency_chart, "Latency over time"),
    "throughput": (throughput_chart, "IOPS and throughput per op class"),
    "depth": (depth_chart, "In-flight depth"),
    "lba": (lba_chart, "Where on the device (LBA over time)"),
    "stages": (stages_chart, "Stage breakdown"),
    "histogram": (histogram_chart, "Latency histograms"),
    "distributions": (distributions_chart, "IO sizes and seek distances"),
    "periodogram": (periodogram_chart, "Periodogram"),
}
