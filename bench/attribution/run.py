#!/usr/bin/env python3
"""Make the attribution captures: one per (scenario, seed), each with its ground truth beside it.

Usage (root): python bench/attribution/run.py [--only NAME,...] [--seeds 1,2] [--out DIR]
                  [--force] [--blkscope PATH]
              python bench/attribution/run.py --restore     (undo what a killed run left)
              python bench/attribution/run.py --list

For each run, in OUT/NAME-SEED/ (default OUT: where.py, $BLKSCOPE_ATTRIBUTION_ROOT or ~/.cache/blkscope-attribution):
  capture/          what `blkscope capture --device UPPER` wrote, plus the prober's prober.csv
  injections.csv    start_mono_ns,end_mono_ns,cause,detail: what the driver did, when
  sidelog.csv       meminfo, the dirtiers' memory cgroup, diskstats, jbd2 commits, every 100 ms
  kernel_truth.txt  bpftrace: flusher work items and pages written, jbd2 commits (the device)
  scenario.json     the scenario, seed, rig (devices, settings) and the plan the driver ran
  driver.log        what the driver did, with CLOCK_MONOTONIC stamps
The truth files sit beside the capture folder, not in it: `blkscope ingest` reads every CSV in
a capture folder as a user series. An existing run (injections.csv present) is kept unless
--force. The whole run holds /tmp/blkscope-tracefs.lock (tracefs and the vm.dirty_* sysctls are
global) and journals every change it makes (see undo.py).
"""

from __future__ import annotations

import argparse
import fcntl
import json
import shutil
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import rig as rig_mod  # noqa: E402
from scenarios import SCENARIOS, SEEDS, plan  # noqa: E402
from undo import JOURNAL, Undo, replay  # noqa: E402
from where import CAPTURES  # noqa: E402

DEFAULT_OUT = CAPTURES
TRACEFS_LOCK = Path("/tmp/blkscope-tracefs.lock")


def default_blkscope() -> str:
    beside = Path(sys.executable).with_name("blkscope")
    return str(beside) if beside.exists() else "blkscope"


def record(name: str, seed: int, out: Path, blkscope: str) -> dict:
    """Build the rig, capture the driver's run, tear the rig down; the run's scenario.json."""
    run_dir = out / f"{name}-{seed}"
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    p = plan(name, seed)
    undo = Undo(JOURNAL)
    info: dict = {"scenario": name, "seed": seed, "rig_spec": asdict(p.rig)}
    try:
        rig = rig_mod.build(p.rig, undo)
        info["rig"] = rig.as_dict()
        doc = {
            "truth_dir": str(run_dir),
            "capture_dir": str(run_dir / "capture"),
            "duration_s": p.duration_s,
            "min_gap_s": p.min_gap_s,
            "rig": rig.as_dict(),
            "lanes": p.lanes,
        }
        info["plan"] = doc
        (run_dir / "plan.json").write_text(json.dumps(doc, indent=1))
        cmd = [blkscope, "capture", "--device", rig.upper, "--duration",
               str(int(p.duration_s + 60)), "-o", str(run_dir / "capture"), "--",
               sys.executable, str(HERE / "driver.py"), str(run_dir / "plan.json")]  # fmt: skip
        started = time.monotonic()
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        info["capture"] = {
            "command": cmd,
            "exit": done.returncode,
            "seconds": round(time.monotonic() - started, 1),
            "stdout": done.stdout[-2000:],
            "stderr": done.stderr[-4000:],
        }
    finally:
        info["restore_problems"] = undo.unwind()
    (run_dir / "scenario.json").write_text(json.dumps(info, indent=1))
    return info


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--only", help="comma-separated scenario names")
    ap.add_argument("--seeds", help="comma-separated seeds (default: each scenario's own)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--force", action="store_true", help="record runs that exist again")
    ap.add_argument("--blkscope", default=default_blkscope())
    ap.add_argument("--restore", action="store_true")
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args(argv)
    if args.restore:
        problems = replay(JOURNAL)
        print("\n".join(problems) or "nothing left to restore")
        return 1 if problems else 0
    names = args.only.split(",") if args.only else list(SCENARIOS)
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        ap.error(f"unknown scenario(s) {unknown}; known: {', '.join(SCENARIOS)}")
    runs = [(n, s) for n in names
            for s in ([int(x) for x in args.seeds.split(",")] if args.seeds else SEEDS[n])]  # fmt: skip
    if args.list:
        for n, s in runs:
            print(f"{n}-{s}: {json.dumps(plan(n, s).lanes)}")
        return 0
    failed = 0
    for n, s in runs:
        run_dir = args.out / f"{n}-{s}"
        if (run_dir / "injections.csv").exists() and not args.force:
            print(f"{n}-{s}: kept ({run_dir})")
            continue
        with TRACEFS_LOCK.open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            info = record(n, s, args.out, args.blkscope)
        cap = info.get("capture", {})
        ok = cap.get("exit") == 0 and (run_dir / "injections.csv").exists()
        failed += not ok
        print(f"{n}-{s}: {'ok' if ok else 'FAILED'} in {cap.get('seconds')} s"
              f"{'' if ok else ': ' + cap.get('stderr', '')[-500:]}"
              f"{'; restore problems: ' + str(info['restore_problems']) if info['restore_problems'] else ''}",
              flush=True)  # fmt: skip
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
