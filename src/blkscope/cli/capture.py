"""`blkscope capture` and `capture-restore`: record on a production box (root)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from blkscope.cli._app import EXIT_FAILED, fail, say
from blkscope.cli._app import duration as duration_option
from blkscope.errors import OptionError
from blkscope.units import ns_to_s


def capture(
    device: Annotated[
        list[str],
        typer.Option(
            "--device",
            "-d",
            metavar="NAME",
            help="Block device name as in /sys/block, e.g. vda (repeatable).",
        ),
    ],
    output: Annotated[
        Path,
        typer.Option("-o", "--output", metavar="FOLDER", help="Capture folder to create."),
    ],
    command: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="COMMAND", help="Optional command (after --) to record while it runs."
        ),
    ] = None,
    duration: Annotated[
        str | None,
        typer.Option(
            "--duration",
            metavar="DURATION",
            help="How long to record, e.g. 30s or 1.5 (bare: seconds); an upper bound when a "
            "command is given.",
        ),
    ] = None,
    max_size: Annotated[
        int,
        typer.Option(
            "--max-size",
            min=1,
            metavar="MIB",
            help="Stop once the block trace reaches this many MiB.",
        ),
    ] = 1024,
    buffer_kb: Annotated[
        int,
        typer.Option(
            "--buffer-kb",
            min=256,
            max=262144,
            metavar="KIB",
            help="Kernel trace buffer per CPU, KiB.",
        ),
    ] = 65536,
    method: Annotated[
        str,
        typer.Option(
            "--method",
            metavar="METHOD",
            help="auto (blktrace, else the ftrace blk tracer, else the block tracepoints), blktrace, ftrace, tracepoints.",
        ),
    ] = "auto",
    force: Annotated[
        bool, typer.Option("--force", help="Replace an existing capture folder.")
    ] = False,
    files: Annotated[
        list[str] | None,
        typer.Option(
            "--files",
            metavar="PATH",
            help="Map every file under this path to its sectors after recording (FIEMAP; "
            "repeatable). Without it, the files owning the sectors the trace touched are mapped.",
        ),
    ] = None,
    file_map: Annotated[
        bool, typer.Option("--file-map/--no-file-map", help="Record a file map at all.")
    ] = True,
    map_max_files: Annotated[
        int,
        typer.Option("--map-max-files", min=1, metavar="INT", help="Map at most this many files."),
    ] = 100_000,
    map_max_seconds: Annotated[
        float,
        typer.Option(
            "--map-max-seconds", min=0.1, metavar="SECONDS", help="Stop mapping after this long."
        ),
    ] = 60.0,
) -> None:
    """Record block and writeback events, iostat and dirty pages into a capture folder (root)."""
    from blkscope.capture.runner import CaptureOptions, run_capture
    from blkscope.files.mapper import MapBudget

    if method not in ("auto", "blktrace", "ftrace", "tracepoints"):
        raise fail(
            OptionError(
                "--method", f"must be auto, blktrace, ftrace or tracepoints, got {method!r}"
            )
        )
    duration_s = ns_to_s(duration_option(duration, "--duration")) if duration is not None else None
    opts = CaptureOptions(
        devices=list(dict.fromkeys(device)),
        out=output,
        duration_s=duration_s,
        command=command or None,
        max_size_mb=max_size,
        buffer_kb=buffer_kb,
        force=force,
        method=method,
        files=list(files or []),
        file_map=file_map,
        map_budget=MapBudget(max_files=map_max_files, max_seconds=map_max_seconds),
    )
    try:
        manifest = run_capture(opts, say=lambda s: say(s, err=True))
    except KeyboardInterrupt:
        # Recording already ended cleanly; this second Ctrl-C came while writing the files.
        say(f"interrupted while writing {output}; tracefs settings were restored", err=True)
        raise typer.Exit(130) from None
    say(
        f"wrote {output}: {manifest.get('block_events', 'ftrace text of the')} block events via "
        f"{manifest['block_source']}, stopped by {manifest['stop_reason']}, "
        f"{manifest.get('lost_events', 0)} lost"
    )
    for what in manifest.get("not_recorded", []):
        say(f"not recorded: {what}", err=True)
    code = manifest.get("command_exit_code")
    if code and manifest["stop_reason"].startswith("command exited"):  # not when we stopped it
        say(f"the command exited with {code}; the capture is complete", err=True)
        raise typer.Exit(EXIT_FAILED)


def capture_restore(
    folder: Annotated[
        Path,
        typer.Argument(metavar="FOLDER", help="Folder of a capture that was killed (SIGKILL)."),
    ],
) -> None:
    """Put back the tracefs settings a killed `blkscope capture` had changed (root)."""
    from blkscope.capture.runner import restore_from

    problems = restore_from(folder)
    for problem in problems:
        say(f"warning: {problem}", err=True)
    if problems:
        raise typer.Exit(EXIT_FAILED)
    say("tracefs settings restored")
