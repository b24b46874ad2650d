"""The per-device summary of `blkscope analyze`, as plain-text tables in btt's spirit."""

from __future__ import annotations

from typing import Any

from blkscope.analyze.device_summary import STAT_COLUMNS
from blkscope.units import ns_to_ms


def render_summary(devices: list[dict[str, Any]], warnings: list[str] | None = None) -> str:
    """Plain-text tables in btt's spirit, in milliseconds, with percentiles; the dataset's
    completeness warnings first (a trace missing CPUs or completions misleads every number)."""
    lines = [f"WARNING: {w}" for w in warnings or []]
    if lines:
        lines.append("")
    for d in devices:
        name = f"{d['name']} ({d['dev']})" if d.get("name") else d["dev"]
        lines.append(f"==================== device {name} ====================")
        lines.append(
            f"Q {d['queued']:,}  D {d['dispatches']:,}  C {d['completions']:,}  "
            f"requeues {d['requeues']:,}  merged bios {d['merged_bios']:,}  "
            f"split bios {d['split_bios']:,}  partial bios {d['partial_bios']:,}  "
            f"#Q/#D {d['merge_ratio']}"
        )
        head = ["stage", "N", "min", "avg", "p50", "p90", "p99", "p99.9", "max"]
        lines.append("".join(f"{h:>13}" for h in head) + "   (ms)")
        for stage, s in d["stages"].items():
            cells = [stage, f"{s['n']:,}"] + [f"{ns_to_ms(s[c]):.6f}" for c in STAT_COLUMNS[1:]]
            lines.append("".join(f"{c:>13}" for c in cells))
        depth = "  ".join(
            f"{lv} depth max {v['max']} mean {v['mean']}" for lv, v in d["depth"].items()
        )
        lines.append(depth)
        for op, r in d["ops"].items():
            lines.append(
                f"  {op}: Q {r['queued']:,}  D {r['dispatches']:,}  #Q/#D "
                f"{_num(r['merge_ratio'])}  split {_num(r['split_ratio'])}  requeues "
                f"{r['requeues']:,}  sequential {_num(r['sequential_share'])}"
            )
        lines.append("")
    return "\n".join(lines)


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"
