"""Human wording of numbers and findings, shared by the page and the headline."""

from __future__ import annotations

from typing import Any

import numpy as np

from blkscope.reports.model import Device


def dur(ns: float | int | None) -> str:
    """A duration in the unit that reads best: 812 ns, 67.7 us, 27.4 ms, 2.14 s."""
    if ns is None or (isinstance(ns, float) and np.isnan(ns)):
        return "-"
    value = float(ns)
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value:.0f} ns"


def count(n: int | float | None) -> str:
    """Thousands separators; '-' for missing."""
    return "-" if n is None else f"{int(n):,}"


def worst_bin(dev: Device, metric: str) -> tuple[float, float] | None:
    """(bin centre s, p99 ns) of the bin with the highest p99 of a metric."""
    band = dev.d2c if metric == "d2c" else dev.q2c
    if np.all(np.isnan(band.p99)):
        return None
    k = int(np.nanargmax(band.p99))
    return float(dev.bins.centers_s()[k]), float(band.p99[k])


def cause_shares(spikes: list[dict[str, Any]]) -> dict[str, float]:
    """Share of spikes per cause, most frequent first (ties by name)."""
    total = len(spikes)
    counts: dict[str, int] = {}
    for s in spikes:
        counts[s["cause"]] = counts.get(s["cause"], 0) + 1
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return {cause: round(n / total, 4) for cause, n in ordered}


def worst_spike(spikes: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The spike with the slowest IO."""
    if not spikes:
        return None
    return max(spikes, key=lambda s: (s["peak_latency_ns"], -s["start_ns"]))


def period_phrase(p: dict[str, Any]) -> str:
    """'kworker_writes every 5.00 s (matches vm.dirty_writeback_centisecs)'."""
    knobs = f" (matches {p['knobs']})" if p.get("knobs") else ""
    return f"{p['series']} every {p['period_ns'] / 1e9:.2f} s{knobs}"


def headline(dev: Device, spikes_computed: bool) -> list[str]:
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
            f"Worst {dev.bins.width_ns / 1e6:g} ms bin: Q2C p99 {dur(worst[1])} at {worst[0]:.2f} s."
        )
    if dev.spikes is None or not spikes_computed:
        out.append("Latency spikes: not computed (findings are not available for this dataset).")
    elif not dev.spikes:
        out.append("No latency spikes detected.")
    else:
        shares = ", ".join(f"{c} {v:.0%}" for c, v in cause_shares(dev.spikes).items())
        w = worst_spike(dev.spikes) or {}
        out.append(
            f"{len(dev.spikes)} latency spike{'s' if len(dev.spikes) != 1 else ''} "
            f"(causes: {shares}); worst at {w['start_ns'] / 1e9:.2f} s: "
            f"{w['metric'].upper()} peak {dur(w['peak_latency_ns'])}, cause {w['cause']}."
        )
    if dev.periods:
        out.append("Periodic: " + "; ".join(period_phrase(p) for p in dev.periods) + ".")
    elif dev.periods is not None:
        out.append("No significant period found in writeback or journal IO.")
    return out


def found_by(method: str) -> str:
    """How a period was found, in words."""
    return "writeback log" if method == "writeback_events" else method
