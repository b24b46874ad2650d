"""Assemble the self-contained HTML page: inline CSS, inline SVG, every trace string escaped."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape
from typing import Any

from blkscope import __version__
from blkscope.reports import charts
from blkscope.reports.model import BREAKDOWN_STAGES, Device, Report
from blkscope.reports.text import count, dur, found_by, headline

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;
max-width:1100px;padding:1em 2em;color:#222;line-height:1.4}
h1{font-size:1.6em;margin-bottom:.2em}h2{border-bottom:2px solid #0072B2;padding-bottom:.2em;
margin-top:2em}h3{margin-top:1.6em}
.headline{background:#f4f8fb;border-left:4px solid #0072B2;padding:.6em 1em}
.headline li{margin:.2em 0}.note{color:#555;font-size:.9em;max-width:60em}
table{border-collapse:collapse;margin:.5em 0;font-size:.9em}
th,td{border-bottom:1px solid #ddd;padding:.2em .7em;text-align:right}
th{background:#f0f0f0}td.text,th.text{text-align:left}
figure{margin:.5em 0}svg{max-width:100%;height:auto}
.missing{color:#8a5a00;font-style:italic}.meta{color:#666;font-size:.85em}
"""

NOTES = {
    "latency": "Each bin shows the median (line), the band up to the 99th percentile and the "
    "slowest IO (dots) of the IOs completing in it; the log axis keeps fast and slow IO visible "
    "together. D2C is time in the driver and device, Q2C the whole life from queueing. Shaded "
    "windows are detected spikes; dashed lines are writeback wakeups, when a writeback log was "
    "ingested; triangles at the top mark where bursts of flusher (kworker) writes or journal "
    "(jbd2) IO began. Dots far above the band are rare slow IOs; a band that rises is a slow "
    "period; a rise right after a triangle points at writeback.",
    "throughput": "Requests completed per second and MiB/s per operation (R read, W write, "
    "D discard, F flush). Writeback shows as write bursts; compare their times with the "
    "latency chart above.",
    "depth": "Requests between dispatch (first D) and completion, per bin: the highest level "
    "reached and the time-weighted mean. A deep queue with slow D2C means the device is busy; "
    "slow Q2C with a shallow queue points above the driver (scheduler, tags, plugging).",
    "stages": "Where the time goes: Q2G (waiting for a request/tag), G2I (building it), I2D "
    "(waiting in the scheduler), D2C (driver and device). If the spike bars grow mostly in I2D "
    "the scheduler queue held IO back; if in D2C the device itself was slow.",
    "histogram": "How many IOs fell in each power-of-two latency bucket, per operation. Two "
    "humps mean two populations (e.g. cache hits and misses, or IO stuck behind writeback).",
    "periodogram": "Rayleigh Z² of burst start times against candidate period: a tall peak "
    "means the bursts recur at that period. Dashed lines mark significant periods (after "
    "correcting for all periods tried); a match with a kernel knob names the likely cause.",
}


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], text_cols: int = 1) -> str:
    """An HTML table; every cell is escaped, the first text_cols columns left-aligned."""

    def cell(tag: str, i: int, v: Any) -> str:
        cls = ' class="text"' if i < text_cols else ""
        return f"<{tag}{cls}>{escape(str(v))}</{tag}>"

    head = "".join(cell("th", i, h) for i, h in enumerate(headers))
    body = "".join(
        "<tr>" + "".join(cell("td", i, v) for i, v in enumerate(r)) + "</tr>\n" for r in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>\n{body}</tbody></table>"


def _missing(text: str) -> str:
    return f'<p class="missing">{escape(text)}</p>'


def _chart(dev: Device, key: str, n: int) -> str:
    render, title = charts.CHARTS[key]
    chart_id = f"d{n}-{key}"
    return (
        f'<section class="chart" id="{chart_id}-section" data-chart="{key}">'
        f'<h3 id="{chart_id}-title">{escape(title)} — {escape(dev.name)}</h3>'
        f"<figure>{render(dev, chart_id)}</figure>"
        f'<p class="note"><b>How to read this:</b> {escape(NOTES[key])}</p></section>\n'
    )


def _stage_table(dev: Device) -> str:
    rows = []
    for stage in [*BREAKDOWN_STAGES, "Q2C"]:
        s = dev.stages.get(stage, {})
        sp = (dev.spike_stages or {}).get(stage, {})
        rows.append(
            [stage, count(s.get("n")), dur(s.get("mean_ns")), dur(s.get("p50_ns")),
             dur(s.get("p99_ns")), dur(s.get("max_ns")), dur(sp.get("mean_ns")),
             dur(sp.get("p99_ns"))]
        )  # fmt: skip
    headers = ["stage", "n", "mean", "p50", "p99", "max", "spikes: mean", "spikes: p99"]
    return table(headers, rows)


def _spike_table(dev: Device, computed: bool) -> str:
    if dev.spikes is None or not computed:
        return _missing("Spikes: not computed (the findings step is not available).")
    if not dev.spikes:
        return "<p>No latency spikes detected.</p>"
    rows = [
        [s["spike_id"], f"{s['start_ns'] / 1e9:.3f}", f"{s['end_ns'] / 1e9:.3f}", s["metric"],
         dur(s["peak_latency_ns"]), dur(s["p99_ns"]), dur(s["baseline_p99_ns"]), count(s["ios"]),
         f"{s['writeback_share']:.0%}", count(s["jbd2_ios"]), s["cause"], s["processes"]]
        for s in dev.spikes
    ]  # fmt: skip
    headers = ["#", "start (s)", "end (s)", "metric", "peak", "p99", "baseline p99", "IOs",
               "writeback share", "jbd2 IOs", "cause", "processes"]  # fmt: skip
    return table(headers, rows)


def _period_table(dev: Device, source: str) -> str:
    if dev.periods is None:
        return _missing("Periods: not computed.")
    if not dev.periods:
        return "<p>No significant period.</p>"
    rows = [
        [p["series"], f"{p['period_ns'] / 1e9:.3f}", f"{p['strength']:.2f}", f"{p['p_value']:.2g}",
         p.get("bursts", "-"), found_by(p.get("method", "periodogram")), p["knobs"] or "-"]
        for p in dev.periods
    ]  # fmt: skip
    origin = "findings tables" if source == "findings" else "computed by the report from IO bursts"
    return table(
        ["series", "period (s)", "strength", "p-value", "bursts", "found by", "matching knobs"],
        rows,
    ) + (
        f'<p class="meta">Source: {escape(origin)}. "writeback log": too few bursts for a '
        "periodogram, but they overlap the writeback log's events beyond chance and share "
        "their period.</p>"
    )


def _ratios(dev: Device) -> str:
    c = dev.counts
    rows = [
        [op, count(v["queued"]), count(v["dispatches"]),
         "-" if v["merge_ratio"] is None else f"{v['merge_ratio']:.3f}",
         "-" if v["split_ratio"] is None else f"{v['split_ratio']:.3f}", count(v["requeues"]),
         "-" if v["sequential_share"] is None else f"{v['sequential_share']:.1%}"]
        for op, v in c.get("ops", {}).items()
    ]  # fmt: skip
    intro = (
        f"<p>{count(c['queued'])} bios queued, {count(c['merged_bios'])} merged into other "
        f"requests, {count(c['split_bios'])} split; {count(c['requests'])} requests, "
        f"{count(c['dispatches'])} dispatches, {count(c['requeues'])} requeues, "
        f"{count(dev.errors)} completed with an error.</p>"
    )
    headers = ["op", "bios (Q)", "dispatches (D)", "#Q/#D", "split share", "requeues", "sequential"]
    return intro + table(headers, rows)


def _crosscheck(dev: Device) -> str:
    snoop, stat = dev.crosscheck.get("biosnoop"), dev.crosscheck.get("iostat") or {}
    rows: list[list[Any]] = []
    if snoop:
        rows.append(
            [
                f"biosnoop, disk {snoop['disk']}",
                "D2C of each request",
                f"{count(snoop['agree'])} of {count(snoop['found'])} within 50 us "
                f"({snoop['agree'] / snoop['found']:.1%}); found {count(snoop['found'])} of "
                f"{count(snoop['rows'])} rows",
            ]
        )
    for kind in ("w", "r"):
        if stat.get(f"{kind}_seconds"):
            source = f"iostat, {stat['iostat_device']}, {stat[f'{kind}_seconds']} intervals"
            rows.append([source, f"{kind}/s", f"{stat[f'{kind}_s_error']:.1%} median error"])
            rows.append(
                [
                    source,
                    f"{kind}_await",
                    f"{stat[f'{kind}_await_error']:.1%} median error, blkscope the lower "
                    f"in {stat[f'{kind}_await_low_share']:.0%}, by a median "
                    f"{dur(stat[f'{kind}_await_gap_ns'])} per IO",
                ]
            )
    if not rows:
        return _missing("No biosnoop or iostat log of this device in the dataset.")
    return table(["against", "compared", "agreement"], rows, text_cols=3) + (
        '<p class="note">biosnoop reads the kernel\'s own issue and completion tracepoints; '
        "iostat the kernel's disk statistics, over intervals of at least 100 IOs. blkscope's "
        "await ends at the traced C, the kernel's clock some us later (after ending the "
        "request's bios and running every probe on block_rq_complete, biosnoop included), "
        "so short IOs come out low by that gap. <code>blkscope crosscheck</code> prints the "
        "same.</p>"
    )  # fmt: skip


def _top(rows: list[dict[str, Any]]) -> str:
    return table(
        ["process", "IOs", "reads", "writes", "Q2C p50", "Q2C p99", "Q2C max", "D2C p99"],
        [[r["process"], count(r["ios"]), count(r["reads"]), count(r["writes"]),
          dur(r["q2c_p50_ns"]), dur(r["q2c_p99_ns"]), dur(r["q2c_max_ns"]), dur(r["d2c_p99_ns"])]
         for r in rows],
    )  # fmt: skip


def settings_html(dev: Device, manifest: dict[str, Any]) -> str:
    """Scheduler and dirty_* knobs from the capture's manifest, when it recorded them."""
    capture = manifest.get("capture") or {}
    rows: list[list[Any]] = []
    for d in capture.get("devices", []):
        if str(d.get("dev", "")).replace(":", ",") == dev.name:
            rows.append(["scheduler", d.get("scheduler") or "-"])
            rows += [[f"queue/{k}", v] for k, v in sorted((d.get("queue") or {}).items())]
    rows += [[k, v] for k, v in sorted((capture.get("vm_sysctls") or {}).items())]
    if not rows:
        return _missing("Capture settings (scheduler, vm.dirty_*): not recorded in this dataset.")
    return table(["setting", "value"], rows, text_cols=2)


def device_html(dev: Device, n: int, report: Report) -> str:
    """One device's section."""
    parts = [
        f'<section class="device" id="dev{n}"><h2>Device {escape(dev.name)}</h2>',
        '<div class="headline"><ul>',
        *(f"<li>{escape(s)}</li>" for s in headline(dev, report.spikes_computed)),
        "</ul></div>",
        _chart(dev, "latency", n),
        _chart(dev, "throughput", n),
        _chart(dev, "depth", n),
        _chart(dev, "stages", n),
        _stage_table(dev),
        _chart(dev, "histogram", n),
        _chart(dev, "periodogram", n),
        _period_table(dev, report.periods_source),
        "<h3>Spikes</h3>",
        _spike_table(dev, report.spikes_computed),
        "<h3>Merges, splits and requeues</h3>",
        _ratios(dev),
        "<h3>Top processes by IO count</h3>",
        _top(dev.top_count),
        "<h3>Top processes by Q2C p99</h3>",
        _top(dev.top_latency),
        "<h3>Capture settings</h3>",
        settings_html(dev, report.manifest),
        "<h3>Cross-check against the capture's own logs</h3>",
        _crosscheck(dev),
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


def render_page(report: Report, generated: str | None) -> str:
    """The whole report; generated is the one timestamp line (None leaves it out)."""
    m = report.manifest
    inputs = ", ".join(
        f"{i.get('path')} ({count(i.get('lines'))} lines)" for i in m.get("inputs", [])
    )
    errors = m.get("ingest", {}).get("error_lines", 0)
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
    ]
    if generated:
        head.append(f'<p class="meta" id="generated">Generated {escape(generated)}.</p>')
    head += source_limits_html(m)
    if not report.devices:
        head.append(_missing("No device with block IO in this dataset."))
    body = [device_html(dev, n, report) for n, dev in enumerate(report.devices)]
    return "\n".join([*head, *body, "</body></html>\n"])
