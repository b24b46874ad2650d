#!/usr/bin/env python3
"""Did each injection produce the signal it was meant to? A sanity check of the captures.

Usage: python bench/attribution/check.py [--root DIR] [--only NAME,...] [--json]

Per injection, from the run's own files (never a blkscope dataset): the prober's latency inside
the window against the rest of the capture; from the raw trace, the prober's own requests
dispatched in the window (D2C, I2D against outside; blk-throttle re-queues a throttled bio from
its kworker, so under throttling few are the prober's), which processes queued IO there, and blk-throttle's
messages. A window whose prober p90 is not 3x the quiet p90 is flagged NO SPIKE; a `device`
window should show D2C up with only the prober queueing; a `throttling` window should hold
`throtl` messages; a `scheduler` window should show I2D up.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from truth import injections, process_names, requests, throttle_messages  # noqa: E402
from where import CAPTURES  # noqa: E402

DEFAULT_ROOT = CAPTURES
SPIKE_RATIO = 3.0


def _q(values: list[int], p: float) -> int | None:
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))]


def _ms(ns: int | None) -> str:
    return "-" if ns is None else f"{ns / 1e6:.1f}"


def prober_pid(run_dir: Path) -> int | None:
    """The prober's pid, from the driver's log ("T0 ...; prober pid N until ...")."""
    for line in (run_dir / "driver.log").read_text().splitlines():
        if " prober pid " in line:
            return int(line.split(" prober pid ")[1].split()[0])
    return None


def check_run(run_dir: Path, slack_ns: int = 500_000_000) -> list[dict]:
    capture = run_dir / "capture"
    inj = injections(run_dir)
    with (capture / "prober.csv").open(newline="") as f:
        probes = [(int(r["mono_ns"]), int(r["latency_us"]) * 1000) for r in csv.DictReader(f)]
    reqs = [r for r in requests(capture) if r.nbytes]  # data requests: flushes take no time here
    prober = prober_pid(run_dir)
    mine = [r for r in reqs if r.pid == prober]  # the victim's own writes
    names = process_names(capture)
    throtl = throttle_messages(capture)

    def inside(t: int) -> bool:
        return any(x.start_ns <= t <= x.end_ns + slack_ns for x in inj)

    quiet_lat = [lat for t, lat in probes if not inside(t)]
    quiet_d2c = [r.c_ns - r.d_ns for r in mine if r.c_ns and r.d_ns and not inside(r.d_ns)]
    quiet_i2d = [r.d_ns - r.i_ns for r in mine if r.d_ns and r.i_ns and not inside(r.d_ns)]
    out = []
    for x in inj:
        lat = [lat for t, lat in probes if x.start_ns <= t <= x.end_ns]
        win = [r for r in mine if r.d_ns and x.start_ns <= r.d_ns <= x.end_ns]
        d2c = [r.c_ns - r.d_ns for r in win if r.c_ns]
        i2d = [r.d_ns - r.i_ns for r in win if r.i_ns]
        queued = Counter(
            names.get(r.pid, str(r.pid)) for r in reqs if x.start_ns <= r.q_ns <= x.end_ns
        )
        p90, quiet_p90, quiet_p99 = _q(lat, 0.9), _q(quiet_lat, 0.9), _q(quiet_lat, 0.99)
        spike = bool(lat and quiet_p99 and max(lat) >= SPIKE_RATIO * quiet_p99)
        out.append({
            "run": run_dir.name, "cause": x.cause, "detail": x.detail,
            "prober_ops": len(lat), "prober_p50_ns": _q(lat, 0.5), "prober_p90_ns": p90,
            "prober_max_ns": max(lat) if lat else None, "quiet_p90_ns": quiet_p90,
            "quiet_p99_ns": quiet_p99,
            "spike": spike,
            "d2c_p50_ns": _q(d2c, 0.5), "d2c_p90_ns": _q(d2c, 0.9),
            "quiet_d2c_p90_ns": _q(quiet_d2c, 0.9),
            "i2d_p50_ns": _q(i2d, 0.5), "i2d_p90_ns": _q(i2d, 0.9),
            "quiet_i2d_p90_ns": _q(quiet_i2d, 0.9),
            "queued_by": dict(queued.most_common(4)),
            "throtl_messages": sum(x.start_ns <= t <= x.end_ns for t, _ in throtl),
        })  # fmt: skip
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    ap.add_argument("--only", help="comma-separated scenario names")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    names = set(args.only.split(",")) if args.only else None
    rows = []
    for run_dir in sorted(args.root.iterdir()):
        if not (run_dir / "injections.csv").exists():
            continue
        if names is None or run_dir.name.rsplit("-", 1)[0] in names:
            rows += check_run(run_dir)
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    for r in rows:
        print(
            f"{r['run']:<24} {r['cause']:<12} prober p50/p90/max {_ms(r['prober_p50_ns'])}/"
            f"{_ms(r['prober_p90_ns'])}/{_ms(r['prober_max_ns'])} ms (quiet p90/p99 "
            f"{_ms(r['quiet_p90_ns'])}/{_ms(r['quiet_p99_ns'])})"
            f"{'' if r['spike'] else ' NO SPIKE'}; D2C p50/p90 "
            f"{_ms(r['d2c_p50_ns'])}/{_ms(r['d2c_p90_ns'])} (quiet p90 "
            f"{_ms(r['quiet_d2c_p90_ns'])}); I2D p50/p90 {_ms(r['i2d_p50_ns'])}/"
            f"{_ms(r['i2d_p90_ns'])} (quiet p90 {_ms(r['quiet_i2d_p90_ns'])}); throtl msgs "
            f"{r['throtl_messages']}; queued by {r['queued_by']}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
