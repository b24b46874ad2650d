"""The legends of the time charts the page's script draws: plain HTML, in the page itself, with
the colours the script draws in (timeline.USER_COLOURS, plotting.OP_COLOURS)."""

from __future__ import annotations

from html import escape

from blkscope.concepts import OP_CLASSES
from blkscope.reports.model import Device
from blkscope.reports.plotting import OKABE_ITO, OP_COLOURS

# one colour per user series, in the order of the series table (none of the op colours'
# blue/vermillion, which the latency bands and dots use)
USER_COLOURS = (OKABE_ITO["orange"], OKABE_ITO["purple"], OKABE_ITO["green"], OKABE_ITO["black"])
OBSERVER_COLOUR = "#999999"


def user_colour(k: int) -> str:
    """The colour of the k-th user series."""
    return USER_COLOURS[k % len(USER_COLOURS)]


def _item(kind: str, colour: str, label: str) -> str:
    style = f"border-color:{colour}" if kind == "line" else f"background:{colour}"
    if kind == "ring":
        style = ""
    css = f"sw {kind}" if kind != "box" else "sw"
    return f'<span><span class="{css}" style="{style}"></span>{escape(label)}</span>'


def _markers(dev: Device) -> list[str]:
    out = []
    if dev.episodes:
        out.append(_item("box", "rgba(240,228,66,.5)", "latency episode"))
    if dev.writeback:
        out.append(_item("line", OKABE_ITO["green"], "writeback work (log)"))
    for series, colour in (("kworker_writes", "vermillion"), ("jbd2_writes", "blue")):
        spec = dev.spectra.get(series)
        if spec is not None and spec.burst_starts_ns.size:
            out.append(_item("box", OKABE_ITO[colour], f"{series} burst"))
    return out


def _user(dev: Device, own_spikes: bool) -> list[str]:
    """The user series, and the spike ring when the chart rings any: the latency chart rings
    every metric's spikes, the heat map only the user series'."""
    out = [_item("line", user_colour(k), s.name) for k, s in enumerate(dev.user)]
    names = {s.name for s in dev.user}
    if any(own_spikes or s["metric"] in names for s in dev.spikes):
        out.append(_item("ring", "#000", "spike (at its peak)"))
    return out


def legend_html(dev: Device, key: str) -> str:
    """The legend above one time chart."""
    items: list[str] = []
    if key == "latency":
        items = [
            _item("box", OKABE_ITO["sky"], "p50..p99"),
            _item("line", OKABE_ITO["blue"], "p50"),
            _item("dot", OKABE_ITO["vermillion"], "slowest IO"),
            *_user(dev, own_spikes=True),
            *_markers(dev),
        ]
    elif key == "heatmap":
        items = [_item("box", "#2171b5", "IOs per cell (light: few, dark: many)")]
        items += _user(dev, own_spikes=False)
        items += _markers(dev)
    elif key == "throughput":
        items = [_item("line", "#555", "rate per step"), _item("box", "#ccc", "busiest bin")]
        if dev.observer_rates:
            items.append(_item("line", OBSERVER_COLOUR, "capture's own tools (observer)"))
        items += _markers(dev)
    elif key == "depth":
        items = [
            _item("line", OKABE_ITO["vermillion"], "max"),
            _item("line", OKABE_ITO["blue"], "time-weighted mean"),
            *_markers(dev),
        ]
    elif key == "lba":
        ops = set(dev.lba.op_class.tolist())
        items = [_item("box", OP_COLOURS[op], op) for op in OP_CLASSES if op in ops]
        items += _markers(dev)
    return f'<div class="legend" data-legend="{escape(key)}">{"".join(items)}</div>'
