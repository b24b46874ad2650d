"""`blkscope files` as text: the top files, the folders rolled up, writeback's files, and the
files in flight during each spike episode. Paths come from traced machines: one line each."""

from __future__ import annotations

from typing import Any

from blkscope.analyze.devices import DeviceName, label
from blkscope.safe_text import printable
from blkscope.units import format_ns, format_share

UNMAPPED_WHY = (
    "sectors no file in the map owned when it was made (files deleted or rewritten during the "
    "capture, files outside --files, or filesystem blocks the map does not label)"
)


def one_line(text: str) -> str:
    """An untrusted name on one terminal line: controls, newlines and tabs as escapes."""
    return printable(text).replace("\n", "\\n").replace("\t", "\\t")


def _mib(n: int) -> str:
    return f"{n / 2**20:,.1f}"


def _lat(ns: int | None) -> str:
    return "-" if ns is None else format_ns(ns)


def render_files(
    usage: dict[str, Any], top: int = 20, names: dict[tuple[int, int], DeviceName] | None = None
) -> str:
    """The usage dict of analyze.file_usage.file_usage as a few text tables."""
    total = usage["bytes"]
    out = [f"IO by file ({usage['during']}): {_mib(total)} MiB in all"]
    out.append(
        "  " + ", ".join(f"{k['kind']} {format_share(k['share'])}" for k in usage["by_kind"])
    )
    unmapped = sum(k["bytes"] for k in usage["by_kind"] if k["kind"] == "unmapped")
    if unmapped:
        out.append(f"  {_mib(unmapped)} MiB unmapped: {UNMAPPED_WHY}")
    out.append(
        f"{'MiB':>9} {'share':>6} {'IOs':>7} {'read':>8} {'write':>8} {'wb':>6} "
        f"{'p50':>8} {'p99':>8}  kind       path / top process"
    )
    for f in usage["files"][:top]:
        procs = f["processes"][0]["comm"] if f["processes"] else "-"
        wb = format_share(f["writeback_bytes"] / f["bytes"]) if f["bytes"] else "-"
        out.append(
            f"{_mib(f['bytes']):>9} {format_share(f['share']):>6} {f['ios']:>7} "
            f"{_mib(f['read_bytes']):>8} {_mib(f['write_bytes']):>8} {wb:>6} "
            f"{_lat(f['q2c_p50_ns']):>8} {_lat(f['q2c_p99_ns']):>8}  {f['kind']:<10} "
            f"{one_line(f['path'])} ({one_line(procs or '?')})"
        )
    if len(usage["files"]) > top:
        out.append(f"  ... {len(usage['files']) - top} more (--json lists all)")
    if usage["directories"]:
        out += ["", "Folders (every file under them):", f"{'MiB':>9} {'files':>6} {'wb MiB':>8}"]
        for d in usage["directories"][:top]:
            out.append(
                f"{_mib(d['bytes']):>9} {d['files']:>6} {_mib(d['writeback_bytes']):>8}  "
                f"{one_line(d['path'])}"
            )
    wb_total = usage["writeback_bytes"]
    if wb_total:
        out += ["", f"Writeback (flusher writes, {_mib(wb_total)} MiB) went to:"]
        for w in usage["writeback"][:top]:
            out.append(
                f"{_mib(w['bytes']):>9} {format_share(w['share']):>6}  {w['kind']:<10} "
                f"{one_line(w['path'])}"
            )
    for ep in usage["episodes"]:
        out += [
            "",
            f"Episode {ep['episode_id']} on {label(ep['dev_major'], ep['dev_minor'], names or {})} "
            f"({format_ns(ep['start_ns'])}..{format_ns(ep['end_ns'])}): "
            f"{_mib(ep['bytes'])} MiB in flight",
        ]
        for f in ep["files"][:5]:
            out.append(
                f"{_mib(f['bytes']):>9} {format_share(f['share']):>6}  {f['kind']:<10} "
                f"{one_line(f['path'])}"
            )
    return "\n".join(out)
