"""The comparison of two captures as a human-readable table (`blkscope compare`)."""

from __future__ import annotations

from typing import Any

from blkscope.units import ns_to_ms


def _with_interval(ns: int, low: int, high: int) -> str:
    return f"{ns_to_ms(ns):.3f}ms [{ns_to_ms(low):.3f}, {ns_to_ms(high):.3f}]"


def render(result: dict[str, Any]) -> str:
    """Human-readable comparison table."""
    lines = [
        f"before: {result['before']}",
        f"after:  {result['after']}",
        "",
        "per-window statistics (what the verdicts judge): "
        + "; ".join(f"{k} = {v}" for k, v in result["statistics"].items()),
        f"{'device':>7} {'op':>7} {'stage':>5} {'statistic':>17} {'before':>10} {'after':>10} "
        f"{'change':>8} {'95% CI':>17}  verdict",
    ]
    for c in result["latency"]:
        ci = f"[{c['ci_low']:+.0%}, {c['ci_high']:+.0%}]"
        lines.append(
            f"{c['device']:>7} {c['op_class']:>7} {c['stage']:>5} {c['statistic']:>17} "
            f"{ns_to_ms(c['before_ns']):>8.3f}ms {ns_to_ms(c['after_ns']):>8.3f}ms "
            f"{c['change']:>+8.0%} {ci:>17}  {c['verdict']}"
        )
    lines += [
        "",
        "whole-capture p99 of every IO (as analyze and the report print it), 95% intervals "
        "from resampling 1 s windows:",
        f"{'device':>7} {'op':>7} {'stage':>5} {'before':>26} {'after':>26} {'change':>8} "
        f"{'95% CI':>17}  verdict",
    ]
    for c in result["capture_p99"]:
        ci = f"[{c['ci_low']:+.0%}, {c['ci_high']:+.0%}]"
        lines.append(
            f"{c['device']:>7} {c['op_class']:>7} {c['stage']:>5} "
            f"{_with_interval(c['before_ns'], c['before_low_ns'], c['before_high_ns']):>26} "
            f"{_with_interval(c['after_ns'], c['after_low_ns'], c['after_high_ns']):>26} "
            f"{c['change']:>+8.0%} {ci:>17}  {c['verdict']}"
        )
    lines.append("")
    for s in result["spikes"]:
        lines.append(f"latency episodes on {s['device']}: {s['before']} -> {s['after']}")
    for p in result["periods"]:
        fmt = lambda v: "none" if v is None else f"{v:.2f} s"  # noqa: E731
        lines.append(
            f"period of {p['series']} on {p['device'] or 'all'}: {fmt(p['before_s'])} -> "
            f"{fmt(p['after_s'])} ({p['verdict']})"
        )
    n = len(result["significant"])
    lines.append("")
    lines.append(
        f"{n} significant latency change{'s' if n != 1 else ''} in the per-window statistics; "
        "the rest is noise"
        if n
        else "no significant latency change: every difference is within noise"
    )
    moved = [c for c in result["capture_p99"] if c["verdict"] != "noise"]
    if moved:
        lines.append(
            "whole-capture p99 beyond its interval: "
            + ", ".join(f"{c['op_class']} {c['stage']} {c['verdict']}" for c in moved)
        )
    return "\n".join(lines)
