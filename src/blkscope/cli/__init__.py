"""The blkscope command line: one thin function per command, grouped in modules by stage."""

from __future__ import annotations

import gc
import signal

from blkscope.cli import analysis, capture, files, fleet, ingest, report  # noqa: F401 - they register commands
from blkscope.cli._app import app, watch_sigint

# Help lists the commands in the order of the pipeline, not of the imports.
_ORDER = ["ingest", "analyze", "sql", "crosscheck", "spikes", "periods", "compare", "partitions", "files",
          "report",
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
    """The `blkscope` program (main() raises SystemExit, as click does)."""
    try:
        main()
    finally:
        # What is alive now dies with the process: frozen, Python's exit does not walk it all
        # (every object numba, Arrow and DuckDB made) looking for cycles to collect.
        gc.freeze()
