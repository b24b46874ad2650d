"""Say what a folder ingest recognised, skipped, and how each source met the timeline."""

from __future__ import annotations

import datetime as dt
from typing import Any

from blkscope.units import NS_PER_S, ns_to_ms, plural


def _wall(ns: int) -> str:
    when = dt.datetime.fromtimestamp(ns // NS_PER_S, dt.timezone.utc)
    return f"{when:%Y-%m-%dT%H:%M:%S}.{ns % NS_PER_S:09d}Z"


def _offset(ns: int | None) -> str:
    return "t_ns null" if ns is None else f"offset {ns / NS_PER_S:+.6f} s"


def folder_report(manifest: dict[str, Any]) -> str:
    """Lines listing recognised inputs, skipped files with reasons, and the clock model."""
    lines = ["recognised:"]
    for doc in manifest["inputs"]:
        tables = ", ".join(f"{t} ({plural(n, 'row')})" for t, n in doc.get("tables", {}).items())
        lines.append(
            f"  {doc['name']}: {doc.get('description', doc['format'])}, {doc['role']}{' -> ' if tables else ''}{tables}"
        )
    lines.append("skipped:" if manifest["skipped"] else "skipped: none")
    lines += [f"  {s['name']}: {s['reason']}" for s in manifest["skipped"]]
    zero = manifest["clock"]["trace_zero"]
    if zero["wall_ns"] is not None:
        date = "" if zero["date_known"] else " (date unknown)"
        lines.append(f"trace zero: {_wall(zero['wall_ns'])}{date} by {zero['wall_how']}")
    if zero["monotonic_ns"] is not None:
        lines.append(
            f"trace zero: CLOCK_MONOTONIC {zero['monotonic_ns'] / NS_PER_S:.9f} s "
            f"by {zero['monotonic_how']}"
        )
    for name, found in zero["alignments"].items():
        lines.append(f"  alignment of {name}: {_evidence(found)}")
    for src in manifest["clock"]["sources"][1:]:
        lines.append(
            f"  {src['source']} [{src['table']}]: {src['kind']}, {_offset(src['offset_ns'])}"
            f" ({src['method']})"
        )
    return "\n".join(lines)


def _evidence(found: dict[str, Any]) -> str:
    low, high = found["interval_ns"]
    window = f"window {ns_to_ms(high - low):.0f} ms"
    if "mismatch" in found:
        verdict = found.get("agrees")
        agrees = "" if verdict is None else ", agrees" if verdict else ", DISAGREES"
        return (
            f"{found['method']}: mismatch {found['mismatch']:.3f} "
            f"(runner-up {found['runner_up_mismatch']:.3f}), {window}{agrees}"
        )
    return (
        f"{found['method']}: {found['matched_rows']}/{found['rows_used']} rows matched "
        f"(runner-up {found['runner_up_matched_rows']}), {window}"
    )
