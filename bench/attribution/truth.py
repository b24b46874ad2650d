"""Read one run's ground truth: injections.csv, kernel_truth.txt, sidelog.csv, the raw trace.

Nothing here reads a blkscope dataset: the truth is what the driver logged and what the kernel
reported to our own probes, so the scorer can judge blkscope against it.
"""

from __future__ import annotations

import csv
import itertools
import re
import struct
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

# A jbd2 commit counts as journal activity when it logged at least this many blocks, or when
# it wrote ordered data (jbd2_submit_inode_data). The periodic 5 s commit of an idle ext4 here
# logs 3 blocks: that alone is not a cause of anything.
JOURNAL_MIN_BLOCKS = 32


@dataclass(frozen=True)
class Injection:
    start_ns: int
    end_ns: int
    cause: str
    detail: str


@dataclass(frozen=True)
class Interval:
    """Something the kernel did on the traced device, [start_ns, end_ns], and how much."""

    start_ns: int
    end_ns: int
    what: str  # "writeback" or "journal"
    amount: int  # pages written, or blocks logged (+ ordered-data inodes)
    note: str


def injections(run_dir: Path) -> list[Injection]:
    with (run_dir / "injections.csv").open(newline="") as f:
        return [
            Injection(int(r["start_mono_ns"]), int(r["end_mono_ns"]), r["cause"], r["detail"])
            for r in csv.DictReader(f)
        ]


_LINE = re.compile(r"^(\d+) (\w+)(.*)$")
_FIELD = re.compile(r"(\w+)=(\S+)")


def kernel_truth(run_dir: Path) -> list[Interval] | None:
    """Flusher work items that wrote pages and jbd2 commits that mattered; None if not recorded."""
    path = run_dir / "kernel_truth.txt"
    if not path.exists() or "ready" not in path.read_text():
        return None
    out: list[Interval] = []
    commits: dict[str, dict] = {}
    data_inodes: list[int] = []  # times of ordered-data submissions
    for line in path.read_text().splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        ns, event, rest = int(m.group(1)), m.group(2), dict(_FIELD.findall(m.group(3)))
        if event == "wb_written" and int(rest["wrote"]) > 0:
            began = int(rest["began_ns"]) or ns
            note = f"{rest['reason']} writeback by {rest['comm']}: {rest['wrote']} pages"
            out.append(Interval(began, ns, "writeback", int(rest["wrote"]), note))
        elif event == "jbd2_start":
            commits[rest["tid"]] = {"start": ns, "comm": rest.get("comm", "")}
        elif event == "jbd2_stats":
            commits.setdefault(rest["tid"], {})["blocks"] = int(rest["blocks_logged"])
        elif event == "jbd2_end":
            commits.setdefault(rest["tid"], {})["end"] = ns
        elif event == "jbd2_data":
            data_inodes.append(ns)
    for tid, c in commits.items():
        if "start" not in c or "end" not in c:
            continue
        data = sum(c["start"] <= t <= c["end"] for t in data_inodes)
        blocks = c.get("blocks", 0)
        if blocks >= JOURNAL_MIN_BLOCKS or data:
            note = f"jbd2 commit {tid}: {blocks} blocks logged, ordered data of {data} inode(s)"
            out.append(Interval(c["start"], c["end"], "journal", blocks, note))
    return sorted(out, key=lambda i: i.start_ns)


def sidelog_writeback(run_dir: Path) -> list[Interval]:
    """Fallback when bpftrace was not recorded: stretches where the dirtiers' pages were under
    writeback (memory cgroup), as writeback intervals."""
    path = run_dir / "sidelog.csv"
    if not path.exists():
        return []
    out, begin = [], None
    with path.open(newline="") as f:
        for r in csv.DictReader(f):
            ns, busy = int(r["mono_ns"]), int(r["memcg_writeback_bytes"]) > 0
            if busy and begin is None:
                begin = ns
            elif not busy and begin is not None:
                out.append(Interval(begin, ns, "writeback", 0, "dirtier pages under writeback"))
                begin = None
    return out


_HEADER = struct.Struct("<IIQQIIIIIHH")  # struct blk_io_trace, 48 bytes
TC_WRITE, TC_NOTIFY = 1 << 1, 1 << 10  # category bits (action >> 16)
QUEUE, ISSUE_INSERT, DISPATCH, COMPLETE = 1, 12, 7, 8  # action codes (action & 0xff)


# A sample of LOWER's diskstats (~100 ms) in which it was busy this long while serving no more
# IOs than its median sample: the disk under the traced device got slower, not busier.
SLOW_LOWER_BUSY_MS = 8


def lower_device_slow(run_dir: Path) -> list[Interval]:
    """Stretches where LOWER (the disk under the traced device, which the trace does not see)
    got slower, not busier, by its own diskstats in sidelog.csv: they support `device`. The
    rig's LOWER is a loop device whose worker shares the machine's CPUs, so contention from
    outside the rig slows it with nothing injected."""
    path = run_dir / "sidelog.csv"
    if not path.exists():
        return []
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    steps = []
    for a, b in itertools.pairwise(rows):
        ios = sum(int(b[k]) - int(a[k]) for k in ("lower_reads", "lower_writes"))
        busy = int(b["lower_busy_ms"]) - int(a["lower_busy_ms"])
        steps.append((int(a["mono_ns"]), int(b["mono_ns"]), ios, busy))
    if not steps:
        return []
    median = sorted(s[2] for s in steps)[len(steps) // 2]
    return [
        Interval(t0, t1, "device", busy, f"LOWER busy {busy} ms for {ios} IOs")
        for t0, t1, ios, busy in steps
        if busy >= SLOW_LOWER_BUSY_MS and ios <= median
    ]


class Record(NamedTuple):
    time_ns: int
    sector: int
    nbytes: int
    action: int
    pid: int
    payload: bytes


def trace_records(capture: Path) -> Iterator[Record]:
    """Every record of the per-CPU blktrace files (time is CLOCK_MONOTONIC ns)."""
    for path in sorted(capture.glob("*.blktrace.*")):
        data = path.read_bytes()
        if path.suffix == ".zst":  # the cut fixtures keep them compressed
            data = subprocess.run(["zstd", "-dcq", str(path)], check=True,
                                  capture_output=True).stdout  # fmt: skip
        at = 0
        while at + 48 <= len(data):
            (_magic, _seq, time_ns, sector, nbytes, action, pid, _dev, _cpu, _err,
             pdu_len) = _HEADER.unpack_from(data, at)  # fmt: skip
            yield Record(time_ns, sector, nbytes, action, pid, data[at + 48 : at + 48 + pdu_len])
            at += 48 + pdu_len


@dataclass
class Request:
    """One request's life by its sector (a sanity check, not blkscope's reconstruction: bios
    merged into another request are left out)."""

    pid: int  # who queued it
    write: bool
    nbytes: int  # 0 for a flush
    q_ns: int
    i_ns: int | None = None
    d_ns: int | None = None
    c_ns: int | None = None


def requests(capture: Path) -> list[Request]:
    open_by_sector: dict[int, Request] = {}
    done: list[Request] = []
    for r in sorted(trace_records(capture)):
        if (r.action >> 16) & TC_NOTIFY:
            continue
        code = r.action & 0xFF
        if code == QUEUE:
            write = bool((r.action >> 16) & TC_WRITE)
            open_by_sector[r.sector] = Request(r.pid, write, r.nbytes, r.time_ns)
        elif r.sector in open_by_sector:
            req = open_by_sector[r.sector]
            if code == ISSUE_INSERT and req.i_ns is None:
                req.i_ns = r.time_ns
            elif code == DISPATCH and req.d_ns is None:
                req.d_ns = r.time_ns
            elif code == COMPLETE and req.d_ns is not None:
                req.c_ns = r.time_ns
                done.append(open_by_sector.pop(r.sector))
    return done


def process_names(capture: Path) -> dict[int, str]:
    """pid -> comm from the capture's cmdlines.txt (tracefs saved_cmdlines)."""
    names = {}
    path = capture / "cmdlines.txt"
    if path.exists():
        for line in path.read_text().splitlines():
            pid, _, comm = line.strip().partition(" ")
            if pid.isdigit():
                names[int(pid)] = comm
    return names


def trace_zero_ns(capture: Path) -> int:
    """CLOCK_MONOTONIC of the trace's first event (notes left out: a cut trace keeps its process
    notes, stamped at the capture's start): the zero of blkscope's trace ns."""
    return min(r.time_ns for r in trace_records(capture) if not (r.action >> 16) & TC_NOTIFY)


def throttle_messages(capture: Path) -> list[tuple[int, str]]:
    """blk-throttle's trace messages (`throtl ...`), with their monotonic time."""
    out = []
    for r in trace_records(capture):
        at = r.payload.find(b"throtl")
        if at >= 0:
            out.append((r.time_ns, r.payload[at:].split(b"\0")[0].decode(errors="replace")))
    return out
