"""The report's HTML tables, each from the model's rows; every cell escaped."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape
from typing import Any

from blkscope.reports.model import BREAKDOWN_STAGES, Device, DeviceFindings
from blkscope.reports.text import count, dur, found_by
from blkscope.units import format_bytes, format_share, ns_to_s
from blkscope.units import format_percent as percent
from blkscope.wallclock import WallClock


def table(
    headers: Sequence[str],
    rows: Iterable[Sequence[Any]],
    text_cols: int = 1,
    text: frozenset[int] = frozenset(),
    css: str = "",
) -> str:
    """An HTML table; every cell is escaped, the first text_cols columns and those in text
    left-aligned."""

    def cell(tag: str, i: int, v: Any) -> str:
        cls = ' class="text"' if i < text_cols or i in text else ""
        return f"<{tag}{cls}>{escape(str(v))}</{tag}>"

    head = "".join(cell("th", i, h) for i, h in enumerate(headers))
    body = "".join(
        "<tr>" + "".join(cell("td", i, v) for i, v in enumerate(r)) + "</tr>\n" for r in rows
    )
    klass = f' class="{css}"' if css else ""
    return f"<table{klass}><thead><tr>{head}</tr></thead><tbody>\n{body}</tbody></table>"


def missing(text: str) -> str:
    """A paragraph saying what is not there and why."""
    return f'<p class="missing">{escape(text)}</p>'


def stage_table(dev: Device) -> str:
    """Stage statistics over all IO and over the bios completing during episodes."""
    rows = []
    for stage in [*BREAKDOWN_STAGES, "Q2C"]:
        s = dev.stages.get(stage, {})
        sp = (dev.episode_stages or {}).get(stage, {})
        rows.append(
            [stage, count(s.get("n")), dur(s.get("mean_ns")), dur(s.get("p50_ns")),
             dur(s.get("p99_ns")), dur(s.get("max_ns")), dur(sp.get("mean_ns")),
             dur(sp.get("p99_ns"))]
        )  # fmt: skip
    headers = ["stage", "n", "mean", "p50", "p99", "max", "episodes: mean", "episodes: p99"]
    return table(headers, rows)


def verdict_table(dev: Device) -> str:
    """The numbers behind the writeback verdict sentence."""
    v = dev.verdict
    if v is None or not v["episodes"]:
        return ""
    lag = "-" if v["median_lag_ns"] is None else dur(v["median_lag_ns"])
    rows = [
        ["latency episodes", count(v["episodes"])],
        ["of which attributed to writeback", count(v["episodes_with_writeback"])],
        ["would coincide with writeback by chance (expected)", f"{v['episodes_by_chance']:.2f}"],
        ["chance of that many coinciding (p-value)", f"{v['coincidence_p_value']:.2g}"],
        ["bytes the flusher wrote on the device", format_bytes(v["flusher_bytes"])],
        ["median lag, writeback wakeup to the episode's peak", lag],
        ["share of the latency above p99 during writeback", format_share(v["tail_latency_share"])],
        ["share of the time writeback runs", format_share(v["writeback_time_share"])],
        ["writeback explains the episodes", "yes" if v["explains"] else "no"],
        ["the rule", v["rule"]],
    ]
    return table(["evidence", "value"], rows, text_cols=2)


def episode_table(dev: Device, clock: WallClock) -> str:
    """One row per episode: when, every metric that spiked, how bad, the cause and why."""
    if not dev.episodes:
        return "<p>No latency spikes detected: every window's p99 is within the normal range.</p>"
    rows = [
        [e["episode_id"], f"{ns_to_s(e['start_ns']):.1f}-{ns_to_s(e['end_ns']):.1f}",
         clock.clock_text(e["start_ns"], 1), e["metrics"],
         f"{dur(e['peak_latency_ns'])} ({e['worst_metric']})", e["victim"], e["cause"],
         e["reason"], e["processes"]]
        for e in dev.episodes
    ]  # fmt: skip
    headers = ["#", "window (s)", "wall clock", "metrics that spiked", "worst", "victim", "cause",
               "why (and why not the other causes)", "processes (bytes queued)"]  # fmt: skip
    return table(headers, rows, text=frozenset({2, 3, 5, 6, 7, 8}), css="episodes")


def spike_table(dev: Device, clock: WallClock) -> str:
    """What each metric's spikes were judged against, and which episode each belongs to."""
    if not dev.spikes:
        return ""
    rows = [
        [s["metric"], s["spike_id"], s["episode_id"], f"{ns_to_s(s['start_ns']):.3f}",
         f"{ns_to_s(s['end_ns']):.3f}", clock.clock_text(s["start_ns"], 1),
         dur(s["peak_latency_ns"]), dur(s["p99_ns"]), dur(s["baseline_p99_ns"]),
         dur(s["threshold_ns"]), count(s["ios"])]
        for s in dev.spikes
    ]  # fmt: skip
    headers = ["metric", "spike", "episode", "start (s)", "end (s)", "wall clock", "worst",
               "p99", "normal p99", "threshold", "latencies"]  # fmt: skip
    return table(headers, rows)


def period_table(dev: Device) -> str:
    """The periods table's rows of this device (and of user series)."""
    if not dev.periods:
        return "<p>No significant period.</p>"
    rows = [
        [p["series"], f"{ns_to_s(p['period_ns']):.3f}", f"{p['strength']:.2f}", f"{p['p_value']:.2g}",
         p["bursts"], found_by(p["method"]), p["knobs"] or "-"]
        for p in dev.periods
    ]  # fmt: skip
    return table(
        ["series", "period (s)", "strength", "p-value", "bursts", "found by", "matching knobs"],
        rows,
    ) + (
        '<p class="meta">"writeback log": too few bursts for a periodogram, but they overlap '
        "the writeback log's events beyond chance and share their period.</p>"
    )


def ratios(dev: Device) -> str:
    """Merge, split and requeue figures per op class."""
    c = dev.counts
    rows = [
        [op, count(v["queued"]), count(v["dispatches"]),
         "-" if v["merge_ratio"] is None else f"{v['merge_ratio']:.3f}",
         "-" if v["split_ratio"] is None else f"{v['split_ratio']:.3f}", count(v["requeues"]),
         "-" if v["sequential_share"] is None else format_share(v["sequential_share"])]
        for op, v in c.get("ops", {}).items()
    ]  # fmt: skip
    intro = (
        f"<p>{count(c['queued'])} bios queued, {count(c['merged_bios'])} merged into other "
        f"requests, {count(c['split_bios'])} split; {count(c['requests'])} requests, "
        f"{count(c['dispatches'])} dispatches, {count(c['requeues'])} requeues, "
        f"{count(dev.errors)} completed with an error.</p>"
    )
    headers = ["op class", "bios (Q)", "dispatches (D)", "#Q/#D", "split share", "requeues",
               "sequential"]  # fmt: skip
    return intro + table(headers, rows)


def top_processes(rows: list[dict[str, Any]]) -> str:
    """Processes with their IO counts per op class (they add up to IOs) and latencies; the
    capture's own tools are marked as the observer."""
    others = any(r["others"] for r in rows)
    headers = [
        "process",
        "IOs",
        "reads",
        "writes",
        "discards",
        "flushes",
        *(["other"] if others else []),
        "Q2C p50",
        "Q2C p99",
        "Q2C max",
        "D2C p99",
        "",
    ]
    body = [
        [r["process"], count(r["ios"]), count(r["reads"]), count(r["writes"]),
         count(r["discards"]), count(r["flushes"]), *([count(r["others"])] if others else []),
         dur(r["q2c_p50_ns"]), dur(r["q2c_p99_ns"]), dur(r["q2c_max_ns"]), dur(r["d2c_p99_ns"]),
         "observer (capture tool)" if r["observer"] else ""]
        for r in rows
    ]  # fmt: skip
    return table(headers, body, text=frozenset({len(headers) - 1}), css="top")


def settings(dev: Device, manifest: dict[str, Any]) -> str:
    """Scheduler and dirty_* knobs from the capture's manifest, when it recorded them."""
    capture = manifest.get("capture") or {}
    rows: list[list[Any]] = []
    for d in capture.get("devices", []):
        if str(d.get("dev", "")).replace(":", ",") == dev.dev:
            rows.append(["scheduler", d.get("scheduler") or "-"])
            rows += [[f"queue/{k}", v] for k, v in sorted((d.get("queue") or {}).items())]
    rows += [[k, v] for k, v in sorted((capture.get("vm_sysctls") or {}).items())]
    if not rows:
        return missing("Capture settings (scheduler, vm.dirty_*): not recorded in this dataset.")
    return table(["setting", "value"], rows, text_cols=2)


def _median_error(error: float | None) -> str:
    # None: iostat printed 0 in every interval compared (a damaged log), nothing to divide by
    return (
        "not comparable (iostat printed 0)" if error is None else f"{percent(error)} median error"
    )


def crosscheck(dev: Device) -> str:
    """The agreement with the capture's own biosnoop and iostat logs."""
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
            rows.append([source, f"{kind}/s", _median_error(stat[f"{kind}_s_error"])])
            rows.append(
                [
                    source,
                    f"{kind}_await",
                    f"{_median_error(stat[f'{kind}_await_error'])}, blkscope the lower "
                    f"in {percent(stat[f'{kind}_await_low_share'], 0)}, by a median "
                    f"{dur(stat[f'{kind}_await_gap_ns'])} per IO",
                ]
            )
    if not rows:
        return missing("No biosnoop or iostat log of this device in the dataset.")
    return table(["against", "compared", "agreement"], rows, text_cols=3) + (
        '<p class="note">biosnoop reads the kernel\'s own issue and completion tracepoints; '
        "iostat the kernel's disk statistics, over intervals of at least 100 IOs. blkscope's "
        "await ends at the traced C, the kernel's clock some us later (after ending the "
        "request's bios and running every probe on block_rq_complete, biosnoop included), "
        "so short IOs come out low by that gap. <code>blkscope crosscheck</code> prints the "
        "same.</p>"
    )  # fmt: skip


def other_devices(others: list[DeviceFindings], drawn: int) -> str:
    """The devices without charts (past the busiest drawn), one row each."""
    rows = [
        [d.name_text, count(d.counts.get("queued")), count(d.counts.get("completions")),
         dur(d.stages.get("D2C", {}).get("p99_ns")), dur(d.stages.get("Q2C", {}).get("p99_ns")),
         count(len(d.episodes)), "; ".join(w.split(": ", 1)[-1] for w in d.warnings) or "-"]
        for d in others
    ]  # fmt: skip
    head = ["device", "IOs", "completions", "D2C p99", "Q2C p99", "latency episodes", "warnings"]
    return (
        f'<section class="device" id="other-devices"><h2>{count(len(others))} more devices</h2>'
        f'<p class="meta">Charts are drawn for the {drawn} devices with the most IO; these '
        "are the others, in major,minor order (summary.json has each one's full entry).</p>"
        + table(head, rows, text_cols=1, text=frozenset({6}))
        + "</section>"
    )
