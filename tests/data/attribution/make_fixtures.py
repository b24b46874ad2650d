#!/usr/bin/env python3
"""Cut the attribution fixtures from the runs of bench/attribution/run.py (dev tool).

Usage: python tests/data/attribution/make_fixtures.py [--root /work/scratch/attribution]

Each fixture is a few seconds around one injection (the control: a quiet stretch) of one run,
in the layout of a run: NAME/capture/ (a capture folder blkscope ingests) beside NAME's truth
(injections.csv, kernel_truth.txt, sidelog.csv) and NAME/fixture.json (where it was cut from).
The per-CPU binaries keep every process-name and timestamp note plus the records in the window
(as tests/data/formats/cut_blktrace.py cuts them); blkparse.txt is rendered again from them by
the real blkparse; both are zstd-compressed, as in ../shared/captures. The side logs keep their lines in the window (prober.csv, writeback_ns.txt,
writeback_trace.txt by monotonic time; meminfo.txt by epoch through clock.txt). iostat,
vmstat, proc_vmstat and the file map are left out (per-second totals of the whole run).
injections.csv keeps the rows that overlap the window, times unchanged.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import shutil
import struct
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
REC = struct.Struct("<IIQQIIIIIHH")
TC_NOTIFY = 1 << 10
TN_MESSAGE = 2

# name: (run, injection index (None: a quiet stretch), seconds before, seconds after)
# The window runs from the injection's start minus `before` to its end plus `after`; for the
# control, from `before` to `after` seconds after the trace's first record.
FIXTURES: dict[str, tuple[str, int | None, float, float]] = {
    "writeback-periodic": ("writeback-periodic-2", 1, 5.0, 4.0),
    "writeback-background": ("writeback-background-3", 1, 5.0, 4.0),
    "sync": ("sync-2", 0, 5.0, 4.0),
    "journal": ("journal-1", 0, 5.0, 4.0),
    "competing-read": ("competing-read-2", 0, 5.0, 4.0),
    "competing-write": ("competing-write-1", 0, 5.0, 4.0),
    "throttling": ("throttling-2", 0, 5.0, 4.0),
    "scheduler": ("scheduler-1", 1, 4.0, 3.0),
    "device": ("device-2", 2, 5.0, 4.0),
    "mix-writeback-read": ("mix-writeback-read-1", 0, 5.0, 4.0),
    "control": ("control-2", None, 12.0, 18.0),
}


def cut_binaries(src: Path, dst: Path, lo: int, hi: int) -> int:
    """Copy every note but messages, and the records in [lo, hi); the records kept."""
    kept_total = 0
    for path in sorted(src.glob("trace.blktrace.*")):
        data, at, kept = path.read_bytes(), 0, []
        while at + REC.size <= len(data):
            f = REC.unpack_from(data, at)
            end = at + REC.size + f[10]
            note = (f[5] >> 16) & TC_NOTIFY and (f[5] & 0xFF) != TN_MESSAGE
            if note or lo <= f[2] < hi:
                kept.append(data[at:end])
            at = end
        (dst / path.name).write_bytes(b"".join(kept))
        kept_total += len(kept)
    return kept_total


Keep = Callable[[str], "bool | None"]  # True/False: keep the line or not; None: a header


def cut_lines(src: Path, dst: Path, keep: Keep) -> None:
    """Copy src's header line(s) (keep returns None) and the lines keep accepts."""
    if not src.exists():
        return
    out = []
    for line in src.read_text().splitlines(keepends=True):
        verdict = keep(line)
        if verdict is None or verdict:
            out.append(line)
    dst.write_text("".join(out))


def _mono_first(lo: int, hi: int) -> Keep:
    def keep(line: str) -> bool | None:
        head = re.split(r"[\s,]", line.strip(), maxsplit=1)[0]
        return lo <= int(head) < hi if head.isdigit() else None

    return keep


def _kernel_truth(lo: int, hi: int) -> Keep:
    """As _mono_first, but bpftrace's `MONO ready` line stays: it says the probes were on."""
    in_window = _mono_first(lo, hi)
    return lambda line: None if line.rstrip().endswith(" ready") else in_window(line)


def _ftrace_seconds(lo: int, hi: int) -> Keep:
    stamp = re.compile(r"\s(\d+\.\d{6}):\s")

    def keep(line: str) -> bool | None:
        m = stamp.search(line)
        return lo <= round(float(m.group(1)) * 1e9) < hi if m else None

    return keep


def _epoch_first(lo_wall: int, hi_wall: int) -> Keep:
    def keep(line: str) -> bool | None:
        head = line.split(" ", 1)[0]
        try:
            return lo_wall <= float(head) * 1e9 < hi_wall
        except ValueError:
            return None

    return keep


def make(name: str, run_dir: Path, index: int | None, before: float, after: float) -> dict:
    src = run_dir / "capture"
    with (run_dir / "injections.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    zero = min(REC.unpack_from(p.read_bytes(), 0)[2] for p in src.glob("trace.blktrace.*"))
    if index is None:
        lo, hi = zero + int(before * 1e9), zero + int(after * 1e9)
    else:
        row = rows[index]
        lo = int(row["start_mono_ns"]) - int(before * 1e9)
        hi = int(row["end_mono_ns"]) + int(after * 1e9)
    out = HERE / name
    if out.exists():
        shutil.rmtree(out)
    cap = out / "capture"
    cap.mkdir(parents=True)
    records = cut_binaries(src, cap, lo, hi)
    with tempfile.TemporaryDirectory() as tmp:
        for p in cap.glob("trace.blktrace.*"):
            shutil.copy(p, Path(tmp) / p.name)
        subprocess.run(["blkparse", "-i", "trace", "-o", str(cap / "blkparse.txt")], cwd=tmp,
                       check=True, capture_output=True)  # fmt: skip
    for big in [cap / "blkparse.txt", *cap.glob("trace.blktrace.*")]:  # as the shared captures
        subprocess.run(["zstd", "-q", "-19", "--rm", str(big)], check=True)
    for keep in ("capture.json", "clock.txt", "cmdlines.txt"):
        shutil.copy(src / keep, cap / keep)
    mono, wall = (int(x) for x in (src / "clock.txt").read_text().split())
    cut_lines(src / "prober.csv", cap / "prober.csv", _mono_first(lo, hi))
    cut_lines(src / "writeback_ns.txt", cap / "writeback_ns.txt", _mono_first(lo, hi))
    cut_lines(src / "writeback_trace.txt", cap / "writeback_trace.txt", _ftrace_seconds(lo, hi))
    cut_lines(src / "meminfo.txt", cap / "meminfo.txt",
              _epoch_first(lo - mono + wall, hi - mono + wall))  # fmt: skip
    cut_lines(run_dir / "kernel_truth.txt", out / "kernel_truth.txt", _kernel_truth(lo, hi))
    cut_lines(run_dir / "sidelog.csv", out / "sidelog.csv", _mono_first(lo, hi))
    with (out / "injections.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["start_mono_ns", "end_mono_ns", "cause", "detail"])
        for r in rows:
            if int(r["start_mono_ns"]) < hi and lo < int(r["end_mono_ns"]):
                w.writerow([r["start_mono_ns"], r["end_mono_ns"], r["cause"], r["detail"]])
    doc = {
        "source_run": run_dir.name,
        "injection_index": index,
        "from_mono_ns": lo,
        "to_mono_ns": hi,
        "records": records,
        "scenario": json.loads((run_dir / "scenario.json").read_text())["rig_spec"],
    }
    (out / "fixture.json").write_text(json.dumps(doc, indent=1) + "\n")
    return doc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", type=Path, default=Path("/work/scratch/attribution"))
    ap.add_argument("--only", help="comma-separated fixture names")
    args = ap.parse_args()
    for name, (run, index, before, after) in FIXTURES.items():
        if args.only and name not in args.only.split(","):
            continue
        doc = make(name, args.root / run, index, before, after)
        size = sum(p.stat().st_size for p in (HERE / name).rglob("*") if p.is_file())
        print(f"{name}: {run}, {(doc['to_mono_ns'] - doc['from_mono_ns']) / 1e9:.1f} s, "
              f"{doc['records']} records, {size / 1024:.0f} KiB")  # fmt: skip


if __name__ == "__main__":
    main()
