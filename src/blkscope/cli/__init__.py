"""The blkscope command line: one thin function per command, grouped in modules by stage."""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import signal
import sys

from blkscope.cli import analysis, capture, files, fleet, ingest, report  # noqa: F401 - they register commands
from blkscope.cli._app import app, watch_sigint

# Help lists the commands in the order of the pipeline, not of the imports.
_ORDER = ["ingest", "analyze", "sql", "crosscheck", "spikes", "periods", "compare", "partitions", "files",
          "report", "export",
          "check", "schema", "capture", "capture-restore"]  # fmt: skip
app.registered_commands.sort(
    key=lambda c: _ORDER.index(c.name or (c.callback.__name__ if c.callback else ""))
)


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
    (freeing numba's compiled code, DuckDB and Arrow's memory, module by module) took ~0.5 s of
    a 6 s `blkscope analyze` of the 1x fio capture. Every file a command writes is in place when
    it returns (temp path, then rename), so the process runs the atexit handlers, flushes its
    output and ends. main() itself raises SystemExit as click does (the tests call it).

    Python's collector runs less often: its default thresholds (700, 10, 10) made it walk every
    object numba, Arrow and DuckDB create while they are imported several times over (~0.1 s
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
