"""Human wording of numbers and findings, shared by the page, summary.json and the headline."""

from __future__ import annotations

from typing import Any

import numpy as np

from blkscope.reports.model import Device
from blkscope.units import format_ns, format_s, format_share, ns_to_ms
from blkscope.wallclock import WallClock


def dur(ns: float | int | None) -> str:
    """A duration in the unit that reads best: 812 ns, 67.7 us, 27.4 ms, 2.14 s."""
    return format_ns(ns, sep=" ")


def count(n: int | float | None) -> str:
    """Thousands separators; '-' for missing."""
    return "-" if n is None else f"{int(n):,}"


def at(t_ns: int | float, clock: WallClock) -> str:
    """'25.18 s (23:38:14 UTC)': a trace time with its wall-clock time when known."""
    wall = clock.clock_text(int(t_ns))
    return f"{format_s(t_ns)}" + ("" if wall == "-" else f" ({wall})")


def worst_bin(dev: Device, metric: str) -> tuple[float, float] | None:
    """(bin centre s, p99 ns) of the bin with the highest p99 of a metric."""
    band = dev.d2c if metric == "d2c" else dev.q2c
    if np.all(np.isnan(band.p99)):
        return None
    k = int(np.nanargmax(band.p99))
    return float(dev.bins.centers_s()[k]), float(band.p99[k])


def cause_shares(episodes: list[dict[str, Any]]) -> dict[str, float]:
    """Share of episodes per cause, most frequent first (ties by name)."""
    total = len(episodes)
    counts: dict[str, int] = {}
    for e in episodes:
        counts[e["cause"]] = counts.get(e["cause"], 0) + 1
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return {cause: round(n / total, 4) for cause, n in ordered}


def worst_episode(episodes: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The episode with the slowest latency."""
    if not episodes:
        return None
    return max(episodes, key=lambda e: (e["peak_latency_ns"], -e["start_ns"]))


def period_phrase(p: dict[str, Any]) -> str:
    """'kworker_writes every 5.12 s (matches vm.dirty_writeback_centisecs)'."""
    knobs = f" (matches {p['knobs']})" if p.get("knobs") else ""
    return f"{p['series']} every {format_s(p['period_ns'])}{knobs}"


def period_caption(p: dict[str, Any]) -> str:
    """How a period was found, in a few words, for the periodogram panel of its series."""
    knobs = f" = {p['knobs'].split(',')[0]}" if p.get("knobs") else ""
    if p.get("method") == "writeback_events":
        return (
            f"{format_s(p['period_ns'])}{knobs}, from the writeback log ({p['bursts']} "
            f"bursts, too few for this periodogram, overlap its events; p = {p['p_value']:.2g})"
        )
    return f"{format_s(p['period_ns'])}{knobs} (p = {p['p_value']:.2g}, {p['bursts']} bursts)"


def headline(dev: Device, clock: WallClock) -> list[str]:
    """Sentences saying what was found on the device, most important first."""
    d2c, q2c = dev.stages.get("D2C", {}), dev.stages.get("Q2C", {})
    out = [
        f"{count(dev.counts.get('queued'))} IOs queued, {count(dev.counts.get('completions'))} "
        f"completions: D2C p99 {dur(d2c.get('p99_ns'))} (max {dur(d2c.get('max_ns'))}), "
        f"Q2C p99 {dur(q2c.get('p99_ns'))} (max {dur(q2c.get('max_ns'))})."
    ]
    worst = worst_bin(dev, "q2c")
    if worst:
        out.append(
            f"Worst {ns_to_ms(dev.bins.width_ns):g} ms bin: Q2C p99 {dur(worst[1])} at "
            f"{at(worst[0] * 1e9, clock)}."
        )
    out.append(lost_events(dev))
    if not dev.episodes:
        out.append("No latency spikes detected.")
    else:
        n, spikes = len(dev.episodes), len(dev.spikes)
        shares = ", ".join(f"{c} {format_share(v)}" for c, v in cause_shares(dev.episodes).items())
        w = worst_episode(dev.episodes) or {}
        out.append(
            f"{n} latency episode{'s' * (n != 1)} ({spikes} metric spike{'s' * (spikes != 1)}; "
            f"causes: {shares}); worst at {at(w['peak_ns'], clock)}: {w['worst_metric']} "
            f"{dur(w['peak_latency_ns'])}, cause {w['cause']}."
        )
    if dev.verdict and dev.verdict["episodes"]:
        out.append(dev.verdict["sentence"][0].upper() + dev.verdict["sentence"][1:] + ".")
    if dev.periods:
        out.append("Periodic: " + "; ".join(period_phrase(p) for p in dev.periods) + ".")
    else:
        out.append("No significant period found in writeback, journal or latency series.")
    return out


def lost_events(dev: Device) -> str:
    """The events the trace says it lost, as blkparse reports its skips: every number above
    was built without them."""
    orphans = int(dev.counts.get("orphan_completions") or 0)
    missing = (
        "not countable (the input has no sequence numbers)"
        if dev.missing_events is None
        else f"{count(dev.missing_events)} missing from the trace (gaps in its sequence numbers)"
    )
    return f"Lost events: {missing}; {count(orphans)} completions with no issue (C without D)."


def found_by(method: str) -> str:
    """How a period was found, in words."""
    return "writeback log" if method == "writeback_events" else method
