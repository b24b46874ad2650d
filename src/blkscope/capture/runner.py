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
from blkscope.capture.blktrace_native import BlktraceProcess
from blkscope.capture.block_source import BlockSource, choose_block_source
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
class _Recording:
    """What a capture learned, for its capture.json (written in one place, _manifest)."""

    setup: dict[str, Any] = field(default_factory=dict)  # the host, devices and options
    source: BlockSource | None = None
    writeback: bool | None = None  # None: not asked yet; False: this tracefs cannot
    writeback_events: int | None = None
    limits: dict[str, Any] = field(default_factory=dict)
    proc_samples: int | None = None
    tools: dict[str, bool] = field(default_factory=dict)  # iostat, vmstat: did they run
    start: tuple[int, int] | None = None  # (CLOCK_MONOTONIC, wall) ns when recording began
    stop: tuple[int, int] | None = None  # when it was asked to stop
    end: tuple[int, int] | None = None  # when every part had stopped
    stop_reason: str | None = None
    command_exit_code: int | None = None
    device_changes: list[str] = field(default_factory=list)
    tracefs_restore_problems: list[str] = field(default_factory=list)
    finished: dict[str, Any] = field(default_factory=dict)  # the source's files, made final
    blktrace_files: list[str] = field(default_factory=list)
    blkparse: str | None = None  # blkparse.txt, when blkparse ran
    file_map: dict[str, Any] | None = None
    complete: bool = False


@dataclass
class _Run:
    opts: CaptureOptions
    journal: TracefsJournal = field(default_factory=TracefsJournal)
    stop_reason: str | None = None
    stop_event: threading.Event = field(default_factory=threading.Event)
    recording: _Recording = field(default_factory=_Recording)
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
    cap_mib = run.recording.limits["disk_cap_mib"]
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
            run.recording.tracefs_restore_problems = problems
            if problems:
                say("warning: tracefs not as before: " + "; ".join(problems))
        try:
            return _finish(run, say)
        except OSError as exc:
            raise _os_error(exc, opts.out) from None


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
    """Start every part, record until the first reason to stop, stop every part."""
    opts, rec = run.opts, run.recording
    root = ensure_tracefs(run.journal)
    run.before = snapshot(root, opts.devices)
    rec.setup = {
        "host": host.host_info(),
        "devices": [host.device_info(d) for d in opts.devices],
        "vm_sysctls": host.vm_sysctls(),
        "tools": host.tool_versions(),
    }
    # Each part registers how to stop it *before* starting, so a half-started part is undone too.
    stoppers: list[tuple[str, Callable[[], None]]] = []
    proc: subprocess.Popen[bytes] | None = None
    guard: CommandGuard | None = None
    rec.start = mono, wall = host.clock_pair()
    failed = False
    try:
        source = _start_parts(run, root, stoppers, say)
        (opts.out / "clock.txt").write_text(f"{mono} {wall}\n")
        proc = _start_command(opts.command)
        guard = CommandGuard(proc.pid) if proc else None  # killed even if we are SIGKILLed
        say(
            "recording"
            + (f" for {opts.duration_s:g} s" if opts.duration_s else "")
            + (f" while {opts.command[0]} runs" if opts.command else "")
            + "; Ctrl-C stops"
        )
        _record(run, lambda: source.bytes, proc)
    except BaseException:
        failed = True
        raise
    finally:
        rec.stop_reason = run.stop_reason or "error"
        rec.command_exit_code = _stop_command(proc)
        if guard is not None:
            guard.release()
        rec.stop = host.clock_pair()
        _stop_all(stoppers, failed, say)
        # Events keep coming until each part is stopped, so the end is taken after that.
        rec.end = host.clock_pair()
        rec.device_changes = _device_changes(rec.setup["devices"])


def _start_parts(
    run: _Run, root: Path, stoppers: list[tuple[str, Callable[[], None]]],
    say: Callable[[str], None],
) -> BlockSource:  # fmt: skip
    """Start the block source, the writeback recorder and the samplers, each after its stopper;
    the block source."""
    opts, out, rec = run.opts, run.opts.out, run.recording
    native = BlktraceProcess(opts.devices, out, TRACE_NAME, opts.buffer_kb)
    source = choose_block_source(
        opts.method, native, root, run.journal, opts.devices, out, opts.buffer_kb, TRACE_NAME
    )
    rec.source = source
    stoppers.append((source.label, source.stop))
    source.start()
    why_not = source.blktrace_unavailable
    say(f"block events: {source.name}" + (f" (blktrace: {why_not})" if why_not else ""))
    rec.writeback = WritebackSession.available(root)
    if rec.writeback:
        wb = WritebackSession(root, run.journal, out)
        stoppers.append(("writeback", lambda: setattr(rec, "writeback_events", wb.stop())))
        wb.start()
    cap_mib = disk_cap_mib(out, opts.max_size_mb)
    buffers_kib = kernel_buffer_kib(
        source.name, opts.buffer_kb, native.sub_kb, os.cpu_count() or 1, len(opts.devices),
        rec.writeback,
    )  # fmt: skip
    rec.limits = {"disk_cap_mib": cap_mib, "kernel_buffers_kib": buffers_kib}
    say(limits_line(cap_mib, opts.max_size_mb, buffers_kib))
    sampler = ProcSampler(out)
    stoppers.append(("sampler", lambda: setattr(rec, "proc_samples", sampler.stop())))
    for tool, argv in (("iostat", ["iostat", "-xmt", "1"]), ("vmstat", ["vmstat", "1"])):
        sampler_proc = ToolProcess(out / f"{tool}.txt", argv)
        stoppers.append((tool, sampler_proc.stop))
        rec.tools[tool] = sampler_proc.proc is not None
    return source


def _start_command(command: list[str] | None) -> subprocess.Popen[bytes] | None:
    """The command to trace, in a process group of its own (its children stop with it)."""
    if not command:
        return None
    try:
        return subprocess.Popen(command, start_new_session=True)
    except OSError as exc:
        raise CaptureError(
            command[0],
            f"cannot run the command: {exc.strerror}",
            "give the command's full path after --",
        ) from None


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


def _finish(run: _Run, say: Callable[[str], None]) -> dict[str, Any]:
    """After tracefs is restored: write the blktrace files, blkparse.txt and capture.json;
    return what capture.json says."""
    out, rec = run.opts.out, run.recording
    assert rec.source is not None and rec.start is not None  # set before recording began
    try:
        rec.finished = rec.source.finish(out, rec.start)
    except InputFormatError as exc:
        # Keep raw.bin and say what happened, so nothing recorded is lost.
        rec.finished = {"convert_error": str(exc)}
        _write_manifest(run)
        raise
    rec.blktrace_files = sorted(p.name for p in out.glob(f"{TRACE_NAME}.blktrace.*"))
    rec.blkparse = _blkparse(out, rec.blktrace_files)
    if run.opts.file_map or run.opts.files:
        _file_map(run, say)
    rec.complete = True
    m = _write_manifest(run)
    if m.get("dropped_events") or m.get("overrun_events") or m.get("lost_events"):
        say(
            f"warning: the kernel lost {m.get('lost_events', 0)} events (ring buffer full: "
            f"{m.get('overrun_events', 0)} overwritten, {m.get('dropped_events')} dropped); "
            "use a larger --buffer-kb"
        )
    return m


def _write_manifest(run: _Run) -> dict[str, Any]:
    m = _manifest(run)
    (run.opts.out / MANIFEST).write_text(json.dumps(m, indent=2) + "\n")
    return m


def _manifest(run: _Run) -> dict[str, Any]:
    """capture.json: what the capture was asked to do, what it recorded and how it ended."""
    opts, rec, out = run.opts, run.recording, run.opts.out
    m: dict[str, Any] = {"format": "blkscope-capture", "format_version": 1, **rec.setup}
    m |= {
        "command": opts.command,
        "duration_s": opts.duration_s,
        "max_size_mb": opts.max_size_mb,
        "buffer_kb": opts.buffer_kb,
        "trace_name": TRACE_NAME,
    }
    if rec.source is not None:
        m |= rec.source.facts()
    if rec.writeback is not None:
        m["writeback_source"] = "tracefs-instance" if rec.writeback else None
    if rec.writeback_events is not None:
        m["writeback_events"] = rec.writeback_events
    if rec.limits:
        m["limits"] = rec.limits
    if rec.proc_samples is not None:
        m["proc_samples"] = rec.proc_samples
    m |= rec.tools
    if rec.start is not None:
        mono, wall = rec.start
        m["clock"] = {"mono_ns": mono, "wall_ns": wall, "clock": "CLOCK_MONOTONIC"}
        m["start_wall"], m["start_mono_ns"] = _iso(wall), mono
    m |= {"stop_reason": rec.stop_reason, "command_exit_code": rec.command_exit_code}
    for name, pair in (("stop", rec.stop), ("end", rec.end)):
        if pair is not None:
            m[f"{name}_wall"], m[f"{name}_mono_ns"] = _iso(pair[1]), pair[0]
    m["device_changes"] = rec.device_changes
    m["tracefs_restore_problems"] = rec.tracefs_restore_problems
    m |= rec.finished
    m["blktrace_files"] = rec.blktrace_files
    m["blkparse"] = rec.blkparse
    if rec.file_map is not None:
        m["file_map"] = rec.file_map
    m["not_recorded"] = not_recorded(m)
    m["complete"] = rec.complete
    m["files"] = sorted(p.name for p in out.iterdir())  # capture.json exists since the start
    return m


def _file_map(run: _Run, say: Callable[[str], None]) -> None:
    """Map files to sectors after recording (the files' extents as the trace left them)."""
    out, rec, opts = run.opts.out, run.recording, run.opts
    traced = {
        (int(d["dev"].split(":")[0]), int(d["dev"].split(":")[1])): d["name"]
        for d in rec.setup.get("devices", [])
        if d.get("dev")
    }
    say("mapping files to sectors" + (f" under {len(opts.files)} path(s)" if opts.files else ""))
    blkparse = out / rec.blkparse if rec.blkparse else None
    report = record_file_map(out, opts.files, traced, opts.map_budget, blkparse)
    rec.file_map = report
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
