"""Plain-text tables of findings for the terminal (spikes, periods)."""

from __future__ import annotations

from typing import Any

from blkscope.analyze.devices import DeviceName, label
from blkscope.reports.text import found_by
from blkscope.units import format_ns, ns_to_ms, ns_to_s, plural
from blkscope.units import format_percent as percent
from blkscope.wallclock import WallClock

Names = dict[tuple[int, int], DeviceName]


def render_spikes(
    spikes: list[dict[str, Any]],
    episodes: list[dict[str, Any]],
    verdicts: list[dict[str, Any]],
    clock: WallClock,
    names: Names | None = None,
) -> str:
    """Latency episodes per device (every metric that spiked in the window, what was in flight,
    the cause and why), then what each metric's spikes were judged against, then the verdict."""
    if not spikes:
        return "no latency spikes: every window's p99 is within the normal range"
    lines: list[str] = []
    for device in dict.fromkeys((e["dev_major"], e["dev_minor"]) for e in episodes):
        mine = [e for e in episodes if (e["dev_major"], e["dev_minor"]) == device]
        lines += [
            f"{plural(len(mine), 'latency episode')} on {label(*device, names or {})}"
            f" (spikes of any metric in overlapping windows)",
            f"{'#':>3} {'start':>9} {'end':>9} {'wall clock':<14} {'worst':>8}  metrics",
        ]
        for e in mine:
            lines += [
                f"{e['episode_id']:>3} {ns_to_s(e['start_ns']):>8.1f}s {ns_to_s(e['end_ns']):>8.1f}s "
                f"{clock.clock_text(e['start_ns']).split(' = ')[0]:<14} "
                f"{format_ns(e['peak_latency_ns']):>8}  {e['metrics']}",
                f"      cause: {e['cause']}",
                f"      why: {e['reason']}",
                f"      processes (bytes queued): {e['processes']}",
            ]
        lines.append("")
    for metric in dict.fromkeys(r["metric"] for r in spikes):
        group = [r for r in spikes if r["metric"] == metric]
        first = group[0]
        lines.append(
            f"{metric}: {plural(len(group), 'spike')} (p99 per "
            f"{format_ns(first['window_ns'])} window above {format_ns(first['threshold_ns'])}; "
            f"normal p99 {format_ns(first['baseline_p99_ns'])}) in episodes "
            + ", ".join(str(r["episode_id"]) for r in group)
        )
    lines.append("")
    lines += [
        f"{label(v['dev_major'], v['dev_minor'], names or {})}: {v['sentence']}"
        for v in verdicts
        if v["episodes"]
    ]
    return "\n".join(lines).rstrip()


def device_name(major: int | None, minor: int | None, names: Names | None) -> str:
    """A device as a column shows it: its name when the dataset knows it, else major,minor;
    '-' for none (a row about every device)."""
    if major is None or minor is None:
        return "-"
    known = (names or {}).get((major, minor))
    return known.name if known else f"{major},{minor}"


def render_periods(rows: list[dict[str, Any]], names: Names | None = None) -> str:
    """One line per significant period, with the kernel setting it matches."""
    if not rows:
        return "no significant period in any series"
    lines = [
        f"{'device':>7} {'series':<18} {'period':>8} {'strength':>8} {'p-value':>9} "
        f"{'bursts':>6}  {'found by':<16} matches"
    ]
    for r in rows:
        dev = device_name(r["dev_major"], r["dev_minor"], names)
        lines.append(
            f"{dev:>7} {r['series']:<18} {ns_to_s(r['period_ns']):>7.2f}s "
            f"{r['strength']:>8.2f} {r['p_value']:>9.1e} {r['bursts']:>6}  "
            f"{found_by(r.get('method', 'periodogram')):<16} {r['knobs'] or '-'}"
        )
    return "\n".join(lines)


def render_partitions(rows: list[dict[str, Any]]) -> str:
    """One line per partition: its span and the IO that landed in it."""
    lines = [
        f"{'device':>7} {'partition':<12} {'start':>10} {'sectors':>10} {'bios':>8} "
        f"{'MiB':>9} {'q2c p99':>9}"
    ]
    for r in rows:
        p99 = "-" if r["q2c_p99_ns"] is None else f"{ns_to_ms(r['q2c_p99_ns']):.3f}ms"
        lines.append(
            f"{r['dev_major']},{r['dev_minor']:<3} {r['partition']:<12} "
            f"{r['start_sector']:>10} {r['sectors']:>10} {r['bios']:>8} "
            f"{r['bytes'] / 2**20:>9.1f} {p99:>9}"
        )
    return "\n".join(lines)


def _share(part: int, whole: int) -> str:
    return f"{part:,} ({part / whole:.1%})" if whole else "0"


def _or_zero(error: float | None) -> str:
    # None: iostat printed 0 in every interval compared (a damaged log), nothing to divide by
    return "- (iostat printed 0)" if error is None else percent(error)


def render_crosscheck(result: dict[str, Any]) -> str:
    """The agreement with the capture's biosnoop and iostat logs, as lines of text."""
    out = []
    if result["biosnoop"] is None:
        out.append("biosnoop: no log in this dataset")
    else:
        out.append("biosnoop (the kernel's issue and completion tracepoints), sized rows:")
        for d in result["biosnoop"]:
            if not d["found"]:
                out.append(f"  {d['disk']}: {plural(d['rows'], 'row')}, none found (not traced)")
                continue
            out.append(
                f"  {d['disk']} = {d['dev']}: {plural(d['rows'], 'row')},"
                f" found {_share(d['found'], d['rows'])},"
                f" D2C within 50 us {_share(d['agree'], d['found'])},"
                f" median C gap {format_ns(d['median_c_gap_ns'])}"
            )
    if result["iostat"] is None:
        out.append("iostat: no log in this dataset")
        return "\n".join(out)
    out.append("iostat (the kernel's disk statistics), intervals with >= 100 IOs of a kind:")
    low = False
    for d in result["iostat"]:
        out.append(
            f"  {d['dev']} = {d['iostat_device']}: {plural(d['intervals'], 'interval')},"
            f" iostat's times shifted {format_ns(d['phase_ns'])} to fit"
        )
        for kind, name in (("w", "writes"), ("r", "reads")):
            if not d[f"{kind}_seconds"]:
                continue
            out.append(
                f"    {name}: {d[f'{kind}_seconds']} intervals, {kind}/s median error"
                f" {_or_zero(d[f'{kind}_s_error'])}, {kind}_await"
                f" {_or_zero(d[f'{kind}_await_error'])}"
                f" (blkscope's the lower in {percent(d[f'{kind}_await_low_share'], 0)},"
                f" by a median {format_ns(d[f'{kind}_await_gap_ns'])} per IO)"
            )
            low |= (d[f"{kind}_await_low_share"] or 0) >= 0.8
    if low:
        out.append(
            "  blkscope's await ends at the traced C; the kernel stops its clock later, after"
            " ending the request's bios (page cache, direct-IO waiters) and running every probe"
            " on block_rq_complete (biosnoop is one): the gap per IO above, which the trace"
            " cannot see."
        )
    return "\n".join(out)
