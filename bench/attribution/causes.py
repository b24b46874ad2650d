"""The injections: each does one thing to the test device and returns the rows it logs.

A row is (start_mono_ns, end_mono_ns, cause, detail), taken by the driver around the injection
(CLOCK_MONOTONIC), never inferred from the trace. `cause` is one of CAUSES; `detail` says what
was done and what it did (bytes moved, IOs, how long), in words.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

CAUSES = ("writeback", "journal", "competing_io", "throttling", "scheduler", "device")

Row = tuple[int, int, str, str]


@dataclass
class Context:
    """What every injection needs: the rig (rig.Rig as a dict), the prober's pid, a log."""

    rig: dict
    prober_pid: int
    log: Callable[[str], None]
    counter: list[int]  # numbers the journal scenario's new files

    def next_number(self) -> int:
        self.counter[0] += 1
        return self.counter[0]


def _into(cgroup: str) -> Callable[[], None]:
    """preexec_fn: the child joins a v1 cgroup before it execs."""

    def join() -> None:
        Path(cgroup, "cgroup.procs").write_text(str(os.getpid()))

    return join


def run_in(cmd: list[str], cgroup: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cmd, check=True, capture_output=True, text=True,
        preexec_fn=_into(cgroup) if cgroup else None,
    )  # fmt: skip


def memcg_pending(memcg: str) -> int:
    """Dirty + writeback bytes charged to the dirtier memory cgroup."""
    total = 0
    for line in Path(memcg, "memory.stat").read_text().splitlines():
        name, value = line.split()
        if name in ("dirty", "writeback"):
            total += int(value)
    return total


# A dirtier that allocates blocks also dirties a few metadata pages (bitmaps) charged to its
# cgroup; they wait for the journal checkpoint or the 30 s expiry, not for this writeback.
DRAINED_BYTES = 1 << 20


def wait_drained(memcg: str, timeout_s: float = 30.0) -> tuple[int, bool]:
    """Wait until the dirtiers' pages are clean (but DRAINED_BYTES); (mono ns, drained in time)."""
    deadline = time.monotonic() + timeout_s
    while memcg_pending(memcg) > DRAINED_BYTES:
        if time.monotonic() > deadline:
            return time.monotonic_ns(), False
        time.sleep(0.01)
    return time.monotonic_ns(), True


def _dd_dirty(ctx: Context, path: str, mib: int, notrunc: bool) -> None:
    cmd = ["dd", "if=/dev/zero", f"of={path}", "bs=1M", f"count={mib}", "status=none"]
    if notrunc:
        cmd.append("conv=notrunc")
    run_in(cmd, ctx.rig["dirtier_memcg"])


def _sysctl(name: str) -> str:
    return Path("/proc/sys/vm", name).read_text().strip()


def flusher(ctx: Context, mib: int, mode: str) -> list[Row]:
    """Dirty mib MiB (blocks already allocated, never fsynced); the flusher writes them."""
    start = time.monotonic_ns()
    _dd_dirty(ctx, ctx.rig["dirty_file"], mib, notrunc=True)
    dirtied = time.monotonic_ns()
    end, drained = wait_drained(ctx.rig["dirtier_memcg"])
    knobs = (f"vm.dirty_expire_centisecs={_sysctl('dirty_expire_centisecs')}, "
             f"vm.dirty_writeback_centisecs={_sysctl('dirty_writeback_centisecs')}")  # fmt: skip
    if mode == "background":
        knobs = f"vm.dirty_background_bytes={_sysctl('dirty_background_bytes')}, {knobs}"
    detail = (
        f"{mode} writeback: dd wrote {mib} MiB buffered into dirty.bin (allocated blocks, never "
        f"fsynced) in {(dirtied - start) / 1e9:.2f} s; the flusher wrote it ({knobs}); "
        f"{'drained' if drained else 'NOT drained'} {(end - dirtied) / 1e9:.2f} s later"
    )
    return [(start, end, "writeback", detail)]


def explicit_sync(ctx: Context, mib: int, delay_s: float) -> list[Row]:
    """Dirty mib MiB, wait delay_s (far less than the 30 s expiry), then run `sync`."""
    start = time.monotonic_ns()
    _dd_dirty(ctx, ctx.rig["dirty_file"], mib, notrunc=True)
    time.sleep(delay_s)
    sync_start = time.monotonic_ns()
    run_in(["sync"])
    sync_end = time.monotonic_ns()
    end, drained = wait_drained(ctx.rig["dirtier_memcg"])
    detail = (
        f"sync writeback: dd wrote {mib} MiB buffered into dirty.bin, then `sync` after "
        f"{delay_s:.2f} s took {(sync_end - sync_start) / 1e9:.2f} s"
        f"{'' if drained else '; NOT drained'}"
    )
    return [(start, max(end, sync_end), "writeback", detail)]


FSYNC_BURST = """
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
buf = b"j" * 4096
t0 = time.monotonic_ns()
for _ in range(int(sys.argv[2])):
    os.write(fd, buf)
    os.fsync(fd)
print(time.monotonic_ns() - t0)
"""


def journal(ctx: Context, mib: int, fsyncs: int, delay_s: float) -> list[Row]:
    """data=ordered + nodelalloc: dirty mib MiB in a new file (blocks allocated at write, so the
    inode joins the running transaction's ordered data), then another process's burst of small
    appends + fsync forces commits, and jbd2 writes that data before the commit record."""
    n = ctx.next_number()
    path = Path(ctx.rig["mount"], f"journal-{n}.bin")
    start = time.monotonic_ns()
    _dd_dirty(ctx, str(path), mib, notrunc=False)
    time.sleep(delay_s)
    burst = run_in(["python3", "-c", FSYNC_BURST, str(Path(ctx.rig["mount"], "fsync.log")),
                    str(fsyncs)])  # fmt: skip
    burst_ns = int(burst.stdout.strip())
    end, drained = wait_drained(ctx.rig["dirtier_memcg"])
    detail = (
        f"jbd2 ordered data: dd wrote {mib} MiB buffered into new file {path.name} "
        f"(nodelalloc: allocated at write), then after {delay_s:.2f} s python3 did {fsyncs} "
        f"x (4 KiB append + fsync) in {burst_ns / 1e9:.2f} s"
        f"{'' if drained else '; NOT drained'}"
    )
    return [(start, end, "journal", detail)]


def _fio_totals(out: str) -> tuple[int, int]:
    job = json.loads(out[out.index("{") :])["jobs"][0]
    ios = job["read"]["total_ios"] + job["write"]["total_ios"]
    return ios, job["read"]["io_bytes"] + job["write"]["io_bytes"]


def _cgroup(ctx: Context, which: str | None) -> str | None:
    return ctx.rig["prober_cgroup"] if which == "prober" else None


def fio(ctx: Context, rw: str, bs: str, iodepth: int, seconds: float,
        cgroup: str | None = None) -> list[Row]:  # fmt: skip
    """An O_DIRECT fio burst from another process on the prober's device (cgroup "prober": in
    the prober's blkio cgroup, sharing its throttle)."""
    target = ctx.rig["read_file"] if "read" in rw else ctx.rig["write_file"]
    cmd = ["fio", "--name=burst", f"--filename={target}", f"--rw={rw}", f"--bs={bs}",
           f"--iodepth={iodepth}", "--ioengine=libaio", "--direct=1", "--time_based",
           f"--runtime={seconds}s", "--output-format=json"]  # fmt: skip
    start = time.monotonic_ns()
    done = run_in(cmd, _cgroup(ctx, cgroup))
    end = time.monotonic_ns()
    ios, nbytes = _fio_totals(done.stdout)
    detail = (f"fio {rw} O_DIRECT {bs} qd{iodepth} libaio for {seconds:.1f} s: {ios} IOs, "
              f"{nbytes / 2**20:.1f} MiB{_where(cgroup)}")  # fmt: skip
    return [(start, end, "competing_io", detail)]


def _where(cgroup: str | None) -> str:
    return ", in the prober's blkio cgroup" if cgroup == "prober" else ""


def dd(ctx: Context, direction: str, bs_kib: int, seconds: float,
       cgroup: str | None = None) -> list[Row]:  # fmt: skip
    """An O_DIRECT dd burst (sequential, one IO at a time), stopped after `seconds`."""
    if direction == "read":
        io = [f"if={ctx.rig['read_file']}", "of=/dev/null", "iflag=direct"]
    else:
        io = ["if=/dev/zero", f"of={ctx.rig['write_file']}", "oflag=direct", "conv=notrunc"]
    count = Path(io[0 if direction == "read" else 1][3:]).stat().st_size // (bs_kib << 10)
    cmd = ["timeout", "-s", "INT", str(seconds), "dd", *io, f"bs={bs_kib}K", f"count={count}"]
    start = time.monotonic_ns()
    target = _cgroup(ctx, cgroup)
    done = subprocess.run(cmd, capture_output=True, text=True, check=False,
                          preexec_fn=_into(target) if target else None)  # fmt: skip
    end = time.monotonic_ns()
    m = re.search(r"^(\d+) bytes", done.stderr, re.M)
    nbytes = int(m.group(1)) if m else -1
    detail = (f"dd {direction} O_DIRECT {bs_kib} KiB sequential, qd1, for up to {seconds:.1f} s:"
              f" {nbytes / 2**20:.1f} MiB{_where(cgroup)}")  # fmt: skip
    return [(start, end, "competing_io", detail)]


def throttle(ctx: Context, mode: str, value: int, seconds: float) -> list[Row]:
    """blk-throttle on the prober's own v1 blkio cgroup, on the traced device, for a window."""
    cgroup = Path(ctx.rig["prober_cgroup"])
    dev = ctx.rig["upper_majmin"]
    knob = cgroup / f"blkio.throttle.write_{mode}_device"
    (cgroup / "cgroup.procs").write_text(str(ctx.prober_pid))
    start = time.monotonic_ns()
    knob.write_text(f"{dev} {value}")
    try:
        time.sleep(seconds)
    finally:
        knob.write_text(f"{dev} 0")
        end = time.monotonic_ns()
        (cgroup.parent / "cgroup.procs").write_text(str(ctx.prober_pid))
    unit = "IOPS" if mode == "iops" else "bytes/s"
    detail = (f"blkio.throttle.write_{mode}_device {dev} {value} ({value} {unit}) on the "
              f"prober's v1 blkio cgroup for {seconds:.1f} s")  # fmt: skip
    return [(start, end, "throttling", detail)]


def scheduler(ctx: Context, seconds: float, rw: str, prober_weight: int,
              competitor_weight: int) -> list[Row]:  # fmt: skip
    """bfq group scheduling (the seeds' "bfq concurrent sync IO"): the prober's cgroup gets a low
    bfq weight, a sync competitor at qd1 (psync, O_DIRECT 4 KiB) a high one in its own cgroup.
    bfq serves one group at a time and idles for it, so the prober's writes wait inside the
    scheduler (I2D) while the device holds one 4 KiB IO at a time."""
    prober_cg, comp_cg = Path(ctx.rig["prober_cgroup"]), Path(ctx.rig["competitor_cgroup"])
    target = ctx.rig["read_file"] if "read" in rw else ctx.rig["write_file"]
    iosched = Path(f"/sys/block/{ctx.rig['upper']}/queue/iosched")
    low_latency = (iosched / "low_latency").read_text().strip()
    (prober_cg / "blkio.bfq.weight").write_text(str(prober_weight))
    (comp_cg / "blkio.bfq.weight").write_text(str(competitor_weight))
    (prober_cg / "cgroup.procs").write_text(str(ctx.prober_pid))
    cmd = ["fio", "--name=competitor", f"--filename={target}", f"--rw={rw}", "--bs=4k",
           "--ioengine=psync", "--direct=1", "--time_based", f"--runtime={seconds}s",
           "--output-format=json"]  # fmt: skip
    start = time.monotonic_ns()
    try:
        done = run_in(cmd, str(comp_cg))
    finally:
        end = time.monotonic_ns()
        (prober_cg.parent / "cgroup.procs").write_text(str(ctx.prober_pid))
        for cg in (prober_cg, comp_cg):
            (cg / "blkio.bfq.weight").write_text("100")
    ios, nbytes = _fio_totals(done.stdout)
    detail = (
        f"bfq group weights: prober's cgroup {prober_weight}, competitor's {competitor_weight} "
        f"(low_latency={low_latency}); competitor: fio {rw} O_DIRECT 4k psync (qd1) for "
        f"{seconds:.1f} s in its own cgroup: {ios} IOs, {nbytes / 2**20:.1f} MiB"
    )
    return [(start, end, "scheduler", detail)]


def device(ctx: Context, iops: int, bps: int, seconds: float) -> list[Row]:
    """The disk under the traced device slows down (its throttle drops) for a window, while only
    the prober does IO on the traced device: D2C rises with a light queue."""
    from rig import DeviceSpeed, set_speed

    base = DeviceSpeed(**ctx.rig["spec"]["speed"])
    lower = ctx.rig["lower_majmin"]
    start = time.monotonic_ns()
    set_speed(lower, DeviceSpeed(iops=iops, bps=bps))
    try:
        time.sleep(seconds)
    finally:
        set_speed(lower, base)
        end = time.monotonic_ns()
    detail = (f"the disk under the traced device ({lower}, blk-throttle) slowed from "
              f"{base.iops} to {iops} IOPS and {base.bps >> 10} to {bps >> 10} KiB/s for "
              f"{seconds:.1f} s; only the prober did IO")  # fmt: skip
    return [(start, end, "device", detail)]


INJECTIONS: dict[str, Callable[..., list[Row]]] = {
    "flusher": flusher,
    "sync": explicit_sync,
    "journal": journal,
    "fio": fio,
    "dd": dd,
    "throttle": throttle,
    "scheduler": scheduler,
    "device": device,
}


def jitter(rng: random.Random, low: float, high: float) -> float:
    return round(rng.uniform(low, high), 2)
