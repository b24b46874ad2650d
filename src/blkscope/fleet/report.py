"""`fleet report`: one self-contained HTML page about a whole fleet.

It reads only the fleet's small tables (captures, capture_summary, capture_labels, periods,
episodes) through the fleet views, never a capture's events: its cost grows with the number
of captures and episodes, not with the traces' size. Every name on the page came from a
traced machine or a command line and is escaped.
"""

from __future__ import annotations

import datetime as dt
import html
from pathlib import Path
from typing import Any

import numpy as np

from blkscope.errors import DatasetError
from blkscope.fleet.fleet_folder import open_fleet, partitions
from blkscope.fleet.query import duckdb_fleet
from blkscope.reports.make_report import refuse_to_replace
from blkscope.reports.tables import missing, table
from blkscope.store.folder_swap import make_parent_folders
from blkscope.store.writer import check_output_name, write_text_atomic
from blkscope.units import format_ms, format_s, plural
from blkscope.version import __version__

TITLE = "<title>blkscope fleet report</title>"
# the tables and views the page reads (only these are defined: see query._defined_for)
_READS = "fleet_hosts captures fleet_periods fleet_episodes fleet_outliers fleet_label_latency"
BOOTSTRAP_RESAMPLES = 2000
# fleet_outliers.sql judges a device an outlier only among at least this many
OUTLIER_MIN_DEVICES = 5
_E = html.escape


def _rows(con: Any, sql: str) -> list[dict[str, Any]]:
    cursor = con.execute(sql)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, r, strict=True)) for r in cursor.fetchall()]


def median_difference(
    before: list[float], after: list[float], seed: int = 0
) -> tuple[float, float, float]:
    """(after - before) of the medians with a 95% percentile-bootstrap interval over captures."""
    rng = np.random.default_rng(seed)
    a, b = np.asarray(before, float), np.asarray(after, float)
    pick_a = rng.integers(0, len(a), (BOOTSTRAP_RESAMPLES, len(a)))
    pick_b = rng.integers(0, len(b), (BOOTSTRAP_RESAMPLES, len(b)))
    diffs = np.median(b[pick_b], axis=1) - np.median(a[pick_a], axis=1)
    low, high = np.percentile(diffs, [2.5, 97.5])
    return float(np.median(b) - np.median(a)), float(low), float(high)


def before_after(con: Any, by: str | None) -> tuple[str | None, list[dict[str, Any]]]:
    """The label compared (by, or the first with exactly two values) and one row per metric."""
    rows = _rows(con, "SELECT * FROM fleet_label_latency ORDER BY key, value, host, capture")
    values: dict[str, set[str]] = {}
    for r in rows:
        values.setdefault(r["key"], set()).add(r["value"])
    if by is None:
        by = next((k for k, v in sorted(values.items()) if len(v) == 2), None)
    if by is None or len(values.get(by, ())) != 2:
        return by, []
    first, second = sorted(values[by])
    out = []
    for metric in ("q2c_p99_ns", "d2c_p99_ns"):
        a = [
            r[metric]
            for r in rows
            if r["key"] == by and r["value"] == first and r[metric] is not None
        ]
        b = [
            r[metric]
            for r in rows
            if r["key"] == by and r["value"] == second and r[metric] is not None
        ]
        if a and b:
            diff, low, high = median_difference(a, b)
            out.append({"metric": metric, "before": first, "after": second, "n_before": len(a),
                        "n_after": len(b), "median_before": float(np.median(a)),
                        "median_after": float(np.median(b)), "difference": diff,
                        "low": low, "high": high, "significant": low > 0 or high < 0})  # fmt: skip
    return by, out


def _utc(wall_ns: int | None) -> str:
    """ISO 8601 UTC to the second, as the single report writes times."""
    if wall_ns is None:
        return "-"
    return (dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=wall_ns // 1000)).strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )


def _timeline(captures: list[dict[str, Any]], episodes: list[dict[str, Any]]) -> str:
    """Episodes per host on the wall clock: an SVG lane per host, captures as grey spans and
    episodes as red ticks."""
    spans = [c for c in captures if c["start_wall_ns"] is not None]
    if not spans:
        return missing("No capture recorded its wall clock.")
    hosts = sorted({c["host"] for c in spans})
    t0 = min(c["start_wall_ns"] for c in spans)
    t1 = max(c["start_wall_ns"] + (c["duration_ns"] or 0) for c in spans)
    width, left, lane = 900, 160, 22
    scale = (width - left - 10) / max(t1 - t0, 1)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" '
             f'height="{lane * len(hosts) + 30}" role="img">']  # fmt: skip
    for i, host in enumerate(hosts):
        y = i * lane + 5
        parts.append(f'<text x="0" y="{y + 14}" font-size="12">{_E(host)}</text>')
        for c in (c for c in spans if c["host"] == host):
            x = left + (c["start_wall_ns"] - t0) * scale
            w = max((c["duration_ns"] or 0) * scale, 1)
            parts.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="16" fill="#ddd">'
                         f"<title>{_E(c['capture'])}</title></rect>")  # fmt: skip
        for e in (e for e in episodes if e["host"] == host and e["start_wall_ns"] is not None):
            x = left + (e["start_wall_ns"] - t0) * scale
            w = max((e["end_wall_ns"] - e["start_wall_ns"]) * scale, 2)
            tip = f"{e['capture']} episode {e['episode_id']}: {format_ms(e['peak_latency_ns'])} ({e['cause']})"
            parts.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="16" fill="#c33">'
                         f"<title>{_E(tip)}</title></rect>")  # fmt: skip
    y = lane * len(hosts) + 22
    parts.append(f'<text x="{left}" y="{y}" font-size="11">{_E(_utc(t0))}</text>')
    parts.append(f'<text x="{width - 10}" y="{y}" font-size="11" text-anchor="end">'
                 f"{_E(_utc(t1))}</text></svg>")  # fmt: skip
    return "".join(parts)


def fleet_page(fleet: Path, by: str | None = None) -> str:
    """The page's HTML."""
    open_fleet(fleet)
    if not partitions(fleet):
        raise DatasetError(
            str(fleet), "holds no capture", hint="add some with 'blkscope fleet add'"
        )
    with duckdb_fleet(fleet, _READS) as con:
        hosts = _rows(con, "SELECT * FROM fleet_hosts ORDER BY rank, host")
        captures = _rows(con, "SELECT * FROM captures ORDER BY host, capture")
        periods = _rows(con, "SELECT * FROM fleet_periods ORDER BY host, capture, series")
        episodes = _rows(con, "SELECT * FROM fleet_episodes ORDER BY host, start_wall_ns")
        outliers = _rows(
            con,
            "SELECT * FROM fleet_outliers ORDER BY abs(robust_z) DESC NULLS LAST, host, capture",
        )
        label, compared = before_after(con, by)
    return _page(hosts, captures, periods, episodes, outliers, label, compared)


def _page(
    hosts: list[dict[str, Any]],
    captures: list[dict[str, Any]],
    periods: list[dict[str, Any]],
    episodes: list[dict[str, Any]],
    outliers: list[dict[str, Any]],
    label: str | None,
    compared: list[dict[str, Any]],
) -> str:
    from blkscope.reports.page import CSS  # the single report's look (loads its charts too)

    judged = bool(outliers) and outliers[0]["fleet_devices"] >= OUTLIER_MIN_DEVICES
    sections = [
        "<h1>blkscope fleet report</h1>",
        f'<p class="meta">{plural(len(hosts), "host")}, {plural(len(captures), "capture")}, '
        f"{plural(len(episodes), 'latency episode')}; blkscope {_E(__version__)}.</p>",
        "<h2>Hosts ranked by Q2C p99</h2>",
        table(["rank", "host", "captures", "IOs", "worst Q2C p99", "worst D2C p99",
               "median Q2C p99", "median D2C p99", "episodes"],
              [[h["rank"], h["host"], h["captures"], f"{h['ios']:,}",
                format_ms(h["worst_q2c_p99_ns"]), format_ms(h["worst_d2c_p99_ns"]),
                format_ms(h["median_q2c_p99_ns"]), format_ms(h["median_d2c_p99_ns"]), h["episodes"]]
               for h in hosts], text=frozenset({1})),
        "<h2>Periods per host and the knobs they match</h2>",
        _or_none(periods, table(
            ["host", "capture", "series", "period", "knobs", "vm.dirty_writeback_centisecs",
             "within 10% of it"],
            [[p["host"], p["capture"], p["series"], format_s(p["period_ns"]), p["knobs"] or "-",
              _known(p["vm_dirty_writeback_centisecs"]), _yes_no(p["matches_writeback_knob"])]
             for p in periods], text_cols=5)),
        "<h2>Latency episodes per host over wall-clock time</h2>",
        _timeline(captures, episodes),
        "<h2>Outliers against the fleet (Q2C p99, robust z)</h2>",
        '<p class="note">' + _E(
            f"A device is an OUTLIER when its Q2C p99 is more than 3.5 robust standard deviations "
            f"(1.4826 x the median absolute deviation) from the fleet's median, judged only "
            f"among at least {OUTLIER_MIN_DEVICES} capture devices"
            + ("." if judged else f": this fleet has {len(outliers)}, too few to judge them.")
        ) + "</p>",
        _or_none(outliers, table(
            ["host", "capture", "device", "Q2C p99", "fleet median", "robust z", "outlier"],
            [[o["host"], o["capture"], f"{o['dev_major']},{o['dev_minor']}",
              format_ms(o["q2c_p99_ns"]), format_ms(o["fleet_median_q2c_p99_ns"]),
              "-" if o["robust_z"] is None else f"{o['robust_z']:.2f}",
              "OUTLIER" if o["outlier"] else ""] for o in outliers], text_cols=3)),
        f"<h2>Before/after by label {_E(label or '(none)')}</h2>",
        _or_none(compared, table(
            ["metric", "before", "after", "captures", "median before", "median after",
             "difference (95% interval)", "significant"],
            [[c["metric"].removesuffix("_ns"), f"{label}={c['before']}", f"{label}={c['after']}",
              f"{c['n_before']} / {c['n_after']}", format_ms(c["median_before"]),
              format_ms(c["median_after"]),
              f"{format_ms(c['difference'])} [{format_ms(c['low'])}, {format_ms(c['high'])}]",
              "yes" if c["significant"] else "no"] for c in compared], text_cols=3)),
        "<h2>Captures</h2>",
        table(["host", "capture", "start", "duration", "kernel", "scheduler", "events",
               "malformed lines", "side logs"],
              [[c["host"], c["capture"], _utc(c["start_wall_ns"]),
                format_s(c["duration_ns"] or 0, 1), c["kernel"] or "-", c["scheduler"] or "-",
                f"{c['events']:,}", f"{c['ingest_errors']:,}", (c["side_logs"] or "-").replace(",", ", ")]
               for c in captures], text_cols=3, text=frozenset({4, 5, 8})),
    ]  # fmt: skip
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"{TITLE}\n<style>{CSS}</style></head><body>\n" + "\n".join(sections) + "\n</body></html>\n"
    )


def _or_none(rows: list[Any], html_table: str) -> str:
    return html_table if rows else missing("None.")


def _known(value: Any) -> str:
    return "-" if value is None else str(value)


def _yes_no(value: bool | None) -> str:
    """A match the fleet can judge, or 'unknown' (the capture did not record the knob)."""
    return "unknown" if value is None else "yes" if value else "no"


def write_fleet_report(fleet: Path, output: Path, by: str | None = None) -> None:
    """Write the page atomically; never over a file blkscope did not write."""
    check_output_name(output, "report")
    make_parent_folders(output)
    refuse_to_replace(output, TITLE.encode())
    write_text_atomic(output, fleet_page(fleet, by))
