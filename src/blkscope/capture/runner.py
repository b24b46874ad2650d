"""Run one capture: set up, record until duration/command/size/signal, always restore tracefs."""

from __future__ import annotations

import atexit
import datetime as dt
import json
import math
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from blkscope.capture import host
from blkscope.capture.blkbin import convert, copy_cmdlines, proc_comm, read_cmdlines
from blkscope.capture.blktrace_native import BlktraceProcess
from blkscope.capture.ftrace_blk import FtraceBlkSession, blk_tracer_unusable, per_cpu_buffer_kb
from blkscope.capture.guard import CommandGuard
from blkscope.capture.limits import disk_cap_mib, kernel_buffer_kib, limits_line, not_recorded
from blkscope.capture.samplers import ProcSampler, ToolProcess
from blkscope.capture.tracefs import (
    TracefsJournal,
    ensure_tracefs,
    find_tracefs,
    require_root,
    snapshot,
)
from blkscope.capture.tracepoints import EVENTS_FILE, TracepointSession
from blkscope.capture.writeback import WritebackSession
from blkscope.errors import CaptureError, InputFormatError, OptionError
from blkscope.files.mapper import MapBudget, record_file_map
from blkscope.units import ns_to_s

MANIFEST = "capture.json"
JOURNAL = "tracefs_saved.json"  # present only while tracefs settings are changed
TRACE_NAME = "trace"
POLL_S = 0.1
COMMAND_STOP_TIMEOUT_S = 10.0


@dataclass
class CaptureOptions:
    """What to capture and where; duration and command may each be absent, not both."""

    devices: list[str]
    out: Path
    duration_s: float | None = None
    command: list[str] | None = None
    max_size_mb: int = 1024
    buffer_kb: int = 65536  # 8 MiB lost events of a busy fio run on 2 CPUs; 64 MiB none
    force: bool = False
    method: str = "auto"  # auto | blktrace | ftrace | tracepoints
    files: list[str] = field(default_factory=list)  # --files: map every file under these
    file_map: bool = True  # without --files: map the files owning the sectors the trace touched
    map_budget: MapBudget = field(default_factory=MapBudget)


@dataclass
class _Run:
    opts: CaptureOptions
    journal: TracefsJournal = field(default_factory=TracefsJournal)
    stop_reason: str | None = None
    stop_event: threading.Event = field(default_factory=threading.Event)
    manifest: dict[str, Any] = field(default_factory=dict)
    before: dict[str, str] = field(default_factory=dict)


def check_devices(devices: list[str], blk_trace: bool = True) -> None:
    """Every device must be a whole block device under /sys/block (with a trace folder when
    blktrace or the blk tracer is asked for: the block tracepoints need none)."""
    if not devices:
        raise CaptureError("--device", "no device given", "name one, e.g. --device sda")
    for dev in devices:
        base = Path("/sys/block") / dev
        if "/" in dev or not base.is_dir():
            names = " ".join(sorted(p.name for p in Path("/sys/block").iterdir()))
            raise CaptureError(
                f"/dev/{dev}", "no such block device", f"use a name from /sys/block: {names}"
            )
        if blk_trace and not (base / "trace" / "enable").exists():
            raise CaptureError(
                str(base / "trace"),
                "the kernel has no block tracing for it",
                "the kernel needs CONFIG_BLK_DEV_IO_TRACE",
            )


def prepare_output(out: Path, force: bool) -> None:
    """Create the capture folder; refuse to overwrite a non-empty one unless --force."""
    if out.exists() and not out.is_dir():
        raise CaptureError(str(out), "exists and is not a folder", "choose another -o")
    if out.is_dir() and any(out.iterdir()):
        if not force:
            raise CaptureError(
                str(out),
                "already holds files; refusing to overwrite",
                "pass --force to replace an earlier capture, or pick another -o",
            )
        if not (out / MANIFEST).exists():
            raise CaptureError(
                str(out),
                "is not a capture folder; --force only replaces captures",
                "empty it yourself or pick another -o",
            )
        if (out / JOURNAL).exists():
            raise CaptureError(
                str(out / JOURNAL),
                "a killed capture's tracefs changes are still to be undone",
                f"run `blkscope capture-restore {out}` first",
            )
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    # Marks the folder as ours at once, so --force can replace even an interrupted capture.
    (out / MANIFEST).write_text(json.dumps({"format": "blkscope-capture", "complete": False}))


@contextmanager
def _stop_on_signals(run: _Run, say: Callable[[str], None]) -> Iterator[None]:
    """SIGINT/SIGTERM end the recording cleanly instead of killing the process mid-restore."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        if run.stop_event.is_set():
            say("already stopping: finishing the capture files, please wait")
        run.stop_reason = run.stop_reason or f"signal {signal.Signals(signum).name}"
        run.stop_event.set()

    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _stop_command(proc: subprocess.Popen[bytes] | None) -> int | None:
    if proc is None:
        return None
    # The command runs in its own process group so that its children stop with it.
    if proc.poll() is None:
        _signal_group(proc, signal.SIGTERM)
        try:
            proc.wait(timeout=COMMAND_STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            _signal_group(proc, signal.SIGKILL)
            proc.wait()
    return proc.returncode


def _signal_group(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    # Only called while proc is unreaped, so its pid (the group id) cannot have been reused.
    with suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)


def _record(run: _Run, size: Callable[[], int], proc: subprocess.Popen[bytes] | None) -> None:
    """Wait for the first reason to stop."""
    opts = run.opts
    cap_mib = run.manifest["limits"]["disk_cap_mib"]
    limit = cap_mib * 1024 * 1024
    deadline = time.monotonic() + opts.duration_s if opts.duration_s else None
    while run.stop_reason is None:
        if proc is not None and proc.poll() is not None:
            run.stop_reason = f"command exited with {proc.returncode}"
        elif deadline is not None and time.monotonic() >= deadline:
            run.stop_reason = "duration"
        elif size() >= limit:
            run.stop_reason = f"max-size {cap_mib} MiB reached"
        else:
            run.stop_event.wait(POLL_S)
    run.stop_event.set()


def run_capture(
    opts: CaptureOptions, say: Callable[[str], None] = lambda s: None
) -> dict[str, Any]:
    """Record a capture folder and return its manifest; tracefs is restored on every exit path."""
    if opts.duration_s is None and not opts.command:
        raise CaptureError(
            "blkscope capture",
            "nothing bounds the capture",
            "give --duration SECONDS, a command after --, or both",
        )
    if opts.duration_s is not None and not (math.isfinite(opts.duration_s) and opts.duration_s > 0):
        # nan compares false with everything: the deadline never came and only --max-size stopped
        raise OptionError("--duration", f"must be more than 0 s, got {opts.duration_s!r}")
    require_root()
    check_devices(opts.devices, blk_trace=opts.method in ("blktrace", "ftrace"))
    prepare_output(opts.out, opts.force)
    run = _Run(opts, journal=TracefsJournal(opts.out / JOURNAL))
    atexit.register(run.journal.restore)  # last resort if something bypasses the finally below
    # Signals stay caught until the files are written: a stop request must not lose the capture.
    with _stop_on_signals(run, say):
        try:
            _capture(run, say)
        except OSError as exc:
            raise _os_error(exc, opts.out) from None
        finally:
            problems = run.journal.restore()
            atexit.unregister(run.journal.restore)
            problems += _compare_state(run)
            run.manifest["tracefs_restore_problems"] = problems
            if problems:
                say("warning: tracefs not as before: " + "; ".join(problems))
        try:
            _finish(run, say)
        except OSError as exc:
            raise _os_error(exc, opts.out) from None
    return run.manifest


def restore_from(out: Path) -> list[str]:
    """Put back the tracefs settings a killed capture in `out` had changed; return problems."""
    require_root()
    record = out / JOURNAL
    if not record.exists():
        raise CaptureError(
            str(record),
            "nothing to restore",
            "a capture that ended normally, by error or by a signal restores "
            "tracefs itself and removes this file",
        )
    return TracefsJournal.load(record).restore()


def _os_error(exc: OSError, out: Path) -> CaptureError:
    return CaptureError(
        str(exc.filename or out),
        exc.strerror or str(exc),
        "the capture folder keeps what was recorded so far",
    )


def _compare_state(run: _Run) -> list[str]:
    """Read the settings again and name any that differ from before the capture."""
    root = find_tracefs()
    if not run.before or root is None:
        return []
    after = snapshot(root, run.opts.devices)
    return [
        f"{k} was {v!r}, now {after.get(k)!r}" for k, v in run.before.items() if after.get(k) != v
    ]


def _capture(run: _Run, say: Callable[[str], None]) -> None:
    opts, out, m = run.opts, run.opts.out, run.manifest
    root = ensure_tracefs(run.journal)
    run.before = snapshot(root, opts.devices)
    m.update(
        {
            "format": "blkscope-capture",
            "format_version": 1,
            "host": host.host_info(),
            "devices": [host.device_info(d) for d in opts.devices],
            "vm_sysctls": host.vm_sysctls(),
            "tools": host.tool_versions(),
            "command": opts.command,
            "duration_s": opts.duration_s,
            "max_size_mb": opts.max_size_mb,
            "buffer_kb": opts.buffer_kb,
            "trace_name": TRACE_NAME,
        }
    )
    native = BlktraceProcess(opts.devices, out, TRACE_NAME, opts.buffer_kb)
    # Each part registers how to stop it *before* starting, so a half-started part is undone too.
    stoppers: list[tuple[str, Callable[[], None]]] = []
    proc: subprocess.Popen[bytes] | None = None
    guard: CommandGuard | None = None
    mono, wall = host.clock_pair()
    failed = False
    try:
        why_not = (
            f"not tried (--method {opts.method})"
            if opts.method in ("ftrace", "tracepoints")
            else native.start()
        )
        stoppers.append(("blktrace", native.stop))
        no_blk_tracer = blk_tracer_unusable(root, opts.devices)
        if why_not is None:
            m["block_source"] = "blktrace"
            size: Callable[[], int] = lambda: native.bytes  # noqa: E731
        elif opts.method == "blktrace":
            raise CaptureError(
                "blktrace",
                f"blktrace failed: {why_not}",
                "use --method auto to fall back to the ftrace blk tracer",
            )
        elif opts.method == "tracepoints" or (opts.method == "auto" and no_blk_tracer):
            m["block_source"] = "tracepoints"
            m["blktrace_unavailable_because"] = why_not
            m["blk_tracer_unavailable_because"] = (
                no_blk_tracer or "not tried (--method tracepoints)"
            )
            m["trace_clock"] = "mono"
            m["buffer_kb_per_cpu"] = per_cpu_buffer_kb(opts.buffer_kb, os.cpu_count() or 1)
            points = TracepointSession(root, run.journal, opts.devices, out, m["buffer_kb_per_cpu"])
            stoppers.append(
                ("block tracepoints", lambda: m.update(ring_buffer_stats=points.stop()))
            )
            points.start()
            size = lambda: points.bytes  # noqa: E731
        else:
            if no_blk_tracer:
                raise CaptureError("ftrace blk tracer", no_blk_tracer, "use --method tracepoints")
            m["block_source"] = "ftrace-blk"
            m["blktrace_unavailable_because"] = why_not
            m["buffer_kb_per_cpu"] = per_cpu_buffer_kb(opts.buffer_kb, os.cpu_count() or 1)
            ftrace = FtraceBlkSession(
                root, run.journal, opts.devices, out / "raw.bin", m["buffer_kb_per_cpu"]
            )

            def stop_ftrace() -> None:
                m["ring_buffer_stats"] = ftrace.stop()
                if ftrace.started:
                    copy_cmdlines(root, out / "cmdlines.txt")

            stoppers.append(("block tracer", stop_ftrace))
            ftrace.start()
            size = lambda: ftrace.bytes  # noqa: E731
        say(f"block events: {m['block_source']}" + (f" (blktrace: {why_not})" if why_not else ""))
        m["writeback_source"] = None
        if WritebackSession.available(root):
            wb = WritebackSession(root, run.journal, out)
            stoppers.append(("writeback", lambda: m.update(writeback_events=wb.stop())))
            wb.start()
            m["writeback_source"] = "tracefs-instance"
        limits = m["limits"] = {
            "disk_cap_mib": disk_cap_mib(out, opts.max_size_mb),
            "kernel_buffers_kib": kernel_buffer_kib(
                m["block_source"], opts.buffer_kb, native.sub_kb, os.cpu_count() or 1,
                len(opts.devices), m["writeback_source"] is not None,
            ),
        }  # fmt: skip
        say(limits_line(limits["disk_cap_mib"], opts.max_size_mb, limits["kernel_buffers_kib"]))
        sampler = ProcSampler(out)
        stoppers.append(("sampler", lambda: m.update(proc_samples=sampler.stop())))
        for tool, argv in (("iostat", ["iostat", "-xmt", "1"]), ("vmstat", ["vmstat", "1"])):
            sampler_proc = ToolProcess(out / f"{tool}.txt", argv)
            stoppers.append((tool, sampler_proc.stop))
            m[tool] = sampler_proc.proc is not None
        m["clock"] = {"mono_ns": mono, "wall_ns": wall, "clock": "CLOCK_MONOTONIC"}
        (out / "clock.txt").write_text(f"{mono} {wall}\n")
        m["start_wall"] = _iso(wall)
        m["start_mono_ns"] = mono
        if opts.command:
            try:
                proc = subprocess.Popen(opts.command, start_new_session=True)
            except OSError as exc:
                raise CaptureError(
                    opts.command[0],
                    f"cannot run the command: {exc.strerror}",
                    "give the command's full path after --",
                ) from None
            guard = CommandGuard(proc.pid)  # the group is killed even if we are SIGKILLed
        say(
            "recording"
            + (f" for {opts.duration_s:g} s" if opts.duration_s else "")
            + (f" while {opts.command[0]} runs" if opts.command else "")
            + "; Ctrl-C stops"
        )
        _record(run, size, proc)
    except BaseException:
        failed = True
        raise
    finally:
        m["stop_reason"] = run.stop_reason or "error"
        m["command_exit_code"] = _stop_command(proc)
        if guard is not None:
            guard.release()
        stop_mono, stop_wall = host.clock_pair()
        m["stop_wall"], m["stop_mono_ns"] = _iso(stop_wall), stop_mono
        _stop_all(stoppers, failed, say)
        # Events keep coming until each part is stopped, so the end is taken after that.
        end_mono, end_wall = host.clock_pair()
        m["end_wall"], m["end_mono_ns"] = _iso(end_wall), end_mono
        m["device_changes"] = _device_changes(m.get("devices", []))


def _device_changes(at_start: list[dict[str, Any]]) -> list[str]:
    """Scheduler or queue settings that changed while recording (someone switched to bfq...)."""
    changes = []
    for before in at_start:
        after = host.device_info(before["name"])
        for key in ("scheduler", "scheduler_tunables", "queue"):
            if after[key] != before[key]:
                changes.append(f"{before['name']} {key}: {before[key]} -> {after[key]}")
    return changes


def _stop_all(
    stoppers: list[tuple[str, Callable[[], None]]], failed: bool, say: Callable[[str], None]
) -> None:
    """Stop every part (newest first) even if some fail; never hide the error that got us here."""
    errors: list[BaseException] = []
    for name, stop in reversed(stoppers):
        try:
            stop()
        except Exception as exc:
            errors.append(exc)
            say(f"warning: stopping the {name} failed: {exc}")
    if errors and not failed:
        raise errors[0]


def _iso(wall_ns: int) -> str:
    return dt.datetime.fromtimestamp(ns_to_s(wall_ns), dt.timezone.utc).isoformat()


def _finish(run: _Run, say: Callable[[str], None]) -> None:
    """After tracefs is restored: write the blktrace files, blkparse.txt and capture.json."""
    out, m = run.opts.out, run.manifest
    if m.get("block_source") == "ftrace-blk":
        comms = read_cmdlines(out / "cmdlines.txt")
        try:
            res = convert(
                out / "raw.bin",
                out,
                TRACE_NAME,
                comms,
                (m["clock"]["mono_ns"], m["clock"]["wall_ns"]),
                lookup=proc_comm,
            )
        except InputFormatError as exc:
            # Keep raw.bin and say what happened, so nothing recorded is lost.
            m["convert_error"] = str(exc)
            (out / MANIFEST).write_text(json.dumps(m, indent=2) + "\n")
            raise
        m["lost_events"] = sum(res.lost.values())
        m["lost_events_by_cpu"] = {str(cpu): n for cpu, n in sorted(res.lost.items())}
        m["pids_without_name"] = sorted(res.pids - res.comms.keys())
        m["block_events"] = res.events
        m["first_event_mono_ns"], m["last_event_mono_ns"] = res.first_ns, res.last_ns
        stats = m.get("ring_buffer_stats", {})
        m["dropped_events"] = sum(s.get("dropped_events", 0) for s in stats.values())
        m["overrun_events"] = sum(s.get("overrun", 0) for s in stats.values())
        (out / "raw.bin").unlink()
    elif m.get("block_source") == "blktrace":
        m["dropped_events"] = BlktraceProcess.dropped_in(out)
    elif m.get("block_source") == "tracepoints":
        m["block_events_file"] = EVENTS_FILE
        stats = m.get("ring_buffer_stats", {})
        m["overrun_events"] = sum(s.get("overrun", 0) for s in stats.values())
        m["dropped_events"] = sum(s.get("dropped_events", 0) for s in stats.values())
    m["blktrace_files"] = sorted(p.name for p in out.glob(f"{TRACE_NAME}.blktrace.*"))
    m["blkparse"] = _blkparse(out, m["blktrace_files"])
    if run.opts.file_map or run.opts.files:
        _file_map(run, say)
    m["not_recorded"] = not_recorded(m)
    m["complete"] = True
    m["files"] = sorted(p.name for p in out.iterdir())  # capture.json exists since the start
    (out / MANIFEST).write_text(json.dumps(m, indent=2) + "\n")
    if m.get("dropped_events") or m.get("overrun_events") or m.get("lost_events"):
        say(
            f"warning: the kernel lost {m.get('lost_events', 0)} events (ring buffer full: "
            f"{m.get('overrun_events', 0)} overwritten, {m.get('dropped_events')} dropped); "
            "use a larger --buffer-kb"
        )


def _file_map(run: _Run, say: Callable[[str], None]) -> None:
    """Map files to sectors after recording (the files' extents as the trace left them)."""
    out, m, opts = run.opts.out, run.manifest, run.opts
    traced = {
        (int(d["dev"].split(":")[0]), int(d["dev"].split(":")[1])): d["name"]
        for d in m.get("devices", [])
        if d.get("dev")
    }
    say("mapping files to sectors" + (f" under {len(opts.files)} path(s)" if opts.files else ""))
    blkparse = out / m["blkparse"] if m.get("blkparse") else None
    report = record_file_map(out, opts.files, traced, opts.map_budget, blkparse)
    m["file_map"] = report
    left = "; ".join(report["left_out"]) or "nothing"
    say(
        f"file map: {report['files_mapped']} files, {report['extents']} extents in "
        f"{report['seconds']:.1f} s; left out: {left}"
        + "".join(f"; {n} {why}" for why, n in report["skipped"].items())
    )


def _blkparse(out: Path, files: list[str]) -> str | None:
    """Run blkparse over the per-CPU files into blkparse.txt when blkparse is installed."""
    exe = shutil.which("blkparse")
    if exe is None or not files:
        return None
    with open(out / "blkparse.log", "w") as log:
        done = subprocess.run(
            [exe, "-i", TRACE_NAME, "-o", "blkparse.txt"],
            cwd=out,
            stdout=log,
            stderr=subprocess.STDOUT,
            check=False,
        )
    if done.returncode != 0:
        raise CaptureError(
            str(out / "blkparse.log"),
            f"blkparse failed ({done.returncode})",
            "the blktrace files are kept; run blkparse by hand to see why",
        )
    return "blkparse.txt"
