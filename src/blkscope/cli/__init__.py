"""The blkscope command line: one thin function per command, grouped in modules by stage."""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import signal
import sys

from blkscope.cli import analysis, capture, files, fleet, ingest, report
from blkscope.cli._app import app, watch_sigint
from blkscope.cli.declare import Command, QueryCommand, register

# Every command, in the order of the pipeline (help lists them so), with the example its help
# shows. A new command is a function in one of the modules, and a line here.
COMMANDS = [
    Command(ingest.ingest, "blkscope ingest capture/ -o capture.dataset"),
    Command(analysis.analyze, "blkscope analyze capture.dataset --interval 500ms"),
    Command(analysis.sql, 'blkscope sql capture.dataset "SELECT comm, count(*) FROM bios GROUP BY ALL" --csv',
            cls=QueryCommand),
    Command(analysis.crosscheck, "blkscope crosscheck capture.dataset"),
    Command(analysis.spikes, "blkscope spikes capture.dataset --window 100ms --csv"),
    Command(analysis.periods, "blkscope periods capture.dataset --json"),
    Command(analysis.compare, "blkscope compare before.dataset after.dataset"),
    Command(analysis.partitions, "blkscope partitions capture.dataset partitions.txt"),
    Command(files.files, "blkscope files capture.dataset --during spikes"),
    Command(report.report, "blkscope report capture/ -o capture.html"),
    Command(report.export, "blkscope export capture.dataset --perfetto capture.pftrace"),
    Command(report.check, "blkscope check capture.dataset --max q2c.p99=50ms --max spikes=10"),
    Command(report.schema, "blkscope schema spikes"),
    Command(capture.capture, "blkscope capture -d vda --duration 30s -o capture/",
            context_settings={"allow_interspersed_args": False}),
    Command(capture.capture_restore, "blkscope capture-restore capture/", name="capture-restore"),
]  # fmt: skip
FLEET_COMMANDS = [
    Command(fleet.add, "blkscope fleet add fleet/ cap1/ cap2/ --host db1 --label kernel=6.9"),
    Command(fleet.sql, 'blkscope fleet sql fleet/ "SELECT host, count(*) FROM bios GROUP BY ALL"',
            cls=QueryCommand),
    Command(fleet.report, "blkscope fleet report fleet/ -o fleet.html"),
    Command(fleet.check, "blkscope fleet check fleet/ --max d2c.p99=5ms"),
]  # fmt: skip
register(app, COMMANDS)
register(fleet.fleet_app, FLEET_COMMANDS)
app.add_typer(fleet.fleet_app)


def main() -> None:
    """Console-script entry point."""
    watch_sigint()
    try:
        app(prog_name="blkscope")
    finally:
        # The command is done: a Ctrl-C now would only turn its exit code into a traceback.
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def run() -> None:
    """The `blkscope` program: main(), then a quick exit. Python's own shutdown after a command
    (freeing DuckDB's and Arrow's memory, module by module) took ~0.5 s of
    a 6 s `blkscope analyze` of the 1x fio capture. Every file a command writes is in place when
    it returns (temp path, then rename), so the process runs the atexit handlers, flushes its
    output and ends. main() itself raises SystemExit as click does (the tests call it).

    Python's collector runs less often: its default thresholds (700, 10, 10) made it walk every
    object Arrow and DuckDB create while they are imported several times over (~0.1 s
    of each analysis: alternated 6 times, 1x fio 2.99 -> 2.88 s, a 3.6 k-event fixture 1.14 ->
    1.07 s). Young garbage is still collected; an analysis leaves the same ~1.4 k garbage
    objects whether the trace is 1x or 10x."""
    gc.set_threshold(10_000, 50, 50)
    try:
        main()
        code = 0
    except SystemExit as done:
        if not isinstance(done.code, int | None):  # a message: Python prints it on its way out
            raise
        code = done.code or 0
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing more to say
            stream.flush()
    os._exit(code)
