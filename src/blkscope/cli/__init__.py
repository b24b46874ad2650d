"""The blkscope command line: one thin function per command, grouped in modules by stage."""

from __future__ import annotations

import gc
import os
import signal
import sys
from dataclasses import replace

import typer

# Before anything imports numpy: OpenBLAS would start a thread per core at load, for
# nothing. blkscope makes no floating-point BLAS call (its one matrix product is of integers,
# which numpy computes itself; matplotlib's are 3x3 transforms, one thread at any setting),
# so no result depends on it. A user's own setting is kept.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from blkscope.cli import analysis, capture, files, fleet, ingest, report
from blkscope.cli._app import app, command_group, watch_sigint
from blkscope.cli.declare import Command, QueryCommand, command_name, register

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


def app_for(args: list[str]) -> typer.Typer:
    """The app that runs the command line args. typer reads the signature of every command of
    a group at each start, so: a group holding only the command they name; for the group's
    help, one whose commands are listed by name and first line only; else `app`, whole (the
    group's options, shell completion, a mistyped name and its suggestions)."""
    named = {command_name(c): c for c in COMMANDS}
    in_fleet = {command_name(c): c for c in FLEET_COMMANDS}
    group = command_group()
    sub = fleet.fleet_group()
    if args[:1] and args[0] in named:
        register(group, [named[args[0]]])
        return group
    if args[:1] == ["fleet"] and args[1:2] and args[1] in in_fleet:
        register(sub, [in_fleet[args[1]]])
    elif args in ([], ["--help"]):
        register(group, [listed(c) for c in COMMANDS])
        register(sub, [listed(c) for c in FLEET_COMMANDS])
    else:
        return app
    group.add_typer(sub)
    return group


def listed(command: Command) -> Command:
    """command as a group's help lists it (its name and its doc's first paragraph), without the
    parameters typer would read to build it."""

    def run() -> None:
        raise AssertionError("a listed command only shows in help")  # never run: only listed

    run.__name__, run.__doc__ = command.run.__name__, command.run.__doc__
    return replace(command, run=run)


def main() -> None:
    """Console-script entry point."""
    watch_sigint()
    try:
        app_for(sys.argv[1:])(prog_name="blkscope")
    finally:
        # The command is done: a Ctrl-C now would only turn its exit code into a traceback.
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def run() -> None:
    """The `blkscope` program (main() raises SystemExit, as click does)."""
    try:
        main()
    finally:
        # What is alive now dies with the process: frozen, Python's exit does not walk it all
        # (every object Arrow and DuckDB made) looking for cycles to collect.
        gc.freeze()
