"""Assemble the self-contained HTML page: inline CSS, inline SVG, the time charts' data as
embedded JSON and the script that draws them; every trace string escaped."""

from __future__ import annotations

import json
from functools import cache
from html import escape
from importlib.resources import files
from typing import Any

from blkscope.concepts import CAUSES
from blkscope.reports import charts, tables
from blkscope.reports.files_section import which_files_html
from blkscope.reports.legends import legend_html
from blkscope.reports.model import Device, Report
from blkscope.reports.text import count, headline
from blkscope.reports.timeline import TIME_CHARTS, clock_doc, device_timeline
from blkscope.version import __version__

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;
max-width:1200px;padding:1em 2em;color:#222;line-height:1.4}
h1{font-size:1.6em;margin-bottom:.2em}h2{border-bottom:2px solid #0072B2;padding-bottom:.2em;
margin-top:2em}h3{margin-top:1.6em}
.headline{background:#f4f8fb;border-left:4px solid #0072B2;padding:.6em 1em}
.headline li{margin:.2em 0}.note{color:#555;font-size:.9em;max-width:60em}
.causes dt{font-weight:bold;float:left;clear:left;margin-right:.4em}.causes dt::after{content:":"}.causes dd{margin:0 0 .2em 0}
.warning{background:#fff4e0;border-left:4px solid #D55E00;padding:.6em 1em;font-weight:600}
.verdict{background:#f4fbf6;border-left:4px solid #009E73;padding:.6em 1em}
table{border-collapse:collapse;margin:.5em 0;font-size:.9em}
th,td{border-bottom:1px solid #ddd;padding:.2em .7em;text-align:right;vertical-align:top}
th{background:#f0f0f0}td.text,th.text{text-align:left}
table.episodes td:nth-last-child(2){min-width:22em}table.episodes td:last-child{min-width:12em}
table.episodes td:nth-child(-n+3){white-space:nowrap}
figure{margin:.5em 0}svg{width:100%;height:auto;display:block}
svg.tchart{user-select:none;cursor:crosshair;font-size:11px}
svg.tchart .tick{font-size:10px;fill:#333}svg.tchart .label{font-size:11px;fill:#222}
svg.tchart .grid{stroke:#e4e4e4;stroke-width:.6}svg.tchart .frame{fill:none;stroke:#888;stroke-width:.6}
svg.tchart .axisline{stroke:#888}svg.tchart .empty{fill:#8a5a00}
.episode{fill:#F0E442;fill-opacity:.35}.wbtick{stroke:#009E73;stroke-width:1.2;fill:none}
.burst-kworker{fill:#D55E00}.burst-jbd2{fill:#0072B2}
.band{fill:#56B4E9;fill-opacity:.6}.p50{stroke:#0072B2;stroke-width:1;fill:none}
.max{fill:#D55E00}.user-line{fill:none;stroke-width:1;stroke-opacity:.75}
.spike{fill:none;stroke:#000;stroke-width:1.4}.cell{stroke:none}
.peak{fill-opacity:.18;stroke:none}.rate{fill:none;stroke-width:1.3}.rate.observer{stroke-dasharray:3 2}
.lba{fill-opacity:.75}.zoombox{fill:#0072B2;fill-opacity:.12;stroke:#0072B2;stroke-width:.6}
.legend{display:flex;flex-wrap:wrap;gap:.2em 1.2em;font-size:.85em;margin:.3em 0 0 4em}
.legend .sw{display:inline-block;width:1.4em;height:.8em;margin-right:.35em;vertical-align:-.05em}
.legend .sw.line{height:0;border-top:2px solid;vertical-align:.25em}
.legend .sw.dot{width:.5em;height:.5em;border-radius:50%}
.legend .sw.ring{width:.6em;height:.6em;border-radius:50%;border:1.5px solid #000;background:none}
.needs-script{color:#8a5a00;font-style:italic}.hint{color:#666;font-size:.85em;margin:.2em 0}
#blkscope-tip{position:absolute;z-index:10;background:#fff;border:1px solid #888;padding:.35em .6em;
font-size:.85em;max-width:36em;box-shadow:0 2px 6px rgba(0,0,0,.2);pointer-events:none}
#blkscope-tip .tip-head{font-weight:600}
#blkscope-tip .tip-head:not(:first-child){margin-top:.3em;border-top:1px solid #ddd;padding-top:.3em}
.missing{color:#8a5a00;font-style:italic}.meta{color:#666;font-size:.85em}
.cut{color:#8a5a00;font-size:.9em}
"""

NOTES = {
    "latency": "Each bin shows the median (line), the band up to the 99th percentile and the "
    "slowest IO (dots) of the IOs completing in it; the log axis keeps fast and slow IO visible "
    "together. D2C is time in the driver and device, Q2C the whole life from queueing. The "
    "application's own latency log (each user series) is drawn on the same clock in its own "
    "colour, and every spike is ringed at its peak. Shaded windows are latency episodes; green "
    "ticks at the top are this device's writeback work items (from the writeback log, one per "
    "item however many logs recorded it); triangles mark where bursts of flusher (kworker) "
    "writes or journal (jbd2) IO began. The top axis is the wall clock, to match alerts and "
    "application logs.",
    "heatmap": "Every IO completing in a time bin, counted per latency bucket (quarter octaves "
    "on a log axis; latency_heatmap table): the darker a cell, the more IOs. Modes show as "
    "bands, outliers as lone cells that percentile lines hide. The application's own latency "
    "log is drawn over it.",
    "throughput": "Requests completed per second and MiB/s, one row per op class, each on its "
    "own scale so rare ops stay visible. The line is the rate over a step of several bins (the "
    "step widens to fit the chart's width, and narrows as you zoom in); the light area is the "
    "busiest bin in each step. Writeback shows as write bursts; compare their times with the "
    "latency chart above.",
    "depth": "Requests between dispatch (D) and completion (C) (depth_bins table): the highest "
    "level held and the time-weighted mean, per step of bins. A requeue takes a request back "
    "out until its next dispatch. A deep queue with slow D2C means the device is busy; slow Q2C "
    "with a shallow queue points above the driver (scheduler, tags, plugging).",
    "lba": "Where on the device each bio went (at queue time), like iowatcher: sequential "
    "streams are sloped lines, random IO a cloud, writeback a burst spread over the files it "
    "flushes.",
    "stages": "Where the time goes: Q2G (waiting for a request/tag), G2I (building it), I2D "
    "(waiting in the scheduler), D2C (driver and device). If the episode bars grow mostly in "
    "I2D the scheduler queue held IO back; if in D2C the device itself was slow.",
    "histogram": "How many IOs fell in each power-of-two latency bucket, per op class. Two "
    "humps mean two populations (e.g. cache hits and misses, or IO stuck behind writeback).",
    "distributions": "Bio sizes at queue time and the distance of each dispatch from where the "
    "previous one ended (io_dist table), per op class: 0 is sequential.",
    "periodogram": "One panel per series with a significant period (the periods table): Rayleigh "
    "Z² of its burst start times against candidate period. A tall peak means the bursts recur "
    "at that period; the dashed line is the period found, and a kernel knob it matches names "
    "the likely cause.",
}


HINT = (
    "Point at a dot, a cell, a marker or a shaded episode to see what it is; drag across any "
    "time chart to zoom every time chart to that window; double-click to see the whole trace."
)


def _time_chart(dev: Device, key: str, n: int, notes: dict[str, list[str]]) -> str:
    """A chart the page's script draws from the device's embedded data."""
    chart_id = f"d{n}-{key}"
    cuts = "".join(f'<p class="cut">{escape(note)}</p>' for note in notes[key])
    return (
        f'<section class="chart" id="{chart_id}-section" data-chart="{key}">'
        f'<h3 id="{chart_id}-title">{escape(TIME_CHARTS[key])} — {escape(dev.name_text)}</h3>'
        f"{legend_html(dev, key)}"
        f'<figure class="timechart" data-device="d{n}" data-chart="{key}" '
        f'data-title="{chart_id}-title"><p class="needs-script">This chart is drawn by the '
        "page's script, which did not run.</p></figure>"
        f'<p class="hint">{escape(HINT)}</p>{cuts}'
        f'<p class="note"><b>How to read this:</b> {escape(NOTES[key])}</p></section>\n'
    )


def json_for_script(doc: Any) -> str:
    """JSON to embed in a <script type="application/json">: nothing in it can end the element
    or open a comment (<, >, & as \\u escapes), and U+2028/U+2029 are escaped too (ASCII only)."""
    text = json.dumps(doc, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


@cache
def timeline_script() -> str:
    """The script that draws the time charts (reports/assets/timeline.js)."""
    return files("blkscope.reports").joinpath("assets/timeline.js").read_text(encoding="utf-8")


def _chart(dev: Device, key: str, n: int, report: Report) -> str:
    render, title = charts.CHARTS[key]
    chart_id = f"d{n}-{key}"
    chart = render(dev, report.clock, chart_id)
    cuts = "".join(f'<p class="cut">{escape(note)}</p>' for note in chart.notes)
    return (
        f'<section class="chart" id="{chart_id}-section" data-chart="{key}">'
        f'<h3 id="{chart_id}-title">{escape(title)} — {escape(dev.name_text)}</h3>'
        f"<figure>{chart.svg}</figure>{cuts}"
        f'<p class="note"><b>How to read this:</b> {escape(NOTES[key])}</p></section>\n'
    )


def _episodes(dev: Device, report: Report) -> str:
    verdict = dev.verdict
    parts = ["<h3>Latency episodes and writeback</h3>"]
    if verdict and verdict["episodes"]:
        sentence = verdict["sentence"][0].upper() + verdict["sentence"][1:]
        parts.append(f'<p class="verdict">{escape(sentence)}.</p>')
        parts.append(tables.verdict_table(dev))
    causes = "".join(f"<dt>{escape(c)}</dt><dd>{escape(doc)}</dd>" for c, doc in CAUSES.items())
    parts.append(
        '<p class="note">An episode is one time window in which one or more latency metrics '
        "spiked (a window's p99 above the normal level by 5 MADs). Its victim is the "
        "application whose latency log spiked, else the device's slow bios; its cause comes "
        "from where the victim's extra time went (above the block layer, queued, at the "
        "device, after its own IO) and what else was in flight then against its normal level. "
        f'Each episode names one or more of these causes, strongest first:</p><dl class="note causes">{causes}</dl>'
    )
    parts.append(tables.episode_table(dev, report.clock))
    if dev.spikes:
        parts.append(
            "<p>The spikes of each metric, and the normal level each was judged against:</p>"
        )
        parts.append(tables.spike_table(dev, report.clock))
    return "\n".join(parts)


def _warnings(texts: list[str]) -> str:
    return "".join(f'<p class="warning">Warning: {escape(w)}</p>' for w in texts)


def device_html(dev: Device, n: int, report: Report) -> str:
    """One device's section, with its time charts' data."""
    doc, notes = device_timeline(dev, n)
    named = (
        f'<p class="meta">Name from {escape(dev.name.source)}.</p>'
        if dev.name
        else '<p class="meta">Device name unknown (no capture.json, partition listing or '
        "biosnoop log names it).</p>"
    )
    parts = [
        f'<section class="device" id="dev{n}"><h2>Device {escape(dev.name_text)}</h2>',
        named,
        _warnings(dev.warnings),
        '<div class="headline"><ul>',
        *(f"<li>{escape(s)}</li>" for s in headline(dev, report.clock)),
        "</ul></div>",
        f'<script type="application/json" class="blkscope-device" id="data-d{n}">'
        f"{json_for_script(doc)}</script>",
        _time_chart(dev, "latency", n, notes),
        _time_chart(dev, "heatmap", n, notes),
        _episodes(dev, report),
        _time_chart(dev, "throughput", n, notes),
        _time_chart(dev, "depth", n, notes),
        _time_chart(dev, "lba", n, notes),
        _chart(dev, "stages", n, report),
        tables.stage_table(dev),
        _chart(dev, "histogram", n, report),
        _chart(dev, "distributions", n, report),
        _chart(dev, "periodogram", n, report),
        tables.period_table(dev),
        "<h3>Merges, splits and requeues</h3>",
        tables.ratios(dev),
        "<h3>Top processes by IO count</h3>",
        '<p class="note">IOs are bios; reads, writes, discards and flushes (data-less cache '
        "flushes) add up to them. Rows marked observer are the capture's own tools.</p>",
        tables.top_processes(dev.top_count),
        "<h3>Top processes by Q2C p99</h3>",
        tables.top_processes(dev.top_latency),
        "<h3>Capture settings</h3>",
        tables.settings(dev, report.manifest),
        "<h3>Cross-check against the capture's own logs</h3>",
        tables.crosscheck(dev),
        "</section>",
    ]
    return "\n".join(parts)


def source_limits_html(manifest: dict[str, Any]) -> list[str]:
    """What the inputs could not say (tracepoint text: no sequence numbers, microseconds...)."""
    out = []
    for doc in manifest.get("inputs", []):
        if doc.get("lacks"):
            name = escape(f"{doc.get('name') or doc.get('path')} ({doc.get('format')})")
            items = "".join(f"<li>{escape(text)}</li>" for text in doc["lacks"])
            out.append(
                f'<div class="missing" id="source-limits"><p>What {name} does not carry, '
                f"so this report does not show it (nothing is made up):</p><ul>{items}</ul></div>"
            )
    return out


def skipped_html(manifest: dict[str, Any]) -> list[str]:
    """The files of the capture folder that were not read, and why (ingest's skipped list)."""
    skipped = manifest.get("skipped") or []
    if not skipped:
        return []
    items = "".join(
        f"<li>{escape(str(e.get('name')))}: {escape(str(e.get('reason')))}</li>" for e in skipped
    )
    return [
        f'<div class="missing" id="skipped"><p>Not read from the capture folder:</p>'
        f"<ul>{items}</ul></div>"
    ]


def render_page(report: Report, generated: str | None) -> str:
    """The whole report; generated is the one timestamp line (None leaves it out)."""
    m = report.manifest
    inputs = ", ".join(
        f"{i.get('path')}" + (f" ({count(i['lines'])} lines)" if i.get("lines") else "")
        for i in m.get("inputs", [])
    )
    errors = m.get("ingest", {}).get("error_lines", 0)
    start = report.clock.clock_text(0, 3)
    when = (
        f"Trace start: {report.clock.iso(0)} ({start})."
        if report.clock.known
        else "Trace start: not known on the wall clock (times are seconds since the first event)."
    )
    head = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>blkscope report</title>",
        f"<style>{CSS}</style></head><body>",
        "<h1>blkscope report</h1>",
        f'<p class="meta">Input: {escape(inputs or "-")}; '
        f"{count(m.get('events', {}).get('count'))} events, {count(errors)} malformed lines; "
        f"blkscope {escape(__version__)}.</p>",
        f'<p class="meta" id="trace-start">{escape(when)}</p>',
        _warnings(report.warnings),
    ]
    if generated:
        head.append(f'<p class="meta" id="generated">Generated {escape(generated)}.</p>')
    head += source_limits_html(m)
    head += skipped_html(m)
    if not report.devices:
        head.append(tables.missing("No device with block IO in this dataset."))
    body = [device_html(dev, n, report) for n, dev in enumerate(report.devices)]
    if report.others:
        body.append(tables.other_devices(report.others, len(report.devices)))
    if report.files is not None:  # only datasets with a file map (golden pages stay as they are)
        body.append(which_files_html(report.files))
    script = [
        '<script type="application/json" id="blkscope-clock">'
        f"{json_for_script(clock_doc(report.clock))}</script>",
        f"<script>{timeline_script()}</script>",
    ]
    return "\n".join([*head, *body, *script, "</body></html>\n"])
