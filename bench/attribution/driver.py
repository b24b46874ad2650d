"""The command `blkscope capture` records: prober, side logs and the injections of one plan.

Usage: driver.py PLAN_JSON    (root; run.py writes the plan and starts `blkscope capture -- ...`)

Starts the kernel-truth bpftrace (kernel_truth.txt) and the side log (sidelog.csv) beside the
capture, then the prober under `chrt -f 50` (prober.csv in the capture folder), then runs each
lane of injections in its own thread: injection k of a lane starts at T0 + at_s, or when the one
before it ended plus min_gap_s, whichever is later (a writeback lasts until its pages drain).
Writes injections.csv (`start_mono_ns,end_mono_ns,cause,detail`) beside the capture at the end.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from causes import INJECTIONS, Context, Row  # noqa: E402


def dev_t(majmin: str) -> int:
    """The kernel's internal dev_t (major << 20 | minor), as the jbd2 tracepoints print it."""
    major, minor = (int(x) for x in majmin.split(":"))
    return major << 20 | minor


def start_kernel_truth(rig: dict, out: Path, log) -> subprocess.Popen | None:
    proc = subprocess.Popen(
        ["bpftrace", str(HERE / "kernel_truth.bt"), rig["upper_majmin"],
         str(dev_t(rig["upper_majmin"]))],
        stdout=out.open("w"), stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if "ready" in out.read_text():
            return proc
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    log(f"kernel truth (bpftrace) did not start: exit {proc.poll()}")
    proc.kill()
    return None


def main(plan_path: str) -> None:
    plan = json.loads(Path(plan_path).read_text())
    rig, truth, capture = plan["rig"], Path(plan["truth_dir"]), Path(plan["capture_dir"])
    log_file = (truth / "driver.log").open("a", buffering=1)
    log_lock = threading.Lock()

    def log(text: str) -> None:
        with log_lock:
            log_file.write(f"{time.monotonic_ns()} {text}\n")

    bpf = start_kernel_truth(rig, truth / "kernel_truth.txt", log)
    side = subprocess.Popen([sys.executable, str(HERE / "sidelog.py"), str(truth / "sidelog.csv"),
                             rig["upper"], rig["lower"], rig["dirtier_memcg"]])  # fmt: skip
    t0 = time.monotonic_ns()
    stop_ns = t0 + int(plan["duration_s"] * 1e9)
    prober = subprocess.Popen(["chrt", "-f", "50", sys.executable, str(HERE / "probe.py"),
                               str(Path(rig["mount"], "probe")), str(capture / "prober.csv"),
                               str(stop_ns)])  # fmt: skip
    log(f"T0 {t0}; prober pid {prober.pid} until {stop_ns}")
    ctx = Context(rig=rig, prober_pid=prober.pid, log=log, counter=[0])
    rows: list[Row] = []
    errors: list[str] = []

    def lane(items: list[dict]) -> None:
        ready_ns = t0
        for item in items:
            at = max(t0 + int(item["at_s"] * 1e9), ready_ns)
            time.sleep(max(0.0, (at - time.monotonic_ns()) / 1e9))
            log(f"start {item['kind']} {item['params']}")
            try:
                got = INJECTIONS[item["kind"]](ctx, **item["params"])
            except Exception as exc:  # logged and reported; the capture goes on
                errors.append(f"{item['kind']}: {exc!r}")
                log(f"FAILED {item['kind']}: {exc!r}")
                continue
            for row in got:
                log(f"row {row}")
            with log_lock:
                rows.extend(got)
            ready_ns = time.monotonic_ns() + int(plan.get("min_gap_s", 0) * 1e9)

    threads = [threading.Thread(target=lane, args=(items,)) for items in plan["lanes"]]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    prober.wait()
    side.send_signal(signal.SIGTERM)
    side.wait()
    if bpf is not None:
        bpf.send_signal(signal.SIGINT)
        bpf.wait()
    tmp = truth / "injections.csv.tmp"
    with tmp.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["start_mono_ns", "end_mono_ns", "cause", "detail"])
        w.writerows(sorted(rows))
    os.replace(tmp, truth / "injections.csv")
    log(f"done: {len(rows)} injections, {len(errors)} failed")
    if errors:
        (truth / "driver_errors.txt").write_text("\n".join(errors) + "\n")
        raise SystemExit(1)


if __name__ == "__main__":
    main(sys.argv[1])
